package apiserver_test

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/glassplane/glassplane/controlplane/kubeversion"
	"github.com/glassplane/glassplane/controlplane/pki"
)

// kubectl runs the real kubectl against the shared server.
type kubectl struct {
	t          *testing.T
	kubeconfig string
	cacheDir   string
}

func newKubectl(t *testing.T) *kubectl {
	t.Helper()
	path, err := exec.LookPath("kubectl")
	if err != nil || path == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("kubectl is required in CI (it ships with this machine image)")
		}
		t.Skip("kubectl is not installed")
	}
	cfg, err := shared.ca.Kubeconfig(shared.url, pki.AdminUser, pki.AdminGroup)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	kc := filepath.Join(dir, "kubeconfig")
	if err := os.WriteFile(kc, cfg, 0o600); err != nil {
		t.Fatal(err)
	}
	return &kubectl{t: t, kubeconfig: kc, cacheDir: filepath.Join(dir, "cache")}
}

func (k *kubectl) cmd(ctx context.Context, stdin string, args ...string) *exec.Cmd {
	args = append([]string{"--kubeconfig", k.kubeconfig, "--cache-dir", k.cacheDir}, args...)
	cmd := exec.CommandContext(ctx, "kubectl", args...)
	cmd.Env = append(os.Environ(), "HOME="+filepath.Dir(k.kubeconfig))
	if stdin != "" {
		cmd.Stdin = strings.NewReader(stdin)
	}
	return cmd
}

// run runs kubectl and returns its combined output and whether it succeeded.
func (k *kubectl) run(stdin string, args ...string) (string, bool) {
	k.t.Helper()
	out, err := k.cmd(ctxT(k.t), stdin, args...).CombinedOutput()
	return string(out), err == nil
}

func (k *kubectl) mustRun(stdin string, args ...string) string {
	k.t.Helper()
	out, ok := k.run(stdin, args...)
	if !ok {
		k.t.Fatalf("kubectl %s: %s", strings.Join(args, " "), out)
	}
	return out
}

const kubectlPod = `apiVersion: v1
kind: Pod
metadata:
  name: nginx
  labels:
    app: nginx
spec:
  containers:
  - name: nginx
    image: nginx:1.27
`

func TestKubectl(t *testing.T) {
	k := newKubectl(t)
	ns := shared.namespace(t)

	if out := k.mustRun("", "version"); !strings.Contains(out, "Server Version: "+kubeversion.GitVersion) {
		t.Errorf("kubectl version: %s", out)
	}
	if out := k.mustRun("", "api-resources"); !strings.Contains(out, "pods") || !strings.Contains(out, "deployments") || !strings.Contains(out, "deploy") {
		t.Errorf("api-resources: %s", out)
	}
	steps := []struct {
		name  string
		stdin string
		args  []string
		want  []string
	}{
		{"apply creates", kubectlPod, []string{"apply", "-n", ns, "-f", "-"}, []string{"pod/nginx created"}},
		{"apply again configures", strings.Replace(kubectlPod, "app: nginx", "app: nginx\n    tier: web", 1), []string{"apply", "-n", ns, "-f", "-"}, []string{"pod/nginx configured"}},
		{"get pods as a table", "", []string{"get", "pods", "-n", ns}, []string{"NAME    READY   STATUS    RESTARTS   AGE", "nginx   0/1     Pending   0"}},
		{"get pods wide", "", []string{"get", "pods", "-n", ns, "-o", "wide"}, []string{"IP", "NODE", "NOMINATED NODE", "READINESS GATES", "<none>"}},
		{"get all namespaces", "", []string{"get", "pods", "-A"}, []string{"NAMESPACE", ns}},
		{"label selector", "", []string{"get", "pods", "-n", ns, "-l", "tier=web", "-o", "name"}, []string{"pod/nginx"}},
		{"yaml output", "", []string{"get", "pod", "nginx", "-n", ns, "-o", "yaml"}, []string{"kind: Pod", "tier: web", "resourceVersion:", "uid:"}},
		{"describe", "", []string{"describe", "pod", "nginx", "-n", ns}, []string{"Name:", "nginx", "Status:", "Pending"}},
		{"label", "", []string{"label", "pod", "nginx", "-n", ns, "extra=1"}, []string{"pod/nginx labeled"}},
		{"annotate", "", []string{"annotate", "pod", "nginx", "-n", ns, "note=hi"}, []string{"pod/nginx annotated"}},
		{"patch", "", []string{"patch", "pod", "nginx", "-n", ns, "-p", `{"metadata":{"labels":{"patched":"yes"}}}`}, []string{"pod/nginx patched"}},
		{"create deployment", "", []string{"create", "deployment", "web", "-n", ns, "--image=nginx", "--replicas=1"}, []string{"deployment.apps/web created"}},
		{"scale", "", []string{"scale", "deployment", "web", "-n", ns, "--replicas=3"}, []string{"deployment.apps/web scaled"}},
		{"get deployments", "", []string{"get", "deploy", "-n", ns}, []string{"NAME   READY   UP-TO-DATE   AVAILABLE   AGE", "web    0/3"}},
		{"get all", "", []string{"get", "all", "-n", ns}, []string{"pod/nginx", "deployment.apps/web"}},
		{"get namespaces", "", []string{"get", "ns"}, []string{"NAME", "STATUS", "kube-system", "Active"}},
		{"create configmap", "", []string{"create", "configmap", "cfg", "-n", ns, "--from-literal=a=b"}, []string{"configmap/cfg created"}},
		{"get configmap", "", []string{"get", "cm", "-n", ns}, []string{"DATA", "cfg"}},
		{"create pdb", "", []string{"create", "pdb", "web", "-n", ns, "--selector=app=web", "--min-available=1"}, []string{"poddisruptionbudget.policy/web created"}},
		{"get pdb", "", []string{"get", "pdb", "-n", ns}, []string{"NAME   MIN AVAILABLE   MAX UNAVAILABLE   ALLOWED DISRUPTIONS   AGE", "web    1               N/A               0"}},
		{"delete pod", "", []string{"delete", "pod", "nginx", "-n", ns}, []string{`pod "nginx" deleted`}},
		{"delete deployment", "", []string{"delete", "deployment", "web", "-n", ns}, []string{`deployment.apps "web" deleted`}},
	}
	for _, st := range steps {
		out := k.mustRun(st.stdin, st.args...)
		for _, want := range st.want {
			if !strings.Contains(out, want) {
				t.Errorf("%s: output lacks %q:\n%s", st.name, want, out)
			}
		}
	}

	bad := strings.Replace(kubectlPod, "  containers:", "  foo: 1\n  containers:", 1)
	out, ok := k.run(bad, "apply", "-n", ns, "-f", "-")
	if ok || !strings.Contains(out, `strict decoding error: unknown field "spec.foo"`) {
		t.Errorf("unknown field: %s", out)
	}
	out, ok = k.run(strings.Replace(kubectlPod, "name: nginx\n  labels", "name: Bad_Name\n  labels", 1), "apply", "-n", ns, "-f", "-")
	if ok || !strings.Contains(out, "is invalid") {
		t.Errorf("invalid name: %s", out)
	}
	out, ok = k.run("", "get", "pod", "missing", "-n", ns)
	if ok || !strings.Contains(out, `pods "missing" not found`) {
		t.Errorf("get missing: %s", out)
	}
}

// syncBuffer is a bytes.Buffer safe for a writer and a reader.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func TestKubectlGetWatch(t *testing.T) {
	k := newKubectl(t)
	ns := shared.namespace(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out syncBuffer
	cmd := k.cmd(ctx, "", "get", "pods", "-n", ns, "-w")
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		cancel()
		cmd.Wait()
	}()
	k.mustRun(kubectlPod, "apply", "-n", ns, "-f", "-")
	eventually(t, "the pod in kubectl get -w", func() bool {
		return strings.Contains(out.String(), "nginx") && strings.Contains(out.String(), "Pending")
	})
	k.mustRun("", "label", "pod", "nginx", "-n", ns, "seen=yes")
	eventually(t, "the update in kubectl get -w", func() bool { return strings.Count(out.String(), "nginx") >= 2 })
	if got := out.String(); strings.Count(got, "NAME") != 1 {
		t.Errorf("kubectl get -w output:\n%s", got)
	}
}
