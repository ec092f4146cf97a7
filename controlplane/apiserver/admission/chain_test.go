package admission

import (
	"context"
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// failingPlugin refuses every request with a plain error.
type failingPlugin struct{}

func (failingPlugin) Name() string { return "Failing" }
func (failingPlugin) Validate(context.Context, *Attributes) error {
	return errors.New("backend unavailable")
}

// labelPlugin is a mutating and validating plugin, to check both phases run.
type labelPlugin struct{ validated *bool }

func (labelPlugin) Name() string { return "Label" }
func (labelPlugin) Admit(_ context.Context, a *Attributes) error {
	pod := a.Object.(*corev1.Pod)
	if pod.Labels == nil {
		pod.Labels = map[string]string{}
	}
	pod.Labels["seen/by"] = "label"
	return nil
}
func (p labelPlugin) Validate(context.Context, *Attributes) error {
	*p.validated = true
	return nil
}

func TestChainRun(t *testing.T) {
	t.Run("plain errors become internal errors and stop the chain", func(t *testing.T) {
		validated := false
		steps, err := NewChain(failingPlugin{}, labelPlugin{validated: &validated}).Run(context.Background(),
			&Attributes{Operation: Create, Kind: podKind, Resource: podsResource, Namespace: "default", Object: seedPod()})
		if !apierrors.IsInternalError(err) || apiCode(err) != 500 {
			t.Fatalf("err = %v, want 500 InternalError", err)
		}
		if validated {
			t.Error("a validating plugin after the refusal ran")
		}
		if len(steps) != 2 || steps[0].Plugin != "Label" || steps[0].Phase != PhaseMutating ||
			steps[0].Patch != `[{"op":"add","path":"/metadata/labels","value":{"seen/by":"label"}}]` ||
			steps[1].Plugin != "Failing" || steps[1].Error != "Internal error occurred: backend unavailable" {
			t.Fatalf("steps = %+v", steps)
		}
	})
	t.Run("a plugin implementing both interfaces takes part in both phases", func(t *testing.T) {
		validated := false
		steps, err := NewChain(labelPlugin{validated: &validated}).Run(context.Background(),
			&Attributes{Operation: Create, Kind: podKind, Resource: podsResource, Namespace: "default", Object: seedPod()})
		if err != nil || !validated || len(steps) != 2 || steps[1].Phase != PhaseValidating {
			t.Fatalf("err %v validated %v steps %+v", err, validated, steps)
		}
	})
	t.Run("delete runs without an object", func(t *testing.T) {
		steps, err := NewDefaultChain(fakeNamespaces{}).Run(context.Background(),
			&Attributes{Operation: Delete, Kind: podKind, Resource: podsResource, Namespace: "gone", Name: "mypod"})
		if err != nil {
			t.Fatalf("Run: %v", err)
		}
		for _, s := range steps {
			if s.Patch != "" || s.Error != "" {
				t.Errorf("step %+v", s)
			}
		}
	})
}

func TestServiceUpdateKeepsAllocatedValues(t *testing.T) {
	old := webService(func(s *corev1.Service) {
		s.ResourceVersion = "4"
		s.Spec.Type = corev1.ServiceTypeNodePort
		s.Spec.Ports = []corev1.ServicePort{{Name: "http", Port: 80, NodePort: 30080}}
		s.Spec.ClusterIP = "10.96.0.20"
		s.Spec.ClusterIPs = []string{"10.96.0.20"}
	})
	Default(old)
	defaultServiceIPFamilies(old)
	applied := webService(func(s *corev1.Service) {
		s.ResourceVersion = "4"
		s.Spec.Type = corev1.ServiceTypeNodePort
		s.Spec.Ports = []corev1.ServicePort{{Name: "http", Port: 80}}
	})
	a := &Attributes{Operation: Update, Kind: schema.GroupVersionKind{Version: "v1", Kind: "Service"},
		Resource: schema.GroupVersionResource{Version: "v1", Resource: "services"}, Namespace: "default", Name: "web", Object: applied, OldObject: old}
	steps, err := NewChain(NewDefaultValues(), NewValidation()).Run(context.Background(), a)
	if err != nil {
		t.Fatalf("Run: %v (steps %+v)", err, steps)
	}
	if applied.Spec.ClusterIP != "10.96.0.20" || len(applied.Spec.ClusterIPs) != 1 || applied.Spec.Ports[0].NodePort != 30080 {
		t.Fatalf("service spec = %+v", applied.Spec)
	}
}

func TestValidationNamesTheKind(t *testing.T) {
	svc := webService(func(s *corev1.Service) { s.Name = "1web" })
	Default(svc)
	err := NewValidation().Validate(context.Background(), &Attributes{Operation: Create, Namespace: "default", Object: svc})
	want := `Service "1web" is invalid: metadata.name: Invalid value: "1web": ` + dns1035LabelMsg
	if err == nil || err.Error() != want {
		t.Fatalf("err =\n%v\nwant\n%s", err, want)
	}
}

func TestNamespaceFinalizeValidatesFinalizers(t *testing.T) {
	old := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "x", ResourceVersion: "1"}, Spec: corev1.NamespaceSpec{Finalizers: []corev1.FinalizerName{"kubernetes"}}}
	ns := old.DeepCopy()
	ns.Spec.Finalizers = []corev1.FinalizerName{"custom"}
	err := NewValidation().Validate(context.Background(), &Attributes{Operation: Update, Subresource: "finalize", Kind: namespaceKind, Resource: namespacesResource, Name: "x", Object: ns, OldObject: old})
	want := `Namespace "x" is invalid: spec.finalizers[0]: Invalid value: "custom": name is neither a standard finalizer name nor is it fully qualified`
	if err == nil || err.Error() != want {
		t.Fatalf("err = %v, want %s", err, want)
	}
}

// pickyPlugin handles only namespaced requests and counts its calls.
type pickyPlugin struct{ calls *int }

func (pickyPlugin) Name() string               { return "Picky" }
func (pickyPlugin) Handles(a *Attributes) bool { return a.Namespace != "" }
func (p pickyPlugin) Admit(_ context.Context, a *Attributes) error {
	*p.calls++
	a.Object.(*corev1.Pod).Labels = map[string]string{"picky": "yes"}
	return nil
}

func TestChainSkipsPluginsThatDoNotHandleTheRequest(t *testing.T) {
	calls := 0
	c := NewChain(pickyPlugin{&calls})
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}}
	steps, err := c.Run(context.Background(), &Attributes{Operation: Create, Object: pod})
	if err != nil || calls != 0 || pod.Labels != nil || len(steps) != 1 || steps[0].Plugin != "Picky" || steps[0].Patch != "" {
		t.Fatalf("unhandled: steps %+v, err %v, calls %d, labels %v", steps, err, calls, pod.Labels)
	}
	steps, err = c.Run(context.Background(), &Attributes{Operation: Create, Namespace: "ns", Object: pod})
	if err != nil || calls != 1 || len(steps) != 1 || steps[0].Patch != `[{"op":"add","path":"/metadata/labels","value":{"picky":"yes"}}]` {
		t.Fatalf("handled: steps %+v, err %v, calls %d", steps, err, calls)
	}
}
