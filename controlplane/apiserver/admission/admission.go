package admission

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Operation is the kind of request being admitted.
type Operation string

// The operations admission sees, spelled as in admission.k8s.io.
const (
	Create  Operation = "CREATE"
	Update  Operation = "UPDATE"
	Delete  Operation = "DELETE"
	Connect Operation = "CONNECT"
)

// Phases of a Step.
const (
	PhaseMutating   = "mutating"
	PhaseValidating = "validating"
)

// Attributes describe one request to admit.
type Attributes struct {
	Operation   Operation
	Resource    schema.GroupVersionResource
	Subresource string
	Kind        schema.GroupVersionKind
	Namespace   string
	Name        string
	// Object is the typed k8s.io/api object being written (*corev1.Pod, ...).
	// Mutating plugins change it in place. Nil on DELETE.
	Object runtime.Object
	// OldObject is the stored object on UPDATE (and DELETE where known); nil on CREATE.
	OldObject  runtime.Object
	DryRun     bool
	UserName   string
	UserUID    string
	UserGroups []string
	UserExtra  map[string][]string
	// AuditAnnotations are what plugins add to the request's audit event,
	// as k8s.io/apiserver's Attributes.AddAnnotation (which webhook
	// mutated the object and its patch, a policy's failed validation).
	AuditAnnotations map[string]string
	// Validate, when set, is the resource's own validation (a
	// CustomResourceDefinition's, a custom resource's schema): the
	// Validation plugin runs it in place of the built-in rules.
	Validate func(ctx context.Context) field.ErrorList
	// Normalize, when set, is what the resource does to an object that
	// dynamic admission (a webhook's patch, a policy's mutation) changed, as
	// kube-apiserver's decoder does to a custom resource: fill in the
	// schema's defaults and prune the fields it does not declare.
	Normalize func(obj runtime.Object) error
	// Reinvocation is what one request's mutating plugins share across
	// the chain's passes (k8s.io/apiserver's ReinvocationContext).
	Reinvocation Reinvocation
}

// Reinvocation is k8s.io/apiserver's ReinvocationContext for one request:
// a webhook or policy with reinvocationPolicy IfNeeded asks for a second
// pass of the mutating plugins when one after it changed the object, and
// remembers across passes what it needs to (Value).
type Reinvocation struct {
	isReinvoke, requested bool
	values                map[string]any
}

// IsReinvoke reports whether the mutating plugins are on their second pass.
func (r *Reinvocation) IsReinvoke() bool { return r.isReinvoke }

// SetIsReinvoke marks the second pass.
func (r *Reinvocation) SetIsReinvoke() { r.isReinvoke = true }

// ShouldReinvoke reports whether a plugin asked for a second pass.
func (r *Reinvocation) ShouldReinvoke() bool { return r.requested }

// SetShouldReinvoke asks for a second pass.
func (r *Reinvocation) SetShouldReinvoke() { r.requested = true }

// SetValue keeps v for plugin across passes.
func (r *Reinvocation) SetValue(plugin string, v any) {
	if r.values == nil {
		r.values = map[string]any{}
	}
	r.values[plugin] = v
}

// Value is what plugin kept.
func (r *Reinvocation) Value(plugin string) any { return r.values[plugin] }

// Plugin is one admission plugin.
type Plugin interface{ Name() string }

// MutationInterface is a plugin that may change the object.
type MutationInterface interface {
	Plugin
	Admit(ctx context.Context, a *Attributes) error
}

// ValidationInterface is a plugin that may only accept or refuse the object.
type ValidationInterface interface {
	Plugin
	Validate(ctx context.Context, a *Attributes) error
}

// Handler is implemented by plugins that act only on some requests, as
// kube-apiserver's admission.Interface.Handles tells: the chain skips them,
// and the work of recording their patch, for the others.
type Handler interface {
	Handles(a *Attributes) bool
}

// Step records what one plugin did, for the audit annotations and the dashboard.
type Step struct {
	Plugin string `json:"plugin"`
	Phase  string `json:"phase"`
	// Patch is the RFC 6902 JSON patch of what the plugin changed, "" if nothing.
	Patch string `json:"patch,omitempty"`
	Error string `json:"error,omitempty"`
	// Reinvoked marks a step of the mutating plugins' second pass, run
	// because a webhook or policy with reinvocationPolicy IfNeeded asked.
	Reinvoked bool `json:"reinvoked,omitempty"`
}

// Chain runs admission plugins in order: every mutating plugin, then every
// validating plugin. A plugin that implements both interfaces takes part in
// both phases.
type Chain struct {
	mutating   []MutationInterface
	validating []ValidationInterface
}

// NewChain builds a chain from plugins in the order given.
func NewChain(plugins ...Plugin) *Chain {
	c := &Chain{}
	for _, p := range plugins {
		if m, ok := p.(MutationInterface); ok {
			c.mutating = append(c.mutating, m)
		}
		if v, ok := p.(ValidationInterface); ok {
			c.validating = append(c.validating, v)
		}
	}
	return c
}

// NewDefaultChain is the chain kube-apiserver's default plugins amount to,
// in its order: defaulting, DefaultTolerationSeconds, NamespaceLifecycle,
// then validation. If namespaces is also a PriorityClassLister, pods get
// the priority of any stored PriorityClass; if it is a StorageClassLister,
// DefaultStorageClass runs before validation.
func NewDefaultChain(namespaces NamespaceLister) *Chain {
	defaults := NewDefaultValues()
	if pcs, ok := namespaces.(PriorityClassLister); ok {
		defaults.priorityClasses = pcs
	}
	plugins := []Plugin{defaults, NewDefaultTolerationSeconds(), NewNamespaceLifecycle(namespaces)}
	if scs, ok := namespaces.(StorageClassLister); ok {
		plugins = append(plugins, NewDefaultStorageClass(scs))
	}
	return NewChain(append(plugins, NewValidation())...)
}

// Run admits a: it runs the mutating plugins in order, recording the JSON
// patch each one made to a.Object, then the validating plugins. It stops at
// the first refusal and returns it as an *apierrors.StatusError (422 Invalid,
// 403 Forbidden, 404 NotFound, ...); any other plugin error becomes a 500.
func (c *Chain) Run(ctx context.Context, a *Attributes) ([]Step, error) {
	var steps []Step
	// Each plugin's patch is the difference between the object before and
	// after it; one plugin's "after" is the next one's "before", and a
	// plugin that changed nothing (the usual case) costs no diff.
	// A plugin that does not handle the request (a Handler saying so) is
	// recorded as a step that changed nothing, and costs nothing.
	var before []byte
	mutate := func() error {
		for _, p := range c.mutating {
			step := Step{Plugin: p.Name(), Phase: PhaseMutating, Reinvoked: a.Reinvocation.IsReinvoke()}
			if h, ok := p.(Handler); ok && !h.Handles(a) {
				steps = append(steps, step)
				continue
			}
			if before == nil {
				var err error
				if before, err = marshalObject(a.Object); err != nil {
					return apierrors.NewInternalError(err)
				}
			}
			if err := p.Admit(ctx, a); err != nil {
				serr := asStatusError(err)
				step.Error = serr.Error()
				steps = append(steps, step)
				return serr
			}
			after, err := marshalObject(a.Object)
			if err != nil {
				return apierrors.NewInternalError(err)
			}
			if !bytes.Equal(before, after) {
				patch, err := diffJSON(before, after)
				if err != nil {
					return apierrors.NewInternalError(fmt.Errorf("failed to diff the object after plugin %q: %w", p.Name(), err))
				}
				step.Patch = patch
			}
			before = after
			steps = append(steps, step)
		}
		return nil
	}
	if err := mutate(); err != nil {
		return steps, err
	}
	// A webhook or policy with reinvocationPolicy IfNeeded whose object a
	// later plugin changed asks for one more pass of every mutating
	// plugin, as k8s.io/apiserver's reinvoker runs it.
	if a.Reinvocation.ShouldReinvoke() {
		a.Reinvocation.SetIsReinvoke()
		if err := mutate(); err != nil {
			return steps, err
		}
	}
	for _, p := range c.validating {
		step := Step{Plugin: p.Name(), Phase: PhaseValidating}
		if err := p.Validate(ctx, a); err != nil {
			serr := asStatusError(err)
			step.Error = serr.Error()
			return append(steps, step), serr
		}
		steps = append(steps, step)
	}
	return steps, nil
}

func marshalObject(obj runtime.Object) ([]byte, error) {
	if obj == nil {
		return []byte("null"), nil
	}
	b, err := json.Marshal(obj)
	if err != nil {
		return nil, fmt.Errorf("failed to marshal %T: %w", obj, err)
	}
	return b, nil
}

func asStatusError(err error) *apierrors.StatusError {
	var serr *apierrors.StatusError
	if errors.As(err, &serr) {
		return serr
	}
	return apierrors.NewInternalError(err)
}
