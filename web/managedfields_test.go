package web

import (
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestFieldOwners(t *testing.T) {
	entries := []metav1.ManagedFieldsEntry{
		{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationApply, APIVersion: "apps/v1", FieldsType: "FieldsV1",
			FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:spec":{"f:replicas":{},"f:template":{"f:spec":{"f:containers":{"k:{\"name\":\"web\"}":{".":{},"f:image":{},"f:name":{}}}}}}}`)}},
		{Manager: "kube-controller-manager", Operation: metav1.ManagedFieldsOperationUpdate, Subresource: "status", APIVersion: "apps/v1",
			FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:status":{"f:observedGeneration":{}}}`)}},
	}
	got := fieldOwners(entries)
	if len(got) != 2 || got[0].Manager != "kubectl" || got[0].Operation != "Apply" || got[1].Subresource != "status" {
		t.Fatalf("owners: %+v", got)
	}
	for _, want := range []string{".spec.replicas", `.spec.template.spec.containers[name="web"].image`} {
		if !slices.Contains(got[0].Fields, want) {
			t.Errorf("kubectl's fields %q lack %q", got[0].Fields, want)
		}
	}
	if slices.Contains(got[0].Fields, ".spec") {
		t.Errorf("kubectl's fields list the parent .spec: %q", got[0].Fields)
	}
	if !slices.Equal(got[1].Fields, []string{".status.observedGeneration"}) {
		t.Errorf("status fields: %q", got[1].Fields)
	}
}
