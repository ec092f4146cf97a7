package apiserver

import (
	"context"
	"fmt"

	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"

	dynamicadmission "github.com/glassplane/glassplane/controlplane/apiserver/admission/dynamic"
	"github.com/glassplane/glassplane/controlplane/apiserver/auth"
)

// dynamicAdmission are the server's admission webhooks and policies.
type dynamicAdmission = *dynamicadmission.Plugins

// newDynamicAdmission creates the webhook and policy plugins and tells them
// the kind of every built-in resource and subresource (the CRD registry
// tells them those of custom resources).
func (s *Server) newDynamicAdmission() (dynamicAdmission, error) {
	p, err := dynamicadmission.New()
	if err != nil {
		return nil, err
	}
	for _, res := range s.resources {
		for _, k := range resourceKinds(res) {
			p.RegisterKind(k.Resource, k.Subresource, k.Kind)
		}
	}
	return p, nil
}

// resourceKinds lists the kinds res and its subresources hold (a
// subresource without its own kind holds the resource's), for webhooks and
// policies matched through an equivalent version.
func resourceKinds(res *resource) []dynamicadmission.ResourceKind {
	gvr := res.GroupVersionResource()
	out := []dynamicadmission.ResourceKind{{Resource: gvr, Kind: res.GVK}}
	for _, sub := range res.Subresources {
		kind := res.GVK
		if sub.Kind.Kind != "" {
			kind = sub.Kind
		}
		out = append(out, dynamicadmission.ResourceKind{Resource: gvr, Subresource: sub.Name, Kind: kind})
	}
	return out
}

// RunDynamicAdmission runs the admission webhooks and policies until ctx
// ends. cfg is the API server's loopback client configuration (kube-apiserver
// reads its webhook configurations, policies and their parameters through
// one): the plugins list and watch through it, so only this server touches
// storage. Until their caches sync, writes wait for them and are refused
// after dynamic.ReadyWait (unless Config.NoDynamicAdmission).
func (s *Server) RunDynamicAdmission(ctx context.Context, cfg *rest.Config) error {
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("failed to create the admission plugins' client: %w", err)
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("failed to create the admission plugins' dynamic client: %w", err)
	}
	disco, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return fmt.Errorf("failed to create the admission plugins' discovery client: %w", err)
	}
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(disco))
	if err := s.dynamic.Start(ctx, dynamicadmission.Deps{
		Client: client, Dynamic: dyn, RESTMapper: mapper, Authorizer: policyAuthorizer{s},
	}); err != nil {
		return err
	}
	s.log.Info("admission webhooks and policies started")
	<-ctx.Done()
	return nil
}

// policyAuthorizer answers ValidatingAdmissionPolicies' authorizer checks
// with the server's own authorizer.
type policyAuthorizer struct{ s *Server }

// Authorize implements authorizer.UnconditionalAuthorizer.
func (a policyAuthorizer) Authorize(ctx context.Context, attrs authorizer.Attributes) (authorizer.Decision, string, error) {
	var u *auth.User
	if info := attrs.GetUser(); info != nil {
		u = &auth.User{Name: info.GetName(), UID: info.GetUID(), Groups: info.GetGroups(), Extra: info.GetExtra()}
	}
	d, reason, err := a.s.authz.Authorize(ctx, auth.Attributes{
		User: u, Verb: attrs.GetVerb(), ResourceRequest: attrs.IsResourceRequest(), Path: attrs.GetPath(),
		APIGroup: attrs.GetAPIGroup(), APIVersion: attrs.GetAPIVersion(), Namespace: attrs.GetNamespace(),
		Resource: attrs.GetResource(), Subresource: attrs.GetSubresource(), Name: attrs.GetName(),
	})
	switch d {
	case auth.DecisionAllow:
		return authorizer.DecisionAllow, reason, err
	case auth.DecisionDeny:
		return authorizer.DecisionDeny, reason, err
	}
	return authorizer.DecisionNoOpinion, reason, err
}
