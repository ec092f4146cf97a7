package apiserver_test

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// TestPriorityClassValidation: upstream's rules: the value and the
// preemption policy never change (the description may), "system-" names
// are reserved, a user value is at most a billion; the preemption policy
// defaults to PreemptLowerPriority.
func TestPriorityClassValidation(t *testing.T) {
	ctx := ctxT(t)
	pcs := shared.client.SchedulingV1().PriorityClasses()
	pc, err := pcs.Create(ctx, &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{GenerateName: "batch-"}, Value: 1000}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pcs.Delete(ctx, pc.Name, metav1.DeleteOptions{}) })
	if pc.PreemptionPolicy == nil || *pc.PreemptionPolicy != corev1.PreemptLowerPriority {
		t.Errorf("preemptionPolicy %v, want PreemptLowerPriority", pc.PreemptionPolicy)
	}
	if _, err := pcs.Patch(ctx, pc.Name, types.MergePatchType, []byte(`{"description":"nightly jobs"}`), metav1.PatchOptions{}); err != nil {
		t.Errorf("changing the description: %v", err)
	}
	for patch, want := range map[string]string{
		`{"value":10000}`:              "value: Forbidden: may not be changed in an update.",
		`{"preemptionPolicy":"Never"}`: "preemptionPolicy: Invalid value",
	} {
		if _, err := pcs.Patch(ctx, pc.Name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), want) {
			t.Errorf("patch %s: %v, want 422 %q", patch, err, want)
		}
	}
	for _, tc := range []struct {
		pc   schedulingv1.PriorityClass
		want string
	}{
		{schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "system-mine"}, Value: 10}, "metadata.name: Forbidden: priority class names with 'system-' prefix are reserved for system use only"},
		{schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "too-high"}, Value: 1000000001}, "value: Forbidden: maximum allowed value of a user defined priority is 1000000000"},
	} {
		if _, err := pcs.Create(ctx, &tc.pc, metav1.CreateOptions{}); !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("create %s: %v, want 422 %q", tc.pc.Name, err, tc.want)
		}
	}
}
