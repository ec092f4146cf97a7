package admission

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// fakeNamespaces is a NamespaceLister over a fixed map of phases.
type fakeNamespaces map[string]corev1.NamespacePhase

func (f fakeNamespaces) GetNamespacePhase(_ context.Context, name string) (corev1.NamespacePhase, bool, error) {
	phase, ok := f[name]
	return phase, ok, nil
}

var (
	podsResource        = schema.GroupVersionResource{Version: "v1", Resource: "pods"}
	podKind             = schema.GroupVersionKind{Version: "v1", Kind: "Pod"}
	namespacesResource  = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
	namespaceKind       = schema.GroupVersionKind{Version: "v1", Kind: "Namespace"}
	deploymentsResource = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	deploymentKind      = schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "Deployment"}
)

// seedPod is the minimal pod of the project's seed notes.
func seedPod() *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metaNS("mypod", "default"),
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "mycontainer", Image: "nginx"}}},
	}
}

// errorStrings renders a field.ErrorList-like slice of errors for comparison.
func errorStrings[E interface{ Error() string }](errs []E) []string {
	out := make([]string, 0, len(errs))
	for _, e := range errs {
		out = append(out, e.Error())
	}
	return out
}

func assertStrings(t *testing.T, got, want []string) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("got %d errors, want %d\ngot:  %q\nwant: %q", len(got), len(want), got, want)
	}
	for i := range got {
		if got[i] != want[i] {
			t.Errorf("error %d:\ngot:  %s\nwant: %s", i, got[i], want[i])
		}
	}
}

func metaNS(name, namespace string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: name, Namespace: namespace}
}
