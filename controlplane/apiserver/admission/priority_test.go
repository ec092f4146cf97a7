package admission

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

type fakePriorityClasses map[string]*schedulingv1.PriorityClass

func (f fakePriorityClasses) GetPriorityClass(_ context.Context, name string) (*schedulingv1.PriorityClass, bool, error) {
	pc, ok := f[name]
	return pc, ok, nil
}

func TestPodPriorityFromPriorityClass(t *testing.T) {
	never := corev1.PreemptNever
	classes := fakePriorityClasses{
		"high":   {ObjectMeta: metav1.ObjectMeta{Name: "high"}, Value: 1000},
		"polite": {ObjectMeta: metav1.ObjectMeta{Name: "polite"}, Value: 50, PreemptionPolicy: &never},
	}
	tests := []struct {
		name       string
		class      string
		classes    PriorityClassLister
		wantValue  int32
		wantPolicy corev1.PreemptionPolicy
		forbidden  bool
	}{
		{"stored class", "high", classes, 1000, corev1.PreemptLowerPriority, false},
		{"class preemption policy", "polite", classes, 50, corev1.PreemptNever, false},
		{"system class without a lister", "system-node-critical", nil, 2000001000, corev1.PreemptLowerPriority, false},
		{"unknown class", "nope", classes, 0, "", true},
		{"no lister knows only the system classes", "high", nil, 0, "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default"}, Spec: corev1.PodSpec{PriorityClassName: tt.class}}
			d := &DefaultValues{priorityClasses: tt.classes}
			a := &Attributes{Operation: Create, Resource: corev1.SchemeGroupVersion.WithResource("pods"), Namespace: "default", Name: "p", Object: pod}
			err := d.Admit(context.Background(), a)
			if tt.forbidden {
				if !apierrors.IsForbidden(err) {
					t.Fatalf("err = %v, want Forbidden", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if *pod.Spec.Priority != tt.wantValue || *pod.Spec.PreemptionPolicy != tt.wantPolicy {
				t.Errorf("priority %d policy %s, want %d %s", *pod.Spec.Priority, *pod.Spec.PreemptionPolicy, tt.wantValue, tt.wantPolicy)
			}
		})
	}
}
