package dynamic

import (
	"fmt"
	"net"
	"net/url"
	"strconv"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	admissionregistrationlisters "k8s.io/client-go/listers/admissionregistration/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	discoverylisters "k8s.io/client-go/listers/discovery/v1"
)

// serviceResolver finds a webhook's Service at one of its ready endpoints,
// as kube-aggregator's endpoint resolver does (kube-apiserver with
// --enable-aggregator-routing): the API server then needs no route to
// cluster IPs. The webhook's TLS server name stays <service>.<namespace>.svc.
type serviceResolver struct {
	services corelisters.ServiceLister
	slices   discoverylisters.EndpointSliceLister
}

func newServiceResolver(f informers.SharedInformerFactory) *serviceResolver {
	return &serviceResolver{
		services: f.Core().V1().Services().Lister(),
		slices:   f.Discovery().V1().EndpointSlices().Lister(),
	}
}

// ResolveEndpoint implements webhookutil.ServiceResolver.
func (r *serviceResolver) ResolveEndpoint(namespace, name string, port int32) (*url.URL, error) {
	svc, err := r.services.Services(namespace).Get(name)
	if err != nil {
		return nil, err
	}
	if svc.Spec.Type == corev1.ServiceTypeExternalName {
		return &url.URL{Scheme: "https", Host: net.JoinHostPort(svc.Spec.ExternalName, strconv.Itoa(int(port)))}, nil
	}
	var svcPort *corev1.ServicePort
	for i := range svc.Spec.Ports {
		if svc.Spec.Ports[i].Port == port {
			svcPort = &svc.Spec.Ports[i]
			break
		}
	}
	if svcPort == nil {
		return nil, fmt.Errorf("no service port %d found for service %q", port, name)
	}
	slices, err := r.slices.EndpointSlices(namespace).List(labels.SelectorFromSet(labels.Set{discoveryv1.LabelServiceName: name}))
	if err != nil {
		return nil, err
	}
	for _, slice := range slices {
		var target int32 = -1
		for _, p := range slice.Ports {
			if p.Port != nil && ptrString(p.Name) == svcPort.Name {
				target = *p.Port
				break
			}
		}
		if target < 0 {
			continue
		}
		for _, ep := range slice.Endpoints {
			if ep.Conditions.Ready != nil && !*ep.Conditions.Ready {
				continue
			}
			if len(ep.Addresses) > 0 {
				return &url.URL{Scheme: "https", Host: net.JoinHostPort(ep.Addresses[0], strconv.Itoa(int(target)))}, nil
			}
		}
	}
	return nil, apierrors.NewServiceUnavailable(fmt.Sprintf("no endpoints available for service %q", name))
}

func ptrString(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// webhookServices explains, for the audit stages, a call that never
// reached a webhook reached through a Service: k8s.io/apiserver resolves
// the Service to an endpoint in a transport outside the one stageTransport
// watches, so a Service without a ready endpoint fails the call unseen.
type webhookServices struct {
	mutating   admissionregistrationlisters.MutatingWebhookConfigurationLister
	validating admissionregistrationlisters.ValidatingWebhookConfigurationLister
	resolver   *serviceResolver
}

// whyNotCalled resolves the Service of st's webhook again and returns why
// it has no endpoint to call, or "" when it has one or st's webhook has a
// url. (The endpoint may have become ready since the call: then nothing is
// said.)
func (w *webhookServices) whyNotCalled(st Stage) string {
	var svc *admissionregistrationv1.ServiceReference
	switch st.Kind {
	case KindMutatingWebhook:
		if c, err := w.mutating.Get(st.Configuration); err == nil {
			for _, h := range c.Webhooks {
				if h.Name == st.Name {
					svc = h.ClientConfig.Service
				}
			}
		}
	case KindValidatingWebhook:
		if c, err := w.validating.Get(st.Configuration); err == nil {
			for _, h := range c.Webhooks {
				if h.Name == st.Name {
					svc = h.ClientConfig.Service
				}
			}
		}
	}
	if svc == nil {
		return ""
	}
	port := int32(443)
	if svc.Port != nil {
		port = *svc.Port
	}
	if _, err := w.resolver.ResolveEndpoint(svc.Namespace, svc.Name, port); err != nil {
		return err.Error()
	}
	return ""
}
