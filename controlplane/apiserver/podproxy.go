package apiserver

import (
	"bufio"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/httpstream/wsstream"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/glassplane/glassplane/controlplane/apiserver/admission"
)

// pods/log, pods/exec, pods/attach and pods/portforward are answered by the pod's node agent, as
// kube-apiserver answers them through the kubelet: the API server finds
// the node's address and port (status.daemonEndpoints.kubeletEndpoint) and
// proxies the request to it with its own client certificate
// (Config.KubeletClient), streaming responses and upgraded connections
// (the websocket exec protocol, SPDY port forwarding) both ways.

func logSubresource() *subresource {
	return &subresource{Name: "log", Verbs: []string{"get"}, connect: (*request).proxyPodLog}
}

func execSubresource() *subresource {
	return &subresource{Name: "exec", Kind: corev1.SchemeGroupVersion.WithKind("PodExecOptions"), Verbs: []string{"create", "get"}, connect: (*request).proxyPodExec}
}

func attachSubresource() *subresource {
	return &subresource{Name: "attach", Kind: corev1.SchemeGroupVersion.WithKind("PodAttachOptions"), Verbs: []string{"create", "get"}, connect: (*request).proxyPodAttach}
}

func portForwardSubresource() *subresource {
	return &subresource{Name: "portforward", Kind: corev1.SchemeGroupVersion.WithKind("PodPortForwardOptions"), Verbs: []string{"create", "get"}, connect: (*request).proxyPodPortForward}
}

// proxyPodPortForward serves GET and POST pods/<name>/portforward (the
// node answers kubelet's SPDY portforward.k8s.io protocol).
func (q *request) proxyPodPortForward() error {
	if q.info.Verb != "get" && q.info.Verb != "create" {
		return apierrors.NewMethodNotSupported(schema.GroupResource{Resource: "pods/portforward"}, q.info.Verb)
	}
	if err := q.admitConnect(&corev1.PodPortForwardOptions{}); err != nil {
		return err
	}
	return q.proxyToNode("portForward")
}

// proxyPodLog serves GET pods/<name>/log.
func (q *request) proxyPodLog() error {
	if q.info.Verb != "get" {
		return apierrors.NewMethodNotSupported(schema.GroupResource{Resource: "pods/log"}, q.info.Verb)
	}
	return q.proxyToNode("containerLogs")
}

// proxyPodExec serves GET and POST pods/<name>/exec.
func (q *request) proxyPodExec() error {
	if q.info.Verb != "get" && q.info.Verb != "create" {
		return apierrors.NewMethodNotSupported(schema.GroupResource{Resource: "pods/exec"}, q.info.Verb)
	}
	if err := q.admitConnect(&corev1.PodExecOptions{}); err != nil {
		return err
	}
	return q.proxyToNode("exec")
}

// proxyPodAttach serves GET and POST pods/<name>/attach.
func (q *request) proxyPodAttach() error {
	if q.info.Verb != "get" && q.info.Verb != "create" {
		return apierrors.NewMethodNotSupported(schema.GroupResource{Resource: "pods/attach"}, q.info.Verb)
	}
	if err := q.admitConnect(&corev1.PodAttachOptions{}); err != nil {
		return err
	}
	return q.proxyToNode("attach")
}

// admitConnect runs admission for a CONNECT to pods/exec, attach or
// portforward, as kube-apiserver's connect handler does: the object is the
// request's options (PodExecOptions, ...) decoded from its query, the kind
// theirs, so that webhooks and policies matching CONNECT can refuse it
// before the node is reached.
func (q *request) admitConnect(opts runtime.Object) error {
	if err := connectOptions(q.r.URL.Query(), opts); err != nil {
		return apierrors.NewBadRequest(err.Error())
	}
	gvks, _, err := scheme.Scheme.ObjectKinds(opts)
	if err != nil {
		return apierrors.NewInternalError(err)
	}
	opts.GetObjectKind().SetGroupVersionKind(gvks[0])
	q.enter(stageAdmission)
	attrs := &admission.Attributes{
		Operation: admission.Connect, Resource: q.res.GroupVersionResource(), Subresource: q.info.Subresource, Kind: gvks[0],
		Namespace: q.info.Namespace, Name: q.info.Name, Object: opts,
		UserName: q.user.Name, UserUID: q.user.UID, UserGroups: q.user.Groups, UserExtra: q.user.Extra,
	}
	steps, err := q.s.admission.Run(q.ctx, attrs)
	q.recordAdmission(steps)
	for k, v := range attrs.AuditAnnotations {
		q.ev.Annotations[k] = v
	}
	return err
}

// proxyToNode sends the request to /<path>/<namespace>/<pod>/<container>
// on the pod's node agent (/<path>/<namespace>/<pod> for portForward).
func (q *request) proxyToNode(path string) error {
	obj, err := q.s.getFromStore(q.ctx, q.res, q.info.Namespace, q.info.Name)
	if err != nil {
		return err
	}
	if q.s.cfg.KubeletClient == nil || q.s.cfg.KubeletClient.TLS == nil {
		return apierrors.NewServiceUnavailable("this API server has no client identity for node agents")
	}
	q.setObjectRef(obj)
	pod := obj.(*corev1.Pod)
	nodePath := "/" + path + "/" + pod.Namespace + "/" + pod.Name
	if path != "portForward" {
		container, err := podContainer(pod, q.r.URL.Query().Get("container"))
		if err != nil {
			return err
		}
		nodePath += "/" + container
	}
	if pod.Spec.NodeName == "" {
		return apierrors.NewBadRequest(fmt.Sprintf("pod %s does not have a host assigned", pod.Name))
	}
	nodes := q.s.byPath[corev1.SchemeGroupVersion.WithResource("nodes")]
	nodeObj, err := q.s.getFromStore(q.ctx, nodes, "", pod.Spec.NodeName)
	if err != nil {
		return err
	}
	query := q.r.URL.Query()
	query.Del("container")
	return q.forwardToNode(nodeObj.(*corev1.Node), nodePath, query)
}

// forwardToNode sends the request to nodePath?query on node's agent with
// the API server's client certificate, streaming both ways. A log asked
// for over a WebSocket is read from the node and sent as the socket's
// messages, as kube-apiserver streams a log to a WebSocket client.
func (q *request) forwardToNode(node *corev1.Node, nodePath string, query url.Values) error {
	host := nodeAddress(node)
	port := node.Status.DaemonEndpoints.KubeletEndpoint.Port
	if host == "" || port <= 0 {
		return apierrors.NewBadRequest(fmt.Sprintf("node %s serves no container logs or exec (its runtime is %s)", node.Name, node.Labels["node.glassplane.io/runtime"]))
	}
	target := &url.URL{
		Scheme:   "https",
		Host:     net.JoinHostPort(host, strconv.Itoa(int(port))),
		Path:     nodePath,
		RawQuery: query.Encode(),
	}
	transport := &http.Transport{TLSClientConfig: q.s.cfg.KubeletClient.TLS.Clone(), ForceAttemptHTTP2: false}
	transport.TLSClientConfig.NextProtos = []string{"http/1.1"}
	if strings.HasPrefix(nodePath, "/containerLogs/") && wsstream.IsWebSocketRequest(q.r) {
		return q.logOverWebSocket(node, target, transport)
	}
	if err := q.reverseProxy(target, transport); err != nil {
		return apierrors.NewServiceUnavailable(fmt.Sprintf("failed to reach node %s: %v", node.Name, err))
	}
	return nil
}

// logOverWebSocket reads the log at target and streams it to the
// client's WebSocket, one message per chunk read, in binary or base64 as
// the client's protocol (binary.k8s.io, base64.binary.k8s.io) asks; the
// socket closes when the log ends. An error from the node is answered
// before the upgrade, as it came.
func (q *request) logOverWebSocket(node *corev1.Node, target *url.URL, transport *http.Transport) error {
	defer transport.CloseIdleConnections()
	req, err := http.NewRequestWithContext(q.ctx, http.MethodGet, target.String(), nil)
	if err != nil {
		return apierrors.NewInternalError(err)
	}
	resp, err := transport.RoundTrip(req)
	if err != nil {
		return apierrors.NewServiceUnavailable(fmt.Sprintf("failed to reach node %s: %v", node.Name, err))
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		for k, v := range resp.Header {
			q.w.Header()[k] = v
		}
		q.w.WriteHeader(resp.StatusCode)
		_, err := io.Copy(q.w, resp.Body)
		return err
	}
	q.w.code = http.StatusSwitchingProtocols
	// bufio hands out the data and the end of the log in separate reads:
	// the body's last read returns both, and the socket's copier drops
	// the data of a read that also says EOF.
	return wsstream.NewReader(bufio.NewReader(resp.Body), true, wsstream.NewDefaultReaderProtocols()).Copy(hijackable{q.w.ResponseWriter}, q.r)
}

// hijackable gives the connection of a wrapped ResponseWriter to a server
// that asks for http.Hijacker itself (golang.org/x/net/websocket).
type hijackable struct{ http.ResponseWriter }

func (h hijackable) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	return http.NewResponseController(h.ResponseWriter).Hijack()
}

// reverseProxy streams the request to target without the client's
// credentials (Authorization, Impersonate-*) and the answer back; it
// returns the error that kept it from reaching target.
func (q *request) reverseProxy(target *url.URL, transport *http.Transport) error {
	return q.reverseProxyVia(target, transport, transport)
}

// reverseProxyVia is reverseProxy through rt, a wrapper of transport.
func (q *request) reverseProxyVia(target *url.URL, transport *http.Transport, rt http.RoundTripper) error {
	defer transport.CloseIdleConnections()
	var proxyErr error
	proxy := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.Out.URL = target
			pr.Out.Host = target.Host
			pr.Out.Header.Del("Authorization")
			for h := range pr.Out.Header {
				if strings.HasPrefix(h, "Impersonate-") {
					pr.Out.Header.Del(h)
				}
			}
		},
		Transport:     rt,
		FlushInterval: -1,
		ErrorHandler: func(_ http.ResponseWriter, _ *http.Request, err error) {
			proxyErr = err
		},
	}
	proxy.ServeHTTP(q.w, q.r.WithContext(q.ctx))
	return proxyErr
}

// podContainer picks the container a request names, or the pod's only
// container, with kube-apiserver's messages.
func podContainer(pod *corev1.Pod, name string) (string, error) {
	var all []string
	for _, c := range pod.Spec.InitContainers {
		all = append(all, c.Name)
	}
	for _, c := range pod.Spec.Containers {
		all = append(all, c.Name)
	}
	for _, c := range pod.Spec.EphemeralContainers {
		all = append(all, c.Name)
	}
	if name == "" {
		if len(pod.Spec.Containers) == 1 {
			return pod.Spec.Containers[0].Name, nil
		}
		return "", apierrors.NewBadRequest(fmt.Sprintf("a container name must be specified for pod %s, choose one of: %v", pod.Name, all))
	}
	for _, c := range all {
		if c == name {
			return name, nil
		}
	}
	return "", apierrors.NewBadRequest(fmt.Sprintf("container %s is not valid for pod %s", name, pod.Name))
}

// nodeAddress is the address the API server reaches a node agent at: its
// InternalIP, else its first address.
func nodeAddress(node *corev1.Node) string {
	for _, a := range node.Status.Addresses {
		if a.Type == corev1.NodeInternalIP {
			return a.Address
		}
	}
	if len(node.Status.Addresses) > 0 {
		return node.Status.Addresses[0].Address
	}
	return ""
}

// KubeletClient is how the API server reaches node agents.
type KubeletClient struct {
	// TLS holds the API server's client certificate (user
	// system:kube-apiserver-kubelet-client) and the CA that signed the
	// node agents' serving certificates.
	TLS *tls.Config
}

// SetKubeletClient sets how the API server reaches node agents; call it
// before the server takes requests.
func (s *Server) SetKubeletClient(c *KubeletClient) { s.cfg.KubeletClient = c }

// connectOptions fills a pods/exec, attach or portforward options object
// from the request's query, as kube-apiserver's parameter codec does.
func connectOptions(query url.Values, opts runtime.Object) error {
	flag := func(name string) (bool, error) {
		v := query.Get(name)
		if v == "" {
			return false, nil
		}
		return strconv.ParseBool(v)
	}
	var errs []error
	get := func(name string) bool {
		b, err := flag(name)
		if err != nil {
			errs = append(errs, fmt.Errorf("invalid %s %q: %w", name, query.Get(name), err))
		}
		return b
	}
	switch o := opts.(type) {
	case *corev1.PodExecOptions:
		o.Stdin, o.Stdout, o.Stderr, o.TTY = get("stdin"), get("stdout"), get("stderr"), get("tty")
		o.Container, o.Command = query.Get("container"), query["command"]
	case *corev1.PodAttachOptions:
		o.Stdin, o.Stdout, o.Stderr, o.TTY = get("stdin"), get("stdout"), get("stderr"), get("tty")
		o.Container = query.Get("container")
	case *corev1.PodPortForwardOptions:
		for _, p := range query["ports"] {
			n, err := strconv.ParseInt(p, 10, 32)
			if err != nil {
				errs = append(errs, fmt.Errorf("invalid port %q: %w", p, err))
				continue
			}
			o.Ports = append(o.Ports, int32(n))
		}
	}
	return errors.Join(errs...)
}
