package node

import (
	"context"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

// TestEnvFromKeepsRelaxedNames: envFrom gives every key, with its prefix,
// as the kubelet does since environment variable names were relaxed
// (conformance "consumable as environment variable names with various
// prefixes" reads data-1 and p-data-1).
func TestEnvFromKeepsRelaxedNames(t *testing.T) {
	client := fake.NewSimpleClientset(&corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "cm", Namespace: "default"},
		Data:       map[string]string{"data-1": "value-1", "data.2": "value-2"},
	})
	a := &Agent{client: client}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "default"}}
	c := corev1.Container{Name: "c", EnvFrom: []corev1.EnvFromSource{
		{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cm"}}},
		{Prefix: "p-", ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cm"}}},
	}}
	env, err := a.resolveEnv(context.Background(), nil, pod, c)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"data-1=value-1", "data.2=value-2", "p-data-1=value-1", "p-data.2=value-2"} {
		if !slices.Contains(env, want) {
			t.Errorf("env lacks %q: %v", want, env)
		}
	}
}
