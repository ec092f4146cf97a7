package node

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/glassplane/glassplane/controlplane/node/runtime"
)

// APIServerClientUser is the identity the API server uses towards node
// agents (kube-apiserver's --kubelet-client-certificate).
const APIServerClientUser = "system:kube-apiserver-kubelet-client"

// DefaultServerPort is the node agent's HTTPS port, kubelet's.
const DefaultServerPort = 10250

// ServerConfig is the node agent's own HTTPS endpoint, where the API server
// reads container logs and runs exec sessions.
type ServerConfig struct {
	// Port to listen on, on every address; 0 picks a free port. The port
	// is reported in the Node's status.daemonEndpoints.kubeletEndpoint.
	Port int
	// Certificate is the server's serving certificate.
	Certificate tls.Certificate
	// ClientCAs verify client certificates.
	ClientCAs *x509.CertPool
	// AllowedUsers are the client certificate common names allowed in
	// (APIServerClientUser when empty); the system:masters group always is.
	AllowedUsers []string
}

// logRuntime is what serving logs needs from a runtime.
type logRuntime interface {
	LogPath(podUID, container string, attempt int) string
}

// execRuntime is what serving exec needs from a runtime.
type execRuntime interface {
	Exec(ctx context.Context, containerID string, opts runtime.ExecOptions) (int, error)
}

// listenServer opens the agent's listener so its port is known before the
// Node is registered.
func (a *Agent) listenServer() error {
	cfg := a.cfg.Server
	if cfg == nil {
		return nil
	}
	ln, err := net.Listen("tcp", net.JoinHostPort("", strconv.Itoa(cfg.Port)))
	if err != nil {
		return fmt.Errorf("failed to listen on node port %d: %w", cfg.Port, err)
	}
	a.listener = ln
	a.serverPort = int32(ln.Addr().(*net.TCPAddr).Port)
	return nil
}

// serve answers the API server on the agent's listener until ctx ends.
func (a *Agent) serve(ctx context.Context) {
	cfg := a.cfg.Server
	allowed := cfg.AllowedUsers
	if len(allowed) == 0 {
		allowed = []string{APIServerClientUser}
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /containerLogs/{namespace}/{pod}/{container}", a.serveLogs)
	mux.HandleFunc("/exec/{namespace}/{pod}/{container}", a.serveExec)
	mux.HandleFunc("/attach/{namespace}/{pod}/{container}", a.serveAttach)
	mux.HandleFunc("/portForward/{namespace}/{pod}", a.servePortForward)
	mux.HandleFunc("GET /glassplane/proxy-rules", a.serveProxyRules)
	mux.HandleFunc("GET /stats/summary", a.serveStatsSummary)
	srv := &http.Server{
		Handler: authorizeClients(allowed, mux),
		TLSConfig: &tls.Config{
			Certificates: []tls.Certificate{cfg.Certificate},
			ClientCAs:    cfg.ClientCAs,
			ClientAuth:   tls.RequireAndVerifyClientCert,
			MinVersion:   tls.VersionTLS12,
			NextProtos:   []string{"http/1.1"},
		},
		ReadHeaderTimeout: 10 * time.Second,
		BaseContext:       func(net.Listener) context.Context { return ctx },
	}
	go func() {
		<-ctx.Done()
		sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		if err := srv.Shutdown(sctx); err != nil {
			srv.Close()
		}
	}()
	a.log.Info("serving logs and exec", "port", a.serverPort)
	if err := srv.ServeTLS(a.listener, "", ""); err != nil && !errors.Is(err, http.ErrServerClosed) {
		a.log.Warn("node server stopped", "err", err)
	}
}

// authorizeClients lets in only the allowed client certificate names (and
// system:masters), answering others as kubelet does.
func authorizeClients(allowed []string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.TLS == nil || len(r.TLS.PeerCertificates) == 0 {
			http.Error(w, "Unauthorized", http.StatusUnauthorized)
			return
		}
		subj := r.TLS.PeerCertificates[0].Subject
		if !slices.Contains(allowed, subj.CommonName) && !slices.Contains(subj.Organization, "system:masters") {
			http.Error(w, fmt.Sprintf("Forbidden (user=%s, verb=%s, resource=nodes, subresource=proxy)", subj.CommonName, r.Method), http.StatusForbidden)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// findContainer resolves a pod container to its runtime instances, oldest
// first, answering the API errors kubelet answers.
func (a *Agent) findContainer(ctx context.Context, namespace, podName, container string) (*corev1.Pod, []runtime.ContainerStatus, error) {
	if a.podLister == nil {
		return nil, nil, apierrors.NewServiceUnavailable("node agent is starting")
	}
	pod, err := a.podLister.Pods(namespace).Get(podName)
	if err != nil {
		return nil, nil, apierrors.NewNotFound(corev1.Resource("pods"), podName)
	}
	known := false
	for _, c := range append(slices.Clone(pod.Spec.InitContainers), pod.Spec.Containers...) {
		known = known || c.Name == container
	}
	for _, c := range pod.Spec.EphemeralContainers {
		known = known || c.Name == container
	}
	if !known {
		return nil, nil, apierrors.NewBadRequest(fmt.Sprintf("container %s is not valid for pod %s", container, podName))
	}
	byName, err := a.containersByName(ctx, pod.UID)
	if err != nil {
		return nil, nil, apierrors.NewInternalError(err)
	}
	return pod, byName[container], nil
}

// serveProxyRules answers, as text, the nftables rules the node's service
// proxy programmed for the Service ?namespace=&name= (namespace default),
// or its whole table without a name.
func (a *Agent) serveProxyRules(w http.ResponseWriter, r *http.Request) {
	if a.cfg.Proxy == nil {
		writeAPIError(w, apierrors.NewNotFound(schema.GroupResource{Resource: "nodes/proxy"}, "glassplane/proxy-rules"))
		return
	}
	namespace, name := r.URL.Query().Get("namespace"), r.URL.Query().Get("name")
	if namespace == "" {
		namespace = corev1.NamespaceDefault
	}
	errs := validation.IsDNS1123Label(namespace)
	if name != "" {
		errs = append(errs, validation.IsDNS1035Label(name)...)
	}
	if len(errs) > 0 {
		writeAPIError(w, apierrors.NewBadRequest(fmt.Sprintf("invalid Service %q in namespace %q: %s", name, namespace, strings.Join(errs, "; "))))
		return
	}
	text, err := a.cfg.Proxy.Rules(r.Context(), namespace, name)
	if err != nil {
		writeAPIError(w, apierrors.NewServiceUnavailable(err.Error()))
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	_, _ = io.WriteString(w, text)
}

func writeAPIError(w http.ResponseWriter, err error) {
	var status apierrors.APIStatus
	code := http.StatusInternalServerError
	if errors.As(err, &status) {
		code = int(status.Status().Code)
	}
	http.Error(w, err.Error(), code)
}
