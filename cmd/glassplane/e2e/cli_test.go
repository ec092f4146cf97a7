package e2e

import (
	"bufio"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/glassplane/glassplane/controlplane/node/runtime"
)

func run(t *testing.T, args ...string) string {
	t.Helper()
	out, err := exec.Command(binary, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("glassplane %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

func TestVersionAndKubeconfigCommands(t *testing.T) {
	c := SharedCluster(t)
	if out := run(t, "version"); !strings.HasPrefix(out, "glassplane v") {
		t.Errorf("glassplane version = %q", out)
	}
	want, err := os.ReadFile(c.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	if got := run(t, "kubeconfig", "--data-dir", c.DataDir); got != string(want) {
		t.Error("glassplane kubeconfig does not print <data-dir>/kubeconfig")
	}
	// A kubeconfig issued for another user authenticates as that user.
	alice := filepath.Join(t.TempDir(), "alice")
	if err := os.WriteFile(alice, []byte(run(t, "kubeconfig", "--data-dir", c.DataDir, "--user", "alice", "--group", "dev")), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command(kubectlPath(t), "--kubeconfig", alice, "auth", "whoami", "-o", "json").CombinedOutput()
	if err == nil {
		if !strings.Contains(string(out), `"alice"`) || !strings.Contains(string(out), `"dev"`) {
			t.Errorf("whoami as alice = %s", out)
		}
	} else {
		// Before SelfSubjectReview is served, a plain request still proves
		// the certificate is accepted: any answer but 401.
		out, _ := exec.Command(kubectlPath(t), "--kubeconfig", alice, "get", "--raw", "/api").CombinedOutput()
		if strings.Contains(string(out), "Unauthorized") {
			t.Errorf("alice's certificate was not accepted: %s", out)
		}
	}
	if _, err := exec.Command(binary, "kubeconfig", "--data-dir", filepath.Join(t.TempDir(), "none")).CombinedOutput(); err == nil {
		t.Error("kubeconfig for a data dir without a cluster succeeded")
	}
}

func TestImageImport(t *testing.T) {
	requireTool(t, "containerd", "image import")
	busybox := "/bin/busybox"
	if _, err := os.Stat(busybox); err != nil {
		requireTool(t, "busybox", "the demo image archive")
	}
	c := SharedCluster(t)
	archive, err := runtime.BuildDemoImage(busybox)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "hello.tar")
	if err := os.WriteFile(path, archive, 0o644); err != nil {
		t.Fatal(err)
	}
	out := run(t, "image", "import", "--data-dir", c.DataDir, path)
	if !strings.Contains(out, "imported glassplane.local/hello:latest") {
		t.Fatalf("image import printed %q", out)
	}
	bad := filepath.Join(t.TempDir(), "bad.tar")
	os.WriteFile(bad, []byte("not a tar"), 0o644)
	if out, err := exec.Command(binary, "image", "import", "--data-dir", c.DataDir, bad).CombinedOutput(); err == nil {
		t.Fatalf("importing garbage succeeded: %s", out)
	}
}

func TestAuditLogFile(t *testing.T) {
	dir := t.TempDir()
	logPath := filepath.Join(dir, "audit.log")
	c := NewCluster(t, "--node-runtime", "none", "--audit-log-path", logPath)
	c.MustKubectl(t, "", "create", "configmap", "audited", "--from-literal=a=b")
	f, err := os.Open(logPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	found := false
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var ev struct {
			APIVersion string            `json:"apiVersion"`
			Verb       string            `json:"verb"`
			ObjectRef  map[string]string `json:"objectRef"`
			Annots     map[string]string `json:"annotations"`
		}
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Fatalf("audit log line is not JSON: %v", err)
		}
		if ev.APIVersion != "audit.k8s.io/v1" {
			t.Fatalf("audit event apiVersion = %q", ev.APIVersion)
		}
		if ev.Verb == "create" && ev.ObjectRef["name"] == "audited" {
			found = true
			if ev.Annots["storage.glassplane.io/etcd-key"] != "/registry/configmaps/default/audited" {
				t.Errorf("audit event lacks the etcd key: %v", ev.Annots)
			}
		}
	}
	if !found {
		t.Fatal("no audit event for the configmap create in the log file")
	}
}
