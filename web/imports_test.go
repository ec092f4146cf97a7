package web

import (
	"os/exec"
	"strings"
	"testing"
)

// forbiddenImports are the packages the dashboard must not reach into:
// it is an API client like the scheduler and the controllers, so only the
// API server touches storage and etcd, and the API server's internals
// reach the dashboard through its APIs.
var forbiddenImports = []string{
	"github.com/glassplane/glassplane/controlplane/storage",
	"github.com/glassplane/glassplane/controlplane/etcd",
	"github.com/glassplane/glassplane/controlplane/apiserver",
}

// TestDashboardImportsNoServerInternals: package web and the sources it
// reads the cluster through (web/source, web/source/kube) import none of
// forbiddenImports, directly or through another package (go list -deps;
// tests may use them to set up a cluster). web/source/storesource, the
// adapter package web's tests use, is the one that may.
func TestDashboardImportsNoServerInternals(t *testing.T) {
	pkgs := []string{".", "./source", "./source/kube", "./demo"}
	out, err := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}}", pkgs[0], pkgs[1], pkgs[2], pkgs[3]).CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	deps := strings.Fields(string(out))
	if len(deps) < 10 {
		t.Fatalf("go list named only %d packages: %q", len(deps), deps)
	}
	for _, dep := range deps {
		for _, bad := range forbiddenImports {
			if dep == bad || strings.HasPrefix(dep, bad+"/") {
				t.Errorf("the dashboard imports %s", dep)
			}
		}
	}
	// The check itself must see a forbidden import where there is one.
	out, err = exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}}", "./source/storesource").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), forbiddenImports[0]+"\n") {
		t.Errorf("go list -deps of storesource does not name %s:\n%s", forbiddenImports[0], out)
	}
}
