package trim

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
)

// ManagedFields drops managedFields and keeps the rest of the object; a
// tombstone passes through as it is.
func TestManagedFields(t *testing.T) {
	var _ cache.TransformFunc = ManagedFields
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{
		Name: "p", Labels: map[string]string{"app": "a"},
		ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationApply}},
	}}
	out, err := ManagedFields(pod)
	if err != nil {
		t.Fatal(err)
	}
	got := out.(*corev1.Pod)
	if got.ManagedFields != nil || got.Name != "p" || got.Labels["app"] != "a" {
		t.Errorf("trimmed pod = %+v, want its name and labels without managedFields", got.ObjectMeta)
	}
	tomb := cache.DeletedFinalStateUnknown{Key: "default/p", Obj: pod}
	if out, err := ManagedFields(tomb); err != nil || out != any(tomb) {
		t.Errorf("a tombstone came back as %v, %v", out, err)
	}
}
