package apiserver

import (
	"crypto/tls"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	utilproxy "k8s.io/apimachinery/pkg/util/proxy"
)

// pods/proxy and services/proxy forward HTTP to a pod's IP, as
// kube-apiserver's do: the name is [scheme:]name[:port] (a Service's port
// by name or number, a pod's by number, else its first container port),
// the rest of the path after /proxy goes to the backend, and every method
// the verb maps to is forwarded. A Service is reached at one of its ready
// endpoints, picked at random. Loopback, link-local and unspecified
// addresses are refused, as upstream's proxy refuses them.

var proxyVerbs = []string{"create", "delete", "get", "patch", "update"}

// proxyMethod reports whether a proxy subresource passes a request of
// this method on: kube-apiserver's proxy methods, GET, HEAD, POST, PUT,
// PATCH, DELETE and OPTIONS (which has no verb of its own).
func proxyMethod(method, verb string) bool {
	return method == http.MethodOptions || containsVerb(proxyVerbs, verb)
}

func podProxySubresource() *subresource {
	return &subresource{Name: "proxy", Kind: corev1.SchemeGroupVersion.WithKind("PodProxyOptions"), Verbs: proxyVerbs, connect: (*request).proxyPod, path: true}
}

func serviceProxySubresource() *subresource {
	return &subresource{Name: "proxy", Kind: corev1.SchemeGroupVersion.WithKind("ServiceProxyOptions"), Verbs: proxyVerbs, connect: (*request).proxyService, path: true}
}

// proxyPod serves pods/<[scheme:]name[:port]>/proxy[/path].
func (q *request) proxyPod() error {
	if !proxyMethod(q.r.Method, q.info.Verb) {
		return apierrors.NewMethodNotSupported(schema.GroupResource{Resource: "pods/proxy"}, q.info.Verb)
	}
	scheme, name, port, ok := utilnet.SplitSchemeNamePort(q.info.Name)
	if !ok {
		return apierrors.NewBadRequest(fmt.Sprintf("invalid pod request %q", q.info.Name))
	}
	obj, err := q.s.getFromStore(q.ctx, q.res, q.info.Namespace, name)
	if err != nil {
		return err
	}
	q.setObjectRef(obj)
	pod := obj.(*corev1.Pod)
	if port == "" {
		for _, c := range pod.Spec.Containers {
			if len(c.Ports) > 0 {
				port = strconv.Itoa(int(c.Ports[0].ContainerPort))
				break
			}
		}
	}
	if pod.Status.PodIP == "" {
		return apierrors.NewServiceUnavailable(fmt.Sprintf("pod %s has no IP address yet", pod.Name))
	}
	host := pod.Status.PodIP
	if port != "" {
		host = net.JoinHostPort(host, port)
	}
	return q.forwardHTTP(scheme, host, "pod "+pod.Name)
}

// proxyService serves services/<[scheme:]name[:port]>/proxy[/path].
func (q *request) proxyService() error {
	if !proxyMethod(q.r.Method, q.info.Verb) {
		return apierrors.NewMethodNotSupported(schema.GroupResource{Resource: "services/proxy"}, q.info.Verb)
	}
	scheme, name, port, ok := utilnet.SplitSchemeNamePort(q.info.Name)
	if !ok {
		return apierrors.NewBadRequest(fmt.Sprintf("invalid service request %q", q.info.Name))
	}
	obj, err := q.s.getFromStore(q.ctx, q.res, q.info.Namespace, name)
	if err != nil {
		return err
	}
	q.setObjectRef(obj)
	svc := obj.(*corev1.Service)
	var sp *corev1.ServicePort
	for i := range svc.Spec.Ports {
		p := &svc.Spec.Ports[i]
		if port == "" && len(svc.Spec.Ports) == 1 || p.Name == port || strconv.Itoa(int(p.Port)) == port {
			sp = p
			break
		}
	}
	if sp == nil {
		return apierrors.NewServiceUnavailable(fmt.Sprintf("no endpoints available for service %q", q.info.Name))
	}
	slicesRes := q.s.byPath[discoveryv1.SchemeGroupVersion.WithResource("endpointslices")]
	objs, err := policyLookups{q.s}.listStored(q.ctx, slicesRes, q.info.Namespace)
	if err != nil {
		return apierrors.NewInternalError(err)
	}
	var hosts []string
	for _, o := range objs {
		slice := o.(*discoveryv1.EndpointSlice)
		if slice.Labels[discoveryv1.LabelServiceName] != svc.Name {
			continue
		}
		for _, ep := range slice.Ports {
			if ep.Port == nil || (ep.Name != nil && *ep.Name != sp.Name) || (ep.Name == nil && sp.Name != "") {
				continue
			}
			for _, e := range slice.Endpoints {
				if e.Conditions.Ready != nil && !*e.Conditions.Ready {
					continue
				}
				for _, a := range e.Addresses {
					hosts = append(hosts, net.JoinHostPort(a, strconv.Itoa(int(*ep.Port))))
				}
			}
		}
	}
	if len(hosts) == 0 {
		return apierrors.NewServiceUnavailable(fmt.Sprintf("no endpoints available for service %q", q.info.Name))
	}
	return q.forwardHTTP(scheme, hosts[rand.IntN(len(hosts))], "service "+svc.Name)
}

// forwardHTTP sends the request's method, the path after /proxy, its
// query and body to scheme://host, and streams the answer back.
func (q *request) forwardHTTP(scheme, host, what string) error {
	h, _, err := net.SplitHostPort(host)
	if err != nil {
		h = host
	}
	if ip, err := netip.ParseAddr(h); err != nil || ip.IsLoopback() || ip.IsLinkLocalUnicast() || ip.IsLinkLocalMulticast() || ip.IsUnspecified() {
		return apierrors.NewBadRequest("address not allowed")
	}
	if scheme == "" {
		scheme = "http"
	}
	if scheme != "http" && scheme != "https" {
		return apierrors.NewBadRequest(fmt.Sprintf("unsupported scheme %q", scheme))
	}
	rest := ""
	if i := strings.Index(q.r.URL.Path, "/"+q.info.Name+"/proxy"); i >= 0 {
		rest = q.r.URL.Path[i+len("/"+q.info.Name+"/proxy"):]
	}
	if rest == "" {
		// A GET or HEAD of .../proxy itself is sent to .../proxy/, as
		// kube-apiserver's proxy handler redirects it (so that relative
		// links in the answer resolve under the proxy path).
		if q.r.Method == http.MethodGet || q.r.Method == http.MethodHead {
			location := q.r.URL.Path + "/"
			if q.r.URL.RawQuery != "" {
				location += "?" + q.r.URL.RawQuery
			}
			q.w.Header().Set("Location", location)
			q.w.WriteHeader(http.StatusMovedPermanently)
			return nil
		}
		rest = "/"
	}
	target := &url.URL{Scheme: scheme, Host: host, Path: rest, RawQuery: q.r.URL.RawQuery}
	transport := &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}
	// Links in an HTML answer are rewritten to stay under the proxy path
	// (href="/x" becomes href="/api/v1/namespaces/ns/pods/p/proxy/x"), as
	// kube-apiserver's proxy transport does.
	suffix := rest
	if strings.HasSuffix(q.r.URL.Path, "/") && !strings.HasSuffix(suffix, "/") {
		suffix += "/"
	}
	rewriting := &utilproxy.Transport{
		Scheme: q.r.URL.Scheme, Host: q.r.URL.Host, PathPrepend: strings.TrimSuffix(q.r.URL.Path, suffix), RoundTripper: transport,
	}
	if err := q.reverseProxyVia(target, transport, rewriting); err != nil {
		return apierrors.NewServiceUnavailable(fmt.Sprintf("error trying to reach %s: %v", what, err))
	}
	return nil
}
