package apiserver_test

import (
	"fmt"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// hostIP is an IPv4 address of this machine that is not loopback: pod and
// service proxies refuse loopback backends, as upstream's do.
func hostIP(t *testing.T) string {
	t.Helper()
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil && !n.IP.IsLoopback() && !n.IP.IsLinkLocalUnicast() {
			return n.IP.String()
		}
	}
	t.Fatal("no non-loopback IPv4 address on this machine")
	return ""
}

// TestPodAndServiceProxy: pods/<name>:<port>/proxy/<path> and
// services/<name>:<port>/proxy/<path> reach the backend with the path,
// query and method, and a loopback pod IP is refused.
func TestPodAndServiceProxy(t *testing.T) {
	env := shared
	ns := env.namespace(t)
	ctx := ctxT(t)
	ip := hostIP(t)
	ln, err := net.Listen("tcp", net.JoinHostPort(ip, "0"))
	if err != nil {
		t.Fatal(err)
	}
	backend := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/page" {
			w.Header().Set("Content-Type", "text/html")
			fmt.Fprint(w, `<a href="/rewriteme">test</a>`)
			return
		}
		fmt.Fprintf(w, "%s %s?%s auth=%q", r.Method, r.URL.Path, r.URL.RawQuery, r.Header.Get("Authorization"))
	})}
	go backend.Serve(ln)
	t.Cleanup(func() { backend.Close() })
	port := ln.Addr().(*net.TCPAddr).Port

	pods := env.client.CoreV1().Pods(ns)
	pod, err := pods.Create(ctx, testPod("web"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pod.Status.PodIP = ip
	if _, err := pods.UpdateStatus(ctx, pod, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	get := func(method, path string) (int, string) {
		t.Helper()
		resp, body := env.do(t, method, path, "", nil)
		return resp.StatusCode, body
	}
	base := "/api/v1/namespaces/" + ns
	if code, body := get(http.MethodGet, base+"/pods/web:"+strconv.Itoa(port)+"/proxy/hello/there?x=1"); code != 200 || body != `GET /hello/there?x=1 auth=""` {
		t.Errorf("pod proxy: %d %q", code, body)
	}
	if code, body := get(http.MethodPost, base+"/pods/http:web:"+strconv.Itoa(port)+"/proxy/"); code != 200 || body != `POST /? auth=""` {
		t.Errorf("pod proxy POST: %d %q", code, body)
	}
	if code, body := get(http.MethodOptions, base+"/pods/web:"+strconv.Itoa(port)+"/proxy/"); code != 200 || body != `OPTIONS /? auth=""` {
		t.Errorf("pod proxy OPTIONS: %d %q", code, body)
	}
	// GET and HEAD of .../proxy itself are sent to .../proxy/ with a 301,
	// as kube-apiserver's proxy handler does; other methods go through.
	noFollow := *env.http
	noFollow.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	for _, method := range []string{http.MethodGet, http.MethodHead} {
		path := base + "/pods/web:" + strconv.Itoa(port) + "/proxy"
		req, _ := http.NewRequest(method, env.url+path+"?method="+method, nil)
		resp, err := noFollow.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusMovedPermanently || resp.Header.Get("Location") != path+"/?method="+method {
			t.Errorf("%s %s: %d Location %q", method, path, resp.StatusCode, resp.Header.Get("Location"))
		}
	}
	if code, body := get(http.MethodPost, base+"/pods/web:"+strconv.Itoa(port)+"/proxy"); code != 200 || body != `POST /? auth=""` {
		t.Errorf("pod proxy POST without a trailing slash: %d %q", code, body)
	}
	// An HTML answer's links stay under the proxy path, as kube-apiserver
	// rewrites them.
	proxied := base + "/pods/web:" + strconv.Itoa(port) + "/proxy"
	if code, body := get(http.MethodGet, proxied+"/page"); code != 200 || body != `<a href="`+proxied+`/rewriteme">test</a>` {
		t.Errorf("pod proxy of an HTML page: %d %q", code, body)
	}

	if _, err := env.client.CoreV1().Services(ns).Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "http", Port: 80}}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := env.client.DiscoveryV1().EndpointSlices(ns).Create(ctx, &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Name: "web-1", Labels: map[string]string{discoveryv1.LabelServiceName: "web"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{ip}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}}},
		Ports:       []discoveryv1.EndpointPort{{Name: ptr.To("http"), Port: ptr.To(int32(port))}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"web:http", "web:80", "web"} {
		if code, body := get(http.MethodGet, base+"/services/"+name+"/proxy/svc"); code != 200 || body != `GET /svc? auth=""` {
			t.Errorf("service proxy via %s: %d %q", name, code, body)
		}
	}
	if code, _ := get(http.MethodGet, base+"/services/web:nosuchport/proxy/"); code != http.StatusServiceUnavailable {
		t.Errorf("a port the service lacks: %d, want 503", code)
	}

	pod, err = pods.Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pod.Status.PodIP = "127.0.0.1"
	if _, err := pods.UpdateStatus(ctx, pod, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if code, body := get(http.MethodGet, base+"/pods/web:"+strconv.Itoa(port)+"/proxy/"); code != http.StatusBadRequest || !strings.Contains(body, "address not allowed") {
		t.Errorf("a loopback pod IP: %d %s", code, body)
	}
}
