package dynamic

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	k8sadmission "k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/admission/plugin/policy/generic"
	"k8s.io/apiserver/pkg/admission/plugin/policy/matching"
	policymutating "k8s.io/apiserver/pkg/admission/plugin/policy/mutating"
	policyvalidating "k8s.io/apiserver/pkg/admission/plugin/policy/validating"
	"k8s.io/apiserver/pkg/admission/plugin/webhook/mutating"
	webhookvalidating "k8s.io/apiserver/pkg/admission/plugin/webhook/validating"
	auditinternal "k8s.io/apiserver/pkg/apis/audit"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizer"
	webhookutil "k8s.io/apiserver/pkg/util/webhook"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"

	"github.com/glassplane/glassplane/controlplane/apiserver/admission"
)

// The plugin names, as kube-apiserver's --enable-admission-plugins spells them.
const (
	MutatingWebhookName   = mutating.PluginName
	ValidatingWebhookName = webhookvalidating.PluginName
	ValidatingPolicyName  = policyvalidating.PluginName
	MutatingPolicyName    = policymutating.PluginName
)

// Deps are what Start wires into the plugins: a client of the API server
// (its loopback identity), a dynamic client and REST mapper for policy
// parameters, and the server's authorizer for policies' authorizer checks.
type Deps struct {
	Client     kubernetes.Interface
	Dynamic    dynamic.Interface
	RESTMapper meta.RESTMapper
	Authorizer authorizer.UnconditionalAuthorizer
}

// Plugins holds k8s.io/apiserver's dynamic admission plugins for one API
// server. Its MutatingPolicy, Mutating, ValidatingPolicy and
// ValidatingWebhook plugins go at the ends of the chain's phases, in
// kube-apiserver's order. Each webhook call and policy binding of a request
// is recorded in its audit.AnnotationDynamicAdmission annotation.
type Plugins struct {
	mutatingPolicy    *policymutating.Plugin
	mutatingWebhook   *mutating.Plugin
	validatingWebhook *webhookvalidating.Plugin
	validatingPolicy  *policyvalidating.Plugin
	objects           *objectInterfaces
	// bindings finds the policy bindings a request meets; set by Start.
	bindings *policyBindings
	// services explains webhook calls that never left for their Service;
	// set by Start.
	services *webhookServices
	// started is set once Start has wired and synced the plugins; ready
	// closes then.
	started atomic.Bool
	ready   chan struct{}
	// disabled lets every request pass without the plugins (Disable).
	disabled atomic.Bool
	// resolver finds a webhook Service's ready endpoint; set by Start.
	resolver atomic.Pointer[serviceResolver]
}

// ServiceResolver resolves a webhook's Service to a ready endpoint through
// the plugins' informers, for other webhooks of the server (a CRD's
// conversion webhook); before Start it answers that it is not ready.
func (p *Plugins) ServiceResolver() webhookutil.ServiceResolver { return lazyResolver{p} }

type lazyResolver struct{ p *Plugins }

// ResolveEndpoint implements webhookutil.ServiceResolver.
func (l lazyResolver) ResolveEndpoint(namespace, name string, port int32) (*url.URL, error) {
	r := l.p.resolver.Load()
	if r == nil {
		return nil, fmt.Errorf("service %s/%s: webhook services are not resolved yet: the server is starting", namespace, name)
	}
	return r.ResolveEndpoint(namespace, name, port)
}

// ReadyWait is how long a request waits for the plugins to start before it
// is refused, as k8s.io/apiserver's webhook and policy plugins wait for
// their caches (WaitForReady) before answering "not yet ready to handle
// request". Tests shorten it.
var ReadyWait = 10 * time.Second

// Disable makes the plugins pass every request without judging it until
// Start, for an API server that may never start them (tests of other
// parts).
func (p *Plugins) Disable() { p.disabled.Store(true) }

type bootstrapKey struct{}

// idle reports that a step has nothing to run: the plugins started and
// count, the configurations that could make it act (webhook
// configurations, policy bindings), says there are none. The chain then
// skips the step, and the work of recording its patch; kube-apiserver's
// plugins do nothing in that case either. Before the start a step is not
// idle, so that its gate holds requests until the configurations are known.
func (p *Plugins) idle(count func() (int, error)) bool {
	if !p.started.Load() {
		return false
	}
	n, err := count()
	return err == nil && n == 0
}

// Bootstrapping marks ctx as the API server's own bootstrap, whose writes
// (the built-in namespaces, roles, the kubernetes Service) come before the
// plugins can start (they read their configuration through the API this
// bootstrap prepares): such writes do not wait for them.
func Bootstrapping(ctx context.Context) context.Context {
	return context.WithValue(ctx, bootstrapKey{}, true)
}

// Ready is closed once Start has synced the plugins.
func (p *Plugins) Ready() <-chan struct{} { return p.ready }

// gate tells a step whether to run the plugins on a: yes once they started;
// no, with nothing refused, when they are disabled or a writes a webhook
// configuration or an admission policy (which must stay writable to mend
// a broken one, as upstream exempts them); otherwise it waits up to
// ReadyWait for the start and refuses a with 403 when none came: a write
// must not pass webhooks and policies merely because the server restarted.
func (p *Plugins) gate(ctx context.Context, a *admission.Attributes) (bool, error) {
	if p.started.Load() {
		return true, nil
	}
	if p.disabled.Load() || a.Resource.Group == "admissionregistration.k8s.io" || ctx.Value(bootstrapKey{}) != nil {
		return false, nil
	}
	t := time.NewTimer(ReadyWait)
	defer t.Stop()
	select {
	case <-p.ready:
		return true, nil
	case <-t.C:
	case <-ctx.Done():
	}
	return false, apierrors.NewForbidden(a.Resource.GroupResource(), a.Name, errors.New("not yet ready to handle request"))
}

// New returns the plugins, idle until Start.
func New() (*Plugins, error) {
	mw, err := mutating.NewMutatingWebhook(nil)
	if err != nil {
		return nil, fmt.Errorf("failed to create the %s plugin: %w", MutatingWebhookName, err)
	}
	vw, err := webhookvalidating.NewValidatingAdmissionWebhook(nil)
	if err != nil {
		return nil, fmt.Errorf("failed to create the %s plugin: %w", ValidatingWebhookName, err)
	}
	vp, err := policyvalidating.NewPlugin(nil)
	if err != nil {
		return nil, fmt.Errorf("failed to create the %s plugin: %w", ValidatingPolicyName, err)
	}
	mp, err := policymutating.NewPlugin(nil)
	if err != nil {
		return nil, fmt.Errorf("failed to create the %s plugin: %w", MutatingPolicyName, err)
	}
	// kube-apiserver enables it with its MutatingAdmissionPolicy feature
	// gate (on by default since v1.36, with the v1 API).
	mp.SetEnabled(true)
	return &Plugins{mutatingPolicy: mp, mutatingWebhook: mw, validatingWebhook: vw, validatingPolicy: vp, objects: newObjectInterfaces(), ready: make(chan struct{})}, nil
}

// RegisterKind tells the plugins the kind a built-in resource (or
// subresource) holds, for webhook rules' matchPolicy Equivalent and
// policies' matching: every version of a group/resource is equivalent.
func (p *Plugins) RegisterKind(gvr schema.GroupVersionResource, subresource string, gvk schema.GroupVersionKind) {
	p.objects.kinds.register(ResourceKind{Resource: gvr, Subresource: subresource, Kind: gvk})
}

// SetCustomResource replaces what the plugins know of the custom resource
// gr (a CRD's group and plural): the kinds its served versions and their
// subresources hold, and convert, the CRD's converter between its
// versions, with which an object is sent to a webhook or policy matched
// through another version, as kube-apiserver does. No kinds: it is no
// longer served.
func (p *Plugins) SetCustomResource(gr schema.GroupResource, kinds []ResourceKind, convert runtime.ObjectConvertor) {
	p.objects.kinds.setCustom(gr, kinds, convert)
}

// Start wires the plugins to deps, starts their informers and waits for
// their caches; admission uses them from then until ctx ends.
func (p *Plugins) Start(ctx context.Context, deps Deps) error {
	if deps.Client == nil || deps.Dynamic == nil || deps.RESTMapper == nil || deps.Authorizer == nil {
		return errors.New("failed to start dynamic admission: a client, dynamic client, REST mapper and authorizer are required")
	}
	factory := informers.NewSharedInformerFactory(deps.Client, 0)
	resolver := newServiceResolver(factory)
	for _, w := range []interface {
		SetExternalKubeClientSet(kubernetes.Interface)
		SetExternalKubeInformerFactory(informers.SharedInformerFactory)
		SetDrainedNotification(<-chan struct{})
	}{p.mutatingPolicy, p.mutatingWebhook, p.validatingWebhook, p.validatingPolicy} {
		w.SetExternalKubeClientSet(deps.Client)
		w.SetExternalKubeInformerFactory(factory)
		w.SetDrainedNotification(ctx.Done())
	}
	p.mutatingWebhook.SetServiceResolver(resolver)
	p.validatingWebhook.SetServiceResolver(resolver)
	p.resolver.Store(resolver)
	p.mutatingWebhook.SetAuthenticationInfoResolverWrapper(stageResolver)
	p.validatingWebhook.SetAuthenticationInfoResolverWrapper(stageResolver)
	for _, policy := range []interface {
		SetRESTMapper(meta.RESTMapper)
		SetDynamicClient(dynamic.Interface)
		SetUnconditionalAuthorizer(authorizer.UnconditionalAuthorizer)
	}{p.validatingPolicy, p.mutatingPolicy} {
		policy.SetRESTMapper(deps.RESTMapper)
		policy.SetDynamicClient(deps.Dynamic)
		policy.SetUnconditionalAuthorizer(deps.Authorizer)
	}
	admissionregistration := factory.Admissionregistration().V1()
	p.services = &webhookServices{
		mutating:   admissionregistration.MutatingWebhookConfigurations().Lister(),
		validating: admissionregistration.ValidatingWebhookConfigurations().Lister(),
		resolver:   resolver,
	}
	p.bindings = &policyBindings{
		matcher:     generic.NewPolicyMatcher(matching.NewMatcher(factory.Core().V1().Namespaces().Lister(), deps.Client)),
		validating:  admissionregistration.ValidatingAdmissionPolicies().Lister(),
		vBindings:   admissionregistration.ValidatingAdmissionPolicyBindings().Lister(),
		mutating:    admissionregistration.MutatingAdmissionPolicies().Lister(),
		mBindings:   admissionregistration.MutatingAdmissionPolicyBindings().Lister(),
		objectIface: p.objects,
	}
	for name, v := range map[string]k8sadmission.InitializationValidator{
		MutatingWebhookName: p.mutatingWebhook, ValidatingWebhookName: p.validatingWebhook,
		ValidatingPolicyName: p.validatingPolicy, MutatingPolicyName: p.mutatingPolicy,
	} {
		if err := v.ValidateInitialization(); err != nil {
			return fmt.Errorf("failed to initialize the %s plugin: %w", name, err)
		}
	}
	factory.Start(ctx.Done())
	for typ, ok := range factory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			return fmt.Errorf("failed to sync the dynamic admission informer of %v", typ)
		}
	}
	p.disabled.Store(false)
	if p.started.CompareAndSwap(false, true) {
		close(p.ready)
	}
	return nil
}

// MutatingPolicy is the MutatingAdmissionPolicy step of the chain.
func (p *Plugins) MutatingPolicy() admission.MutationInterface { return mutatingPolicyStep{p} }

// Mutating is the MutatingAdmissionWebhook step of the chain.
func (p *Plugins) Mutating() admission.MutationInterface { return mutatingStep{p} }

// ValidatingPolicy is the ValidatingAdmissionPolicy step of the chain.
func (p *Plugins) ValidatingPolicy() admission.ValidationInterface {
	return validatingStep{p: p, name: ValidatingPolicyName, plugin: p.validatingPolicy}
}

// ValidatingWebhook is the ValidatingAdmissionWebhook step of the chain.
func (p *Plugins) ValidatingWebhook() admission.ValidationInterface {
	return validatingStep{p: p, name: ValidatingWebhookName, plugin: p.validatingWebhook}
}

type mutatingPolicyStep struct{ p *Plugins }

func (mutatingPolicyStep) Name() string { return MutatingPolicyName }

// Handles implements admission.Handler.
func (m mutatingPolicyStep) Handles(a *admission.Attributes) bool {
	return !m.p.disabled.Load() && m.p.mutatingPolicy.Handles(k8sadmission.Operation(a.Operation)) &&
		!m.p.idle(m.configured)
}

// configured counts the MutatingAdmissionPolicy bindings.
func (m mutatingPolicyStep) configured() (int, error) {
	l, err := m.p.bindings.mBindings.List(labels.Everything())
	return len(l), err
}

// Admit runs the mutating policies; their patched object replaces
// a.Object's content in place.
func (m mutatingPolicyStep) Admit(ctx context.Context, a *admission.Attributes) error {
	if !m.Handles(a) {
		return nil
	}
	if run, err := m.p.gate(ctx, a); !run {
		return err
	}
	attrs := newAttributes(a)
	matched := m.p.bindings.mutatingMatches(attrs)
	if len(matched) == 0 {
		// No binding applies: the plugin has nothing to do.
		return m.p.mutatingPolicy.Admit(ctx, attrs, m.p.objects)
	}
	before, _ := json.Marshal(a.Object)
	start := time.Now()
	err := m.p.mutatingPolicy.Admit(ctx, attrs, m.p.objects)
	took := time.Since(start)
	var patch json.RawMessage
	if after, _ := json.Marshal(a.Object); err == nil && !bytes.Equal(before, after) {
		if p, perr := admission.CreateJSONPatch(before, after); perr == nil {
			patch = json.RawMessage(p)
		}
		err = normalize(a)
	}
	a.AuditAnnotations = appendAnnotations(a.AuditAnnotations, attrs.annotations)
	// On the reinvocation pass the plugin applies only the IfNeeded
	// bindings whose object changed after them, and does not say which:
	// that pass is recorded only when it changed or refused the object.
	if !a.Reinvocation.IsReinvoke() || err != nil || patch != nil {
		appendStages(a, policyStages(KindMutatingAdmissionPolicy, matched, took, err, patch))
	}
	return err
}

type mutatingStep struct{ p *Plugins }

func (mutatingStep) Name() string { return MutatingWebhookName }

// Handles implements admission.Handler.
func (m mutatingStep) Handles(a *admission.Attributes) bool {
	return !m.p.disabled.Load() && m.p.mutatingWebhook.Handles(k8sadmission.Operation(a.Operation)) &&
		!m.p.idle(m.configured)
}

// configured counts the MutatingWebhookConfigurations.
func (m mutatingStep) configured() (int, error) {
	l, err := m.p.services.mutating.List(labels.Everything())
	return len(l), err
}

// Admit runs the mutating webhooks; a patched object replaces a.Object's
// content in place.
func (m mutatingStep) Admit(ctx context.Context, a *admission.Attributes) error {
	if !m.Handles(a) {
		return nil
	}
	if run, err := m.p.gate(ctx, a); !run {
		return err
	}
	attrs := newAttributes(a)
	ctx, calls := withWebhookCalls(ctx)
	err := m.p.mutatingWebhook.Admit(ctx, attrs, m.p.objects)
	a.AuditAnnotations = appendAnnotations(a.AuditAnnotations, attrs.annotations)
	stages := calls.finish(KindMutatingWebhook, attrs.annotations, err, m.p.services.whyNotCalled)
	appendStages(a, stages)
	if err != nil {
		return err
	}
	for _, st := range stages {
		if st.Result == ResultPatched {
			return normalize(a)
		}
	}
	return nil
}

// normalize gives a mutated object the resource's defaults and prunes what
// its schema does not declare (a custom resource's), as kube-apiserver
// does when it converts the mutated object back; nothing else is touched.
func normalize(a *admission.Attributes) error {
	if a.Normalize == nil || a.Object == nil {
		return nil
	}
	if err := a.Normalize(a.Object); err != nil {
		return apierrors.NewBadRequest(fmt.Sprintf("the object after mutating admission is not valid for its schema: %v", err))
	}
	return nil
}

type validatingStep struct {
	p      *Plugins
	name   string
	plugin interface {
		Handles(k8sadmission.Operation) bool
		Validate(context.Context, k8sadmission.Attributes, k8sadmission.ObjectInterfaces) error
	}
}

func (v validatingStep) Name() string { return v.name }

// configured counts what could make the step act: the
// ValidatingAdmissionPolicy bindings, or the
// ValidatingWebhookConfigurations.
func (v validatingStep) configured() (int, error) {
	if v.name == ValidatingPolicyName {
		l, err := v.p.bindings.vBindings.List(labels.Everything())
		return len(l), err
	}
	l, err := v.p.services.validating.List(labels.Everything())
	return len(l), err
}

// Validate runs the policies or the validating webhooks.
func (v validatingStep) Validate(ctx context.Context, a *admission.Attributes) error {
	if v.p.disabled.Load() || !v.plugin.Handles(k8sadmission.Operation(a.Operation)) || v.p.idle(v.configured) {
		return nil
	}
	if run, err := v.p.gate(ctx, a); !run {
		return err
	}
	attrs := newAttributes(a)
	if v.name == ValidatingPolicyName {
		matched := v.p.bindings.validatingMatches(attrs)
		start := time.Now()
		err := v.plugin.Validate(ctx, attrs, v.p.objects)
		a.AuditAnnotations = appendAnnotations(a.AuditAnnotations, attrs.annotations)
		appendStages(a, policyStages(KindValidatingAdmissionPolicy, matched, time.Since(start), err, nil))
		return err
	}
	ctx, calls := withWebhookCalls(ctx)
	err := v.plugin.Validate(ctx, attrs, v.p.objects)
	a.AuditAnnotations = appendAnnotations(a.AuditAnnotations, attrs.annotations)
	appendStages(a, calls.finish(KindValidatingWebhook, attrs.annotations, err, v.p.services.whyNotCalled))
	return err
}

// attributes is k8s.io/apiserver's view of one admission request. It keeps
// the audit annotations the plugins add (which webhook mutated, its patch,
// a policy's failure) for the chain's record.
type attributes struct {
	k8sadmission.Attributes
	mu           sync.Mutex
	annotations  map[string]string
	reinvocation *admission.Reinvocation
}

// GetReinvocationContext implements admission.Attributes with the request's
// own, which lasts across the plugins and the chain's passes.
func (a *attributes) GetReinvocationContext() k8sadmission.ReinvocationContext {
	return a.reinvocation
}

func newAttributes(a *admission.Attributes) *attributes {
	var options runtime.Object
	switch a.Operation {
	case admission.Create:
		options = &metav1.CreateOptions{TypeMeta: metav1.TypeMeta{APIVersion: "meta.k8s.io/v1", Kind: "CreateOptions"}}
	case admission.Update:
		options = &metav1.UpdateOptions{TypeMeta: metav1.TypeMeta{APIVersion: "meta.k8s.io/v1", Kind: "UpdateOptions"}}
	case admission.Delete:
		options = &metav1.DeleteOptions{TypeMeta: metav1.TypeMeta{APIVersion: "meta.k8s.io/v1", Kind: "DeleteOptions"}}
	}
	if a.DryRun {
		switch o := options.(type) {
		case *metav1.CreateOptions:
			o.DryRun = []string{metav1.DryRunAll}
		case *metav1.UpdateOptions:
			o.DryRun = []string{metav1.DryRunAll}
		case *metav1.DeleteOptions:
			o.DryRun = []string{metav1.DryRunAll}
		}
	}
	info := &user.DefaultInfo{Name: a.UserName, UID: a.UserUID, Groups: a.UserGroups, Extra: a.UserExtra}
	return &attributes{Attributes: k8sadmission.NewAttributesRecord(a.Object, a.OldObject, a.Kind, a.Namespace, a.Name,
		a.Resource, a.Subresource, k8sadmission.Operation(a.Operation), options, a.DryRun, info), reinvocation: &a.Reinvocation}
}

// AddAnnotation implements admission.Attributes.
func (a *attributes) AddAnnotation(key, value string) error {
	return a.AddAnnotationWithLevel(key, value, auditinternal.LevelMetadata)
}

// AddAnnotationWithLevel implements admission.Attributes.
func (a *attributes) AddAnnotationWithLevel(key, value string, level auditinternal.Level) error {
	if err := a.Attributes.AddAnnotationWithLevel(key, value, level); err != nil {
		return err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.annotations == nil {
		a.annotations = map[string]string{}
	}
	a.annotations[key] = value
	return nil
}

// appendAnnotations adds the plugins' annotations to the chain's, in key order.
func appendAnnotations(to map[string]string, from map[string]string) map[string]string {
	if len(from) == 0 {
		return to
	}
	if to == nil {
		to = map[string]string{}
	}
	keys := make([]string, 0, len(from))
	for k := range from {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		to[k] = from[k]
	}
	return to
}
