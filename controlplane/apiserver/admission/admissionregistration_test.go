package admission

import (
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestValidateAdmissionRegistration(t *testing.T) {
	url := "https://127.0.0.1:9443/x"
	none := admissionregistrationv1.SideEffectClassNone
	hook := func(name string) admissionregistrationv1.ValidatingWebhook {
		return admissionregistrationv1.ValidatingWebhook{
			Name: name, ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: &url},
			SideEffects: &none, AdmissionReviewVersions: []string{"v1"},
		}
	}
	for _, tc := range []struct {
		name string
		edit func(c *admissionregistrationv1.ValidatingWebhookConfiguration)
		want []string
	}{
		{name: "valid", edit: func(*admissionregistrationv1.ValidatingWebhookConfiguration) {}},
		{
			name: "timeout and duplicate name",
			edit: func(c *admissionregistrationv1.ValidatingWebhookConfiguration) {
				c.Webhooks[0].TimeoutSeconds = ptrTo(int32(0))
				c.Webhooks = append(c.Webhooks, hook("a.glassplane.test"))
			},
			want: []string{
				"webhooks[0].timeoutSeconds: Invalid value: 0: the timeout value must be between 1 and 30 seconds",
				`webhooks[1].name: Duplicate value: "a.glassplane.test"`,
			},
		},
		{
			name: "no client config and no side effects",
			edit: func(c *admissionregistrationv1.ValidatingWebhookConfiguration) {
				c.Webhooks[0].ClientConfig.URL = nil
				c.Webhooks[0].SideEffects = nil
			},
			want: []string{
				"webhooks[0].clientConfig: Required value: exactly one of url or service is required",
				"webhooks[0].sideEffects: Required value: must specify one of None, NoneOnDryRun",
			},
		},
		{
			name: "match condition that does not compile",
			edit: func(c *admissionregistrationv1.ValidatingWebhookConfiguration) {
				c.Webhooks[0].MatchConditions = []admissionregistrationv1.MatchCondition{{Name: "x", Expression: "1 +"}}
			},
			want: []string{`webhooks[0].matchConditions[0].expression: Invalid value: "1 +": compilation failed`},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "hooks"}, Webhooks: []admissionregistrationv1.ValidatingWebhook{hook("a.glassplane.test")}}
			tc.edit(c)
			Default(c)
			errs := Validate(c, nil)
			if len(tc.want) == 0 && len(errs) > 0 {
				t.Fatalf("errors %v, want none", errs)
			}
			got := errs.ToAggregate()
			for _, w := range tc.want {
				if got == nil || !strings.Contains(got.Error(), w) {
					t.Errorf("errors %v lack %q", got, w)
				}
			}
		})
	}
}

func TestDefaultAdmissionRegistration(t *testing.T) {
	c := &admissionregistrationv1.MutatingWebhookConfiguration{Webhooks: []admissionregistrationv1.MutatingWebhook{{
		Name:         "m.test",
		ClientConfig: admissionregistrationv1.WebhookClientConfig{Service: &admissionregistrationv1.ServiceReference{Namespace: "ns", Name: "svc"}},
		Rules:        []admissionregistrationv1.RuleWithOperations{{}},
	}}}
	Default(c)
	w := c.Webhooks[0]
	if *w.FailurePolicy != admissionregistrationv1.Fail || *w.MatchPolicy != admissionregistrationv1.Equivalent ||
		*w.TimeoutSeconds != 10 || *w.ReinvocationPolicy != admissionregistrationv1.NeverReinvocationPolicy ||
		*w.ClientConfig.Service.Port != 443 || *w.Rules[0].Scope != admissionregistrationv1.AllScopes ||
		w.NamespaceSelector == nil || w.ObjectSelector == nil {
		t.Fatalf("defaults not applied: %+v", w)
	}
}
