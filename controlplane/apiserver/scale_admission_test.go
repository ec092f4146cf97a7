package apiserver_test

import (
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/glassplane/glassplane/controlplane/apiserver"
)

// TestScaleAdmission: a write through deployments/scale is admitted as
// kube-apiserver admits it, as an autoscaling/v1 Scale: a validating
// policy sees kind Scale as object and old object and refuses over ten
// replicas; a mutating policy's patch of the Scale's replicas is what the
// Deployment gets (its generation moving once); a write of the Deployment
// itself matches neither.
func TestScaleAdmission(t *testing.T) {
	env := newEnvWith(t, func(c *apiserver.Config) { c.NoDynamicAdmission = false })
	startDynamicAdmission(t, env)
	ctx := ctxT(t)
	ns := env.namespace(t)
	reg := env.client.AdmissionregistrationV1()
	match := &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
		RuleWithOperations: admissionregistrationv1.RuleWithOperations{
			Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Update},
			Rule:       admissionregistrationv1.Rule{APIGroups: []string{"apps"}, APIVersions: []string{"v1"}, Resources: []string{"deployments/scale"}},
		},
	}}}
	here := &admissionregistrationv1.MatchResources{NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"kubernetes.io/metadata.name": ns}}}
	if _, err := reg.ValidatingAdmissionPolicies().Create(ctx, &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "scale-at-most-ten"},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			MatchConstraints: match,
			Validations: []admissionregistrationv1.Validation{{
				Expression: "object.apiVersion == 'autoscaling/v1' && object.kind == 'Scale' && oldObject.kind == 'Scale' && object.spec.replicas <= 10",
				Message:    "a Scale of at most ten replicas",
			}},
		},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := reg.ValidatingAdmissionPolicyBindings().Create(ctx, &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "scale-at-most-ten-" + ns},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{PolicyName: "scale-at-most-ten", MatchResources: here,
			ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := reg.MutatingAdmissionPolicies().Create(ctx, &admissionregistrationv1.MutatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "scale-capped-at-five"},
		Spec: admissionregistrationv1.MutatingAdmissionPolicySpec{
			MatchConstraints: match,
			Mutations: []admissionregistrationv1.Mutation{{PatchType: admissionregistrationv1.PatchTypeJSONPatch, JSONPatch: &admissionregistrationv1.JSONPatch{
				Expression: `object.kind == "Scale" && object.spec.replicas > 5 && object.spec.replicas <= 10 ? [JSONPatch{op: "replace", path: "/spec/replicas", value: 5}] : []`,
			}}},
			ReinvocationPolicy: admissionregistrationv1.NeverReinvocationPolicy,
		},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := reg.MutatingAdmissionPolicyBindings().Create(ctx, &admissionregistrationv1.MutatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "scale-capped-at-five-" + ns},
		Spec:       admissionregistrationv1.MutatingAdmissionPolicyBindingSpec{PolicyName: "scale-capped-at-five", MatchResources: here},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	deployments := env.client.AppsV1().Deployments(ns)
	labels := map[string]string{"app": "web"}
	_, err := deployments.Create(ctx, &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: testPod("t").Spec},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	scaleTo := func(n int32) (*autoscalingv1.Scale, error) {
		return deployments.UpdateScale(ctx, "web", &autoscalingv1.Scale{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns}, Spec: autoscalingv1.ScaleSpec{Replicas: n}}, metav1.UpdateOptions{})
	}
	// The policies take effect once the plugins have read them.
	for {
		_, err = scaleTo(20)
		if apierrors.IsInvalid(err) && strings.Contains(err.Error(), "a Scale of at most ten replicas") {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("scale to 20: %v, want the validating policy's refusal", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	for {
		// The mutating policy is read on its own: wait for its cap too.
		sc, err := scaleTo(7)
		if err != nil {
			t.Fatalf("scale to 7: %v", err)
		}
		if sc.Spec.Replicas == 5 {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("scale to 7 answered %d replicas, want the mutating policy's 5", sc.Spec.Replicas)
		}
		if _, err := scaleTo(1); err != nil {
			t.Fatal(err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	got, err := deployments.Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if *got.Spec.Replicas != 5 {
		t.Errorf("the Deployment has %d replicas after the capped scale, want 5", *got.Spec.Replicas)
	}
	before := got.Generation
	if sc, err := scaleTo(3); err != nil || sc.Spec.Replicas != 3 {
		t.Fatalf("scale to 3: %v %v", sc, err)
	}
	if sc, err := scaleTo(8); err != nil || sc.Spec.Replicas != 5 {
		t.Fatalf("scale to 8: %v %v, want capped at 5", sc, err)
	}
	if got, err = deployments.Get(ctx, "web", metav1.GetOptions{}); err != nil {
		t.Fatal(err)
	}
	if *got.Spec.Replicas != 5 || got.Generation != before+2 {
		t.Errorf("after scales to 3 and to 8 (capped): %d replicas, generation %d, want 5 and %d", *got.Spec.Replicas, got.Generation, before+2)
	}
	// The Deployment itself is not its scale subresource.
	got.Spec.Replicas = ptr.To[int32](20)
	if got, err = deployments.Update(ctx, got, metav1.UpdateOptions{}); err != nil || *got.Spec.Replicas != 20 {
		t.Fatalf("update the Deployment to 20 replicas: %v %v", got, err)
	}
}
