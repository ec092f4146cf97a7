package web

import (
	"net/http"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestPagesSayWhatIsNotImplemented: the object and list pages of an
// Ingress and a NetworkPolicy say once that Glassplane stores and serves
// them but implements no data path (README's "What Glassplane does not
// do"); a ConfigMap's pages say nothing of the kind.
func TestPagesSayWhatIsNotImplemented(t *testing.T) {
	e := newAPIEnv(t)
	meta := metav1.ObjectMeta{Name: "x", Namespace: "default"}
	prefix := networkingv1.PathTypePrefix
	if _, err := e.client.NetworkingV1().Ingresses("default").Create(e.ctx, &networkingv1.Ingress{ObjectMeta: meta, Spec: networkingv1.IngressSpec{
		Rules: []networkingv1.IngressRule{{Host: "x.example.com", IngressRuleValue: networkingv1.IngressRuleValue{HTTP: &networkingv1.HTTPIngressRuleValue{
			Paths: []networkingv1.HTTPIngressPath{{Path: "/", PathType: &prefix, Backend: networkingv1.IngressBackend{
				Service: &networkingv1.IngressServiceBackend{Name: "x", Port: networkingv1.ServiceBackendPort{Number: 80}}}}},
		}}}},
	}}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create ingress: %v", err)
	}
	if _, err := e.client.NetworkingV1().NetworkPolicies("default").Create(e.ctx, &networkingv1.NetworkPolicy{ObjectMeta: meta}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create network policy: %v", err)
	}
	if _, err := e.client.CoreV1().ConfigMaps("default").Create(e.ctx, &corev1.ConfigMap{ObjectMeta: meta}, metav1.CreateOptions{}); err != nil {
		t.Fatalf("create config map: %v", err)
	}
	for _, tt := range []struct{ path, want string }{
		{"/objects/ingresses/default/x", "no ingress controller runs"},
		{"/objects/ingresses", "no ingress controller runs"},
		{"/objects/networkpolicies/default/x", "the pod network does not filter traffic by them"},
		{"/objects/networkpolicies", "the pod network does not filter traffic by them"},
		{"/objects/configmaps/default/x", ""},
		{"/objects/configmaps", ""},
	} {
		t.Run(tt.path, func(t *testing.T) {
			code, doc, raw := e.getPage(t, tt.path)
			if code != http.StatusOK {
				t.Fatalf("GET = %d: %s", code, raw)
			}
			notes := byTestID(doc, "no-data-path")
			switch {
			case tt.want == "" && len(notes) != 0:
				t.Errorf("the page says %q", text(notes[0]))
			case tt.want != "" && len(notes) != 1:
				t.Errorf("the page has %d notes, want one", len(notes))
			case tt.want != "" && !strings.Contains(text(notes[0]), tt.want):
				t.Errorf("the note reads %q, want it to say %q", text(notes[0]), tt.want)
			}
		})
	}
}
