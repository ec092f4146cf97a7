package node

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	xwebsocket "golang.org/x/net/websocket"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/remotecommand"
	utilexec "k8s.io/client-go/util/exec"

	"github.com/glassplane/glassplane/controlplane/node/runtime"
	"github.com/glassplane/glassplane/controlplane/pki"
)

// nodeClient is an HTTPS client of the node agent's server as user.
func nodeClient(t *testing.T, ca *pki.CA, user string, groups ...string) (*rest.Config, *http.Client) {
	t.Helper()
	cfg, err := ca.RESTConfig("", user, groups...)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := tls.X509KeyPair(cfg.CertData, cfg.KeyData)
	if err != nil {
		t.Fatal(err)
	}
	return cfg, &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{
		Certificates: []tls.Certificate{cert}, RootCAs: ca.Pool(),
	}}}
}

func TestContainerdNodeServesLogsAndExec(t *testing.T) {
	rt, dir := containerdRuntime(t)
	ca, err := pki.LoadOrCreateCA(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	serving, err := ca.Serving("127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	h := startAgent(t, rt, func(c *Config) {
		c.Simulated = false
		c.DataDir = dir
		c.Server = &ServerConfig{Certificate: serving, ClientCAs: ca.Pool()}
	})
	port := h.agent.serverPort
	eventually(t, "the node's daemon endpoint", func() (bool, string) {
		n, err := h.client.CoreV1().Nodes().Get(context.Background(), testNode, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return n.Status.DaemonEndpoints.KubeletEndpoint.Port == port && port > 0, fmt.Sprint(n.Status.DaemonEndpoints)
	})

	pod := newPod("talker", corev1.RestartPolicyAlways, runtime.DemoImage)
	pod.Spec.Containers[0].Command = []string{"sh", "-c", "echo one; sleep 0.3; echo two >&2; sleep 0.3; echo three; trap 'exit 0' TERM; while true; do sleep 1; done"}
	pod.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "GREETING", Value: "hello"}}
	h.createPod(t, pod)
	eventually(t, "pod Running", func() (bool, string) {
		p := h.getPod(t, "talker")
		return p.Status.Phase == corev1.PodRunning, string(p.Status.Phase)
	})
	base := fmt.Sprintf("https://127.0.0.1:%d", port)
	restCfg, client := nodeClient(t, ca, APIServerClientUser)
	restCfg.Host = base

	t.Run("logs", func(t *testing.T) {
		tests := []struct {
			query, want string
		}{
			{query: "", want: "one\ntwo\nthree\n"},
			{query: "?tailLines=1", want: "three\n"},
		}
		for _, tt := range tests {
			var body string
			eventually(t, "logs"+tt.query, func() (bool, string) {
				resp, err := client.Get(base + "/containerLogs/default/talker/c0" + tt.query)
				if err != nil {
					return false, err.Error()
				}
				defer resp.Body.Close()
				b, _ := io.ReadAll(resp.Body)
				body = string(b)
				return resp.StatusCode == http.StatusOK && body == tt.want, fmt.Sprintf("%d %q", resp.StatusCode, body)
			})
		}
	})
	t.Run("previous of a container that never restarted", func(t *testing.T) {
		resp, err := client.Get(base + "/containerLogs/default/talker/c0?previous=true")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(b), `previous terminated container "c0" in pod "talker" not found`) {
			t.Errorf("got %d %q", resp.StatusCode, b)
		}
	})
	t.Run("other clients are forbidden", func(t *testing.T) {
		_, other := nodeClient(t, ca, "system:node:elsewhere", "system:nodes")
		resp, err := other.Get(base + "/containerLogs/default/talker/c0")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusForbidden {
			t.Errorf("status = %d, want 403", resp.StatusCode)
		}
	})
	t.Run("attach over websocket", func(t *testing.T) {
		ticker := newPod("ticker", corev1.RestartPolicyAlways, runtime.DemoImage)
		ticker.Spec.Containers[0].Command = []string{"sh", "-c", "i=0; trap 'exit 0' TERM; while true; do echo tick $i; echo tock $i >&2; i=$((i+1)); sleep 0.2; done"}
		h.createPod(t, ticker)
		eventually(t, "ticker Running", func() (bool, string) {
			p := h.getPod(t, "ticker")
			return p.Status.Phase == corev1.PodRunning, string(p.Status.Phase)
		})
		attach, err := remotecommand.NewWebSocketExecutor(restCfg, "GET", base+"/attach/default/ticker/c0?stdout=true&stderr=true")
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 1500*time.Millisecond)
		defer cancel()
		var out, errOut bytes.Buffer
		_ = attach.StreamWithContext(ctx, remotecommand.StreamOptions{Stdout: &out, Stderr: &errOut})
		if !strings.Contains(out.String(), "tick ") || strings.Contains(out.String(), "tock") {
			t.Errorf("attached stdout = %q, want the ticks only", out.String())
		}
		if !strings.Contains(errOut.String(), "tock ") || strings.Contains(errOut.String(), "tick") {
			t.Errorf("attached stderr = %q, want the tocks only", errOut.String())
		}
		if strings.HasPrefix(out.String(), "tick 0\n") {
			t.Errorf("attached stdout = %q starts with the first tick, want only what came after attaching", out.String())
		}
	})
	t.Run("exec over websocket", func(t *testing.T) {
		tests := []struct {
			name       string
			cmd        []string
			stdin      string
			wantOut    string
			wantErrOut string
			wantCode   int
		}{
			{name: "env", cmd: []string{"sh", "-c", "echo $GREETING"}, wantOut: "hello\n"},
			{name: "exit code", cmd: []string{"sh", "-c", "echo oops >&2; exit 7"}, wantErrOut: "oops\n", wantCode: 7},
			{name: "stdin", cmd: []string{"cat"}, stdin: "fed in\n", wantOut: "fed in\n"},
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				q := url.Values{"command": tt.cmd, "stdout": {"true"}, "stderr": {"true"}}
				if tt.stdin != "" {
					q.Set("stdin", "true")
				}
				exec, err := remotecommand.NewWebSocketExecutor(restCfg, "GET", base+"/exec/default/talker/c0?"+q.Encode())
				if err != nil {
					t.Fatal(err)
				}
				var out, errOut bytes.Buffer
				opts := remotecommand.StreamOptions{Stdout: &out, Stderr: &errOut}
				if tt.stdin != "" {
					opts.Stdin = strings.NewReader(tt.stdin)
				}
				ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
				defer cancel()
				err = exec.StreamWithContext(ctx, opts)
				code := 0
				var exitErr utilexec.CodeExitError
				if errors.As(err, &exitErr) {
					code = exitErr.Code
				} else if err != nil {
					t.Fatalf("exec: %v", err)
				}
				if code != tt.wantCode || out.String() != tt.wantOut || errOut.String() != tt.wantErrOut {
					t.Errorf("exec = %d, %q, %q; want %d, %q, %q", code, out.String(), errOut.String(), tt.wantCode, tt.wantOut, tt.wantErrOut)
				}
			})
		}
	})
	// The first channel protocol, with the Origin x/net/websocket sends, as
	// the conformance spec "remote command execution over websockets"
	// reaches exec through the API server.
	t.Run("exec over channel.k8s.io", func(t *testing.T) {
		tlsCfg, err := rest.TLSConfigFor(restCfg)
		if err != nil {
			t.Fatal(err)
		}
		cfg, err := xwebsocket.NewConfig("wss"+strings.TrimPrefix(base, "https")+"/exec/default/talker/c0?command=echo&command=remote+execution+test&stdout=1&stderr=1", "http://localhost")
		if err != nil {
			t.Fatal(err)
		}
		cfg.Protocol, cfg.TlsConfig = []string{"channel.k8s.io"}, tlsCfg
		ws, err := xwebsocket.DialConfig(cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer ws.Close()
		var stdout bytes.Buffer
		for {
			var msg []byte
			if err := xwebsocket.Message.Receive(ws, &msg); err != nil {
				if err != io.EOF {
					t.Fatal(err)
				}
				break
			}
			switch {
			case len(msg) == 0:
			case msg[0] == 1:
				stdout.Write(msg[1:])
			case len(msg) > 1:
				t.Errorf("a message on channel %d: %q", msg[0], msg[1:])
			}
		}
		if stdout.String() != "remote execution test\n" {
			t.Errorf("stdout = %q", stdout.String())
		}
	})
}
