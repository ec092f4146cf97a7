package admission

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func validStatefulSet() *appsv1.StatefulSet {
	s := &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", ResourceVersion: "1"},
		Spec: appsv1.StatefulSetSpec{
			ServiceName: "nginx",
			Selector:    &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "nginx"}}},
			},
		},
	}
	Default(s)
	return s
}

func TestValidateStatefulSet(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*appsv1.StatefulSet)
		field  string
		detail string
	}{
		{"valid", func(*appsv1.StatefulSet) {}, "", ""},
		{"selector not matching labels", func(s *appsv1.StatefulSet) { s.Spec.Template.Labels = map[string]string{"app": "other"} },
			"spec.template.metadata.labels", "`selector` does not match template `labels`"},
		{"negative replicas", func(s *appsv1.StatefulSet) { s.Spec.Replicas = ptrTo(int32(-1)) }, "spec.replicas", "must be greater than or equal to 0"},
		{"bad service name", func(s *appsv1.StatefulSet) { s.Spec.ServiceName = "Bad_Name" }, "spec.serviceName", ""},
		{"name not a DNS label", func(s *appsv1.StatefulSet) { s.Name = "web.v1" }, "metadata.name", ""},
		{"negative ordinals start", func(s *appsv1.StatefulSet) { s.Spec.Ordinals = &appsv1.StatefulSetOrdinals{Start: -1} }, "spec.ordinals.start", ""},
		{"zero maxUnavailable", func(s *appsv1.StatefulSet) {
			s.Spec.UpdateStrategy.RollingUpdate.MaxUnavailable = ptrTo(intstr.FromInt32(0))
		},
			"spec.updateStrategy.rollingUpdate.maxUnavailable", "must be greater than zero"},
		{"bad pod management", func(s *appsv1.StatefulSet) { s.Spec.PodManagementPolicy = "Sometimes" }, "spec.podManagementPolicy", "must be 'OrderedReady' or 'Parallel'"},
		{"bad retention", func(s *appsv1.StatefulSet) { s.Spec.PersistentVolumeClaimRetentionPolicy.WhenScaled = "Keep" },
			"spec.persistentVolumeClaimRetentionPolicy.whenScaled", ""},
		{"onDelete with rollingUpdate", func(s *appsv1.StatefulSet) { s.Spec.UpdateStrategy.Type = appsv1.OnDeleteStatefulSetStrategyType },
			"spec.updateStrategy.rollingUpdate", "only allowed for updateStrategy 'RollingUpdate'"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := validStatefulSet()
			tt.mutate(s)
			errs := Validate(s, nil)
			if tt.field == "" {
				if len(errs) != 0 {
					t.Fatalf("unexpected errors: %v", errs)
				}
				return
			}
			for _, e := range errs {
				if e.Field == tt.field && (tt.detail == "" || e.Detail == tt.detail) {
					return
				}
			}
			t.Fatalf("errors %v lack %s %q", errs, tt.field, tt.detail)
		})
	}
}

func TestValidateStatefulSetUpdate(t *testing.T) {
	old := validStatefulSet()
	allowed := old.DeepCopy()
	allowed.Spec.Replicas = ptrTo(int32(5))
	allowed.Spec.Template.Spec.Containers[0].Image = "nginx:2"
	allowed.Spec.MinReadySeconds = 3
	if errs := Validate(allowed, old); len(errs) != 0 {
		t.Fatalf("allowed update refused: %v", errs)
	}
	forbidden := old.DeepCopy()
	forbidden.Spec.ServiceName = "other"
	errs := Validate(forbidden, old)
	if len(errs) != 1 || errs[0].Field != "spec" || errs[0].Detail != statefulSetSpecForbidden {
		t.Fatalf("errors = %v", errs)
	}
	want := "updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', 'updateStrategy', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden"
	if statefulSetSpecForbidden != want {
		t.Errorf("message = %q", statefulSetSpecForbidden)
	}
}

func TestValidateStatefulSetStatusUpdate(t *testing.T) {
	old := validStatefulSet()
	old.Status.CollisionCount = ptrTo(int32(2))
	next := old.DeepCopy()
	next.Status.Replicas = 1
	next.Status.ReadyReplicas = 2
	next.Status.CollisionCount = ptrTo(int32(1))
	errs := validateStatusUpdate(next, old)
	fields := map[string]bool{}
	for _, e := range errs {
		fields[e.Field] = true
	}
	if !fields["status.readyReplicas"] || !fields["status.collisionCount"] {
		t.Fatalf("errors = %v", errs)
	}
}
