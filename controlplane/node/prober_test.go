package node

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func TestProbeCounterThresholds(t *testing.T) {
	tests := []struct {
		name             string
		initial          bool
		unknown          bool
		success, failure int
		results          []bool
		want             []bool // reported after each result
	}{
		{"readiness starts failed, one success", false, false, 1, 3, []bool{true}, []bool{true}},
		{"three failures to fail", true, false, 1, 3, []bool{false, false, false}, []bool{true, true, false}},
		{"a success resets the failure run", true, false, 1, 3, []bool{false, false, true, false, false, false}, []bool{true, true, true, true, true, false}},
		{"two successes to recover", false, false, 2, 1, []bool{true, false, true, true}, []bool{false, false, false, true}},
		{"startup fails after its threshold", false, true, 1, 2, []bool{false, false}, []bool{false, false}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := probeCounter{success: tc.success, failure: tc.failure, reported: tc.initial, unknown: tc.unknown}
			for i, r := range tc.results {
				got, changed := c.record(r)
				if got != tc.want[i] {
					t.Fatalf("after result %d (%v): reported %v, want %v", i, r, got, tc.want[i])
				}
				prev := tc.initial
				if i > 0 {
					prev = tc.want[i-1]
				}
				wantChanged := got != prev
				if tc.unknown {
					// An unknown start reports once the threshold is reached.
					wantChanged = i == len(tc.results)-1
				}
				if changed != wantChanged {
					t.Errorf("after result %d: changed = %v, want %v", i, changed, wantChanged)
				}
			}
		})
	}
}

func TestNewProbeSpecDefaults(t *testing.T) {
	s := newProbeSpec(probeLiveness, &corev1.Probe{})
	if s.period != 10*time.Second || s.timeout != time.Second || s.success != 1 || s.failure != 3 || s.initialDelay != 0 {
		t.Errorf("defaults = %+v, want Kubernetes' (10s, 1s, 1, 3, 0)", s)
	}
	if newProbeSpec(probeLiveness, nil) != nil {
		t.Error("a missing probe has a spec")
	}
}

func TestResolvePort(t *testing.T) {
	c := corev1.Container{Name: "web", Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}}}
	tests := []struct {
		port    intstr.IntOrString
		want    int
		wantErr string
	}{
		{intstr.FromInt32(80), 80, ""},
		{intstr.FromString("http"), 8080, ""},
		{intstr.FromString("9090"), 9090, ""},
		{intstr.FromString("metrics"), 0, "couldn't find port: metrics in web"},
		{intstr.FromInt32(0), 0, "invalid port number: 0"},
	}
	for _, tc := range tests {
		got, err := resolvePort(tc.port, c)
		if tc.wantErr != "" {
			if err == nil || err.Error() != tc.wantErr {
				t.Errorf("resolvePort(%v) error = %v, want %q", tc.port.String(), err, tc.wantErr)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("resolvePort(%v) = %d, %v; want %d", tc.port.String(), got, err, tc.want)
		}
	}
}

func TestHTTPGetHandler(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.UserAgent() != probeUserAgent || r.Header.Get("X-Probe") != "yes" {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		switch r.URL.Path {
		case "/ok":
			w.WriteHeader(http.StatusOK)
		case "/moved":
			http.Redirect(w, r, "http://elsewhere.invalid/", http.StatusFound)
		default:
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	}))
	defer srv.Close()
	u, _ := url.Parse(srv.URL)
	host, portStr, _ := net.SplitHostPort(u.Host)
	port, _ := strconv.Atoi(portStr)
	target := probeTarget{podIP: host}
	headers := []corev1.HTTPHeader{{Name: "X-Probe", Value: "yes"}}
	tests := []struct {
		path    string
		wantErr string
	}{
		{"/ok", ""},
		{"moved", ""},
		{"/down", "HTTP probe failed with statuscode: 503"},
	}
	for _, tc := range tests {
		err := httpGetHandler(context.Background(), target, &corev1.HTTPGetAction{Path: tc.path, Port: intstr.FromInt32(int32(port)), HTTPHeaders: headers})
		if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || err.Error() != tc.wantErr) {
			t.Errorf("GET %s: %v, want %q", tc.path, err, tc.wantErr)
		}
	}
	srv.Close()
	err := httpGetHandler(context.Background(), target, &corev1.HTTPGetAction{Path: "/ok", Port: intstr.FromInt32(int32(port))})
	if err == nil || !strings.Contains(err.Error(), "connection refused") {
		t.Errorf("GET on a closed port: %v, want connection refused", err)
	}
}

func TestTCPSocketHandler(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	target := probeTarget{podIP: "127.0.0.1"}
	action := &corev1.TCPSocketAction{Port: intstr.FromInt32(int32(port))}
	if err := tcpSocketHandler(context.Background(), target, action); err != nil {
		t.Errorf("open port: %v", err)
	}
	ln.Close()
	if err := tcpSocketHandler(context.Background(), target, action); err == nil || !strings.HasPrefix(err.Error(), "dial tcp 127.0.0.1:") {
		t.Errorf("closed port: %v, want kubelet's dial error", err)
	}
}

// TestSimulatedNodeProbesAndInitContainers: on a simulated node probes
// pass (after their initial delay) and init containers complete in order
// before the app container starts.
func TestSimulatedNodeProbesAndInitContainers(t *testing.T) {
	h := startAgent(t, simRuntime(), nil)
	pod := newPod("probed", corev1.RestartPolicyAlways, "nginx:1.27")
	pod.Spec.InitContainers = []corev1.Container{{Name: "init-a", Image: "busybox:1"}, {Name: "init-b", Image: "busybox:1"}}
	pod.Spec.Containers[0].ReadinessProbe = &corev1.Probe{
		ProbeHandler:  corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Port: intstr.FromInt32(80)}},
		PeriodSeconds: 1, InitialDelaySeconds: 1,
	}
	h.createPod(t, pod)
	sawUnready := false
	eventually(t, "the pod initialized and ready", func() (bool, string) {
		p := h.getPod(t, "probed")
		var ready, initialized corev1.ConditionStatus
		for _, c := range p.Status.Conditions {
			switch c.Type {
			case corev1.PodReady:
				ready = c.Status
			case corev1.PodInitialized:
				initialized = c.Status
			}
		}
		if p.Status.Phase == corev1.PodRunning && ready == corev1.ConditionFalse {
			sawUnready = true
		}
		if len(p.Status.InitContainerStatuses) != 2 {
			return false, "no init container statuses"
		}
		a, b := p.Status.InitContainerStatuses[0].State.Terminated, p.Status.InitContainerStatuses[1].State.Terminated
		if a == nil || b == nil {
			return false, "init containers not terminated"
		}
		if b.StartedAt.Before(&a.FinishedAt) {
			t.Fatalf("init-b started %s before init-a finished %s", b.StartedAt, a.FinishedAt)
		}
		return ready == corev1.ConditionTrue && initialized == corev1.ConditionTrue, string(p.Status.Phase) + " ready " + string(ready)
	})
	if !sawUnready {
		t.Error("the pod was never Running and unready during the readiness probe's initial delay")
	}
}
