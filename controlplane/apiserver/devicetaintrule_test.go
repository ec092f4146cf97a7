package apiserver_test

import (
	"strings"
	"testing"
	"time"

	resourcev1 "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestDeviceTaintRule: resource.k8s.io/v1 DeviceTaintRules are served with
// upstream's strategy: generation counts spec changes, timeAdded is set on
// create and when the effect changes, status goes through /status only,
// and a bad key or effect is a 422 naming the field.
func TestDeviceTaintRule(t *testing.T) {
	ctx := ctxT(t)
	rules := shared.client.ResourceV1().DeviceTaintRules()
	r, err := rules.Create(ctx, &resourcev1.DeviceTaintRule{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "maintenance-"},
		Spec:       resourcev1.DeviceTaintRuleSpec{Taint: resourcev1.DeviceTaint{Key: "example.com/maintenance", Effect: resourcev1.DeviceTaintEffectNone}},
		Status:     resourcev1.DeviceTaintRuleStatus{Conditions: []metav1.Condition{{Type: "Bogus", Status: metav1.ConditionTrue, Reason: "X", LastTransitionTime: metav1.Now()}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rules.Delete(ctx, r.Name, metav1.DeleteOptions{}) })
	if r.Generation != 1 || r.Spec.Taint.TimeAdded == nil || len(r.Status.Conditions) != 0 {
		t.Fatalf("created rule: generation %d, timeAdded %v, status %+v", r.Generation, r.Spec.Taint.TimeAdded, r.Status)
	}
	added := *r.Spec.Taint.TimeAdded
	// timeAdded has a resolution of a second: the update comes after it.
	time.Sleep(1100 * time.Millisecond)
	r.Spec.Taint.Effect = resourcev1.DeviceTaintEffectNoExecute
	r, err = rules.Update(ctx, r, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if r.Generation != 2 || !r.Spec.Taint.TimeAdded.After(added.Time) {
		t.Errorf("after changing the effect: generation %d, timeAdded %v (was %v)", r.Generation, r.Spec.Taint.TimeAdded, added)
	}
	r.Status.Conditions = []metav1.Condition{{Type: "EvictionInProgress", Status: metav1.ConditionFalse, Reason: "Completed", LastTransitionTime: metav1.Now()}}
	r, err = rules.UpdateStatus(ctx, r, metav1.UpdateOptions{})
	if err != nil || len(r.Status.Conditions) != 1 || r.Generation != 2 {
		t.Fatalf("status update: %v %+v", err, r)
	}
	for _, tc := range []struct {
		taint resourcev1.DeviceTaint
		want  string
	}{
		{resourcev1.DeviceTaint{Key: "bad key", Effect: resourcev1.DeviceTaintEffectNone}, "spec.taint.key: Invalid value"},
		{resourcev1.DeviceTaint{Key: "ok", Effect: "PreferNoSchedule"}, `spec.taint.effect: Unsupported value: "PreferNoSchedule": supported values: "None", "NoSchedule", "NoExecute"`},
		{resourcev1.DeviceTaint{Key: "ok"}, "spec.taint.effect: Required value"},
	} {
		_, err := rules.Create(ctx, &resourcev1.DeviceTaintRule{ObjectMeta: metav1.ObjectMeta{GenerateName: "bad-"}, Spec: resourcev1.DeviceTaintRuleSpec{Taint: tc.taint}}, metav1.CreateOptions{})
		if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("taint %+v: %v, want 422 %q", tc.taint, err, tc.want)
		}
	}
}
