package admission

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestNamespaceLifecycle(t *testing.T) {
	namespaces := fakeNamespaces{
		"default":     corev1.NamespaceActive,
		"kube-system": corev1.NamespaceActive,
		"x":           corev1.NamespaceTerminating,
	}
	nodesResource := schema.GroupVersionResource{Version: "v1", Resource: "nodes"}
	tests := []struct {
		name     string
		attrs    *Attributes
		wantCode int32
		wantMsg  string
	}{
		{
			name:  "create in an active namespace",
			attrs: &Attributes{Operation: Create, Resource: podsResource, Kind: podKind, Namespace: "default", Object: seedPod()},
		},
		{
			name:     "create in a missing namespace",
			attrs:    &Attributes{Operation: Create, Resource: podsResource, Kind: podKind, Namespace: "nope", Object: seedPod()},
			wantCode: 404,
			wantMsg:  `namespaces "nope" not found`,
		},
		{
			name:     "update in a missing namespace",
			attrs:    &Attributes{Operation: Update, Resource: podsResource, Kind: podKind, Namespace: "nope", Object: seedPod(), OldObject: seedPod()},
			wantCode: 404,
			wantMsg:  `namespaces "nope" not found`,
		},
		{
			name:     "create in a terminating namespace",
			attrs:    &Attributes{Operation: Create, Resource: podsResource, Kind: podKind, Namespace: "x", Object: seedPod()},
			wantCode: 403,
			wantMsg:  `pods "mypod" is forbidden: unable to create new content in namespace x because it is being terminated`,
		},
		{
			name: "create with generateName in a terminating namespace",
			attrs: &Attributes{Operation: Create, Resource: podsResource, Kind: podKind, Namespace: "x",
				Object: &corev1.Pod{ObjectMeta: metav1.ObjectMeta{GenerateName: "web-"}}},
			wantCode: 403,
			wantMsg:  `pods "web-" is forbidden: unable to create new content in namespace x because it is being terminated`,
		},
		{
			name:  "update in a terminating namespace",
			attrs: &Attributes{Operation: Update, Resource: podsResource, Kind: podKind, Namespace: "x", Object: seedPod(), OldObject: seedPod()},
		},
		{
			name:  "delete in a missing namespace",
			attrs: &Attributes{Operation: Delete, Resource: podsResource, Kind: podKind, Namespace: "nope", Name: "mypod"},
		},
		{
			name:  "cluster-scoped object",
			attrs: &Attributes{Operation: Create, Resource: nodesResource, Kind: schema.GroupVersionKind{Version: "v1", Kind: "Node"}, Object: &corev1.Node{}},
		},
		{
			name:     "delete default",
			attrs:    &Attributes{Operation: Delete, Resource: namespacesResource, Kind: namespaceKind, Name: "default"},
			wantCode: 403,
			wantMsg:  `namespaces "default" is forbidden: this namespace may not be deleted`,
		},
		{
			name:     "delete kube-system",
			attrs:    &Attributes{Operation: Delete, Resource: namespacesResource, Kind: namespaceKind, Name: "kube-system"},
			wantCode: 403,
			wantMsg:  `namespaces "kube-system" is forbidden: this namespace may not be deleted`,
		},
		{
			name:     "delete glassplane-system",
			attrs:    &Attributes{Operation: Delete, Resource: namespacesResource, Kind: namespaceKind, Name: "glassplane-system"},
			wantCode: 403,
			wantMsg:  `namespaces "glassplane-system" is forbidden: this namespace may not be deleted`,
		},
		{
			name:     "delete kube-public",
			attrs:    &Attributes{Operation: Delete, Resource: namespacesResource, Kind: namespaceKind, Name: "kube-public"},
			wantCode: 403,
			wantMsg:  `namespaces "kube-public" is forbidden: this namespace may not be deleted`,
		},
		{
			name:  "delete kube-node-lease is allowed",
			attrs: &Attributes{Operation: Delete, Resource: namespacesResource, Kind: namespaceKind, Name: "kube-node-lease"},
		},
		{
			name:  "delete an ordinary namespace",
			attrs: &Attributes{Operation: Delete, Resource: namespacesResource, Kind: namespaceKind, Name: "x"},
		},
		{
			name:  "create a namespace",
			attrs: &Attributes{Operation: Create, Resource: namespacesResource, Kind: namespaceKind, Name: "new", Object: &corev1.Namespace{}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			steps, err := NewChain(NewNamespaceLifecycle(namespaces)).Run(context.Background(), tt.attrs)
			if tt.wantCode == 0 {
				if err != nil {
					t.Fatalf("want admitted, got %v", err)
				}
				return
			}
			if err == nil {
				t.Fatal("want refused, got admitted")
			}
			if apiCode(err) != tt.wantCode {
				t.Errorf("code = %d (%s), want %d", apiCode(err), apierrors.ReasonForError(err), tt.wantCode)
			}
			if err.Error() != tt.wantMsg {
				t.Errorf("message = %q, want %q", err.Error(), tt.wantMsg)
			}
			if len(steps) != 1 || steps[0].Error != tt.wantMsg || steps[0].Plugin != NamespaceLifecyclePluginName {
				t.Errorf("steps = %+v", steps)
			}
		})
	}
}

func TestNamespaceLifecycleTerminatingCause(t *testing.T) {
	a := &Attributes{Operation: Create, Resource: podsResource, Kind: podKind, Namespace: "x", Object: seedPod()}
	err := NewNamespaceLifecycle(fakeNamespaces{"x": corev1.NamespaceTerminating}).Validate(context.Background(), a)
	serr, ok := err.(*apierrors.StatusError)
	if !ok {
		t.Fatalf("err = %T %v", err, err)
	}
	causes := serr.ErrStatus.Details.Causes
	if len(causes) != 1 || causes[0].Type != corev1.NamespaceTerminatingCause || causes[0].Field != "metadata.namespace" ||
		causes[0].Message != "namespace x is being terminated" {
		t.Fatalf("causes = %+v", causes)
	}
}

func apiCode(err error) int32 {
	if s, ok := err.(apierrors.APIStatus); ok {
		return s.Status().Code
	}
	return 0
}
