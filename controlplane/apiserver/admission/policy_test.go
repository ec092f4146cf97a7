package admission

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// fakeLimitRanges is a LimitRangeLister over a fixed list.
type fakeLimitRanges []corev1.LimitRange

func (f fakeLimitRanges) ListLimitRanges(context.Context, string) ([]corev1.LimitRange, error) {
	return f, nil
}

func TestLimitRangerMessages(t *testing.T) {
	q := resource.MustParse
	ranges := fakeLimitRanges{{Spec: corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{
		{Type: corev1.LimitTypeContainer, Min: corev1.ResourceList{"cpu": q("100m")}, Max: corev1.ResourceList{"cpu": q("1")},
			MaxLimitRequestRatio: corev1.ResourceList{"cpu": q("2")}},
		{Type: corev1.LimitTypePod, Max: corev1.ResourceList{"memory": q("1Gi")}},
	}}}}
	tests := []struct {
		name       string
		req, limit corev1.ResourceList
		want       string
	}{
		{"below min", corev1.ResourceList{"cpu": q("50m")}, corev1.ResourceList{"cpu": q("150m"), "memory": q("10Mi")},
			`pods "p" is forbidden: [minimum cpu usage per Container is 100m, but request is 50m, cpu max limit to request ratio per Container is 2, but provided ratio is 3.000000]`},
		{"above max", corev1.ResourceList{"cpu": q("1")}, corev1.ResourceList{"cpu": q("2"), "memory": q("10Mi")},
			`pods "p" is forbidden: maximum cpu usage per Container is 1, but limit is 2`},
		{"no pod memory limit", corev1.ResourceList{"cpu": q("500m")}, corev1.ResourceList{"cpu": q("500m")},
			`pods "p" is forbidden: maximum memory usage per Pod is 1Gi.  No limit is specified`},
		{"fits", corev1.ResourceList{"cpu": q("500m")}, corev1.ResourceList{"cpu": q("1"), "memory": q("10Mi")}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"}, Spec: corev1.PodSpec{Containers: []corev1.Container{
				{Name: "c", Resources: corev1.ResourceRequirements{Requests: tc.req, Limits: tc.limit}},
			}}}
			a := &Attributes{Operation: Create, Resource: podsResource, Kind: podKind, Namespace: "ns", Name: "p", Object: pod}
			err := NewLimitRanger(ranges).Validate(context.Background(), a)
			got := ""
			if err != nil {
				got = err.Error()
			}
			if got != tc.want {
				t.Errorf("got  %q\nwant %q", got, tc.want)
			}
		})
	}
}

func TestLimitRangerDefaults(t *testing.T) {
	lr := corev1.LimitRange{Spec: corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{{
		Type: corev1.LimitTypeContainer, Max: corev1.ResourceList{"memory": resource.MustParse("512Mi")},
	}}}}
	Default(&lr)
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "web"}}}}
	a := &Attributes{Operation: Create, Resource: podsResource, Kind: podKind, Namespace: "ns", Object: pod}
	if err := NewLimitRanger(fakeLimitRanges{lr}).Admit(context.Background(), a); err != nil {
		t.Fatal(err)
	}
	r := pod.Spec.Containers[0].Resources
	if r.Limits.Memory().String() != "512Mi" || r.Requests.Memory().String() != "512Mi" {
		t.Errorf("resources = %v, want limit and request 512Mi from max", r)
	}
	if got, want := pod.Annotations[limitRangerAnnotation], "LimitRanger plugin set: memory request for container web; memory limit for container web"; got != want {
		t.Errorf("annotation = %q, want %q", got, want)
	}
}

func TestPolicyValidation(t *testing.T) {
	q := resource.MustParse
	prefix := networkingv1.PathTypePrefix
	cases := []struct {
		name string
		errs []string
		got  []string
	}{
		{"negative quota", []string{`spec.hard[pods]: Invalid value: "-1": must be greater than or equal to 0`},
			errorStrings(Validate(&corev1.ResourceQuota{ObjectMeta: metaNS("q", "ns"), Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{"pods": q("-1")}}}, nil))},
		{"unknown quota resource", []string{`spec.hard[foo]: Invalid value: "foo": must be a standard resource type or fully qualified`, `spec.hard[foo]: Invalid value: "foo": must be a standard resource for quota`},
			errorStrings(Validate(&corev1.ResourceQuota{ObjectMeta: metaNS("q", "ns"), Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{"foo": q("1")}}}, nil))},
		{"conflicting scopes", []string{`spec.scopes: Invalid value: ["BestEffort","NotBestEffort"]: conflicting scopes`},
			errorStrings(Validate(&corev1.ResourceQuota{ObjectMeta: metaNS("q", "ns"), Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{"pods": q("1")},
				Scopes: []corev1.ResourceQuotaScope{"BestEffort", "NotBestEffort"}}}, nil))},
		{"limit range min > max", []string{`spec.limits[0].min[memory]: Invalid value: "2Gi": min value 2Gi is greater than max value 1Gi`},
			errorStrings(Validate(&corev1.LimitRange{ObjectMeta: metaNS("l", "ns"), Spec: corev1.LimitRangeSpec{Limits: []corev1.LimitRangeItem{
				{Type: corev1.LimitTypePod, Min: corev1.ResourceList{"memory": q("2Gi")}, Max: corev1.ResourceList{"memory": q("1Gi")}}}}}, nil))},
		{"ingress path without type", []string{`spec.rules[0].http.paths[0].pathType: Required value: pathType must be specified`},
			errorStrings(Validate(&networkingv1.Ingress{ObjectMeta: metaNS("i", "ns"), Spec: networkingv1.IngressSpec{Rules: []networkingv1.IngressRule{{
				IngressRuleValue: networkingv1.IngressRuleValue{HTTP: &networkingv1.HTTPIngressRuleValue{Paths: []networkingv1.HTTPIngressPath{{Path: "/",
					Backend: networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{Name: "s", Port: networkingv1.ServiceBackendPort{Number: 80}}}}}}}}}}}, nil))},
		{"ingress relative prefix", []string{`spec.rules[0].http.paths[0].path: Invalid value: "api": must be an absolute path`},
			errorStrings(Validate(&networkingv1.Ingress{ObjectMeta: metaNS("i", "ns"), Spec: networkingv1.IngressSpec{Rules: []networkingv1.IngressRule{{
				IngressRuleValue: networkingv1.IngressRuleValue{HTTP: &networkingv1.HTTPIngressRuleValue{Paths: []networkingv1.HTTPIngressPath{{Path: "api", PathType: &prefix,
					Backend: networkingv1.IngressBackend{Service: &networkingv1.IngressServiceBackend{Name: "s", Port: networkingv1.ServiceBackendPort{Number: 80}}}}}}}}}}}, nil))},
		{"ingress class without controller", []string{`spec.controller: Required value`},
			errorStrings(Validate(&networkingv1.IngressClass{ObjectMeta: metav1.ObjectMeta{Name: "c"}}, nil))},
		{"network policy except outside cidr", []string{`spec.ingress[0].from[0].ipBlock.except[0]: Invalid value: "10.1.0.0/24": must be a strict subset of ` + "`cidr`"},
			errorStrings(Validate(&networkingv1.NetworkPolicy{ObjectMeta: metaNS("n", "ns"), Spec: networkingv1.NetworkPolicySpec{Ingress: []networkingv1.NetworkPolicyIngressRule{{
				From: []networkingv1.NetworkPolicyPeer{{IPBlock: &networkingv1.IPBlock{CIDR: "10.0.0.0/16", Except: []string{"10.1.0.0/24"}}}}}}}}, nil))},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if strings.Join(tc.got, "\n") != strings.Join(tc.errs, "\n") {
				t.Errorf("got  %q\nwant %q", tc.got, tc.errs)
			}
		})
	}
}
