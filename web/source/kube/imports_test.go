package kube

import (
	"os/exec"
	"strings"
	"testing"
)

// TestImports: the package reads the cluster through the API only. It
// imports (also indirectly) none of Glassplane's API server, storage or
// etcd packages; its tests do, to start a real API server.
func TestImports(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Fatalf("the go tool, which lists the imports, is not on PATH: %v", err)
	}
	out, err := exec.Command(goTool, "list", "-deps", "-f", "{{.ImportPath}}", ".").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	forbidden := []string{
		"github.com/glassplane/glassplane/controlplane/",
		"go.etcd.io/etcd/server/",
	}
	for _, pkg := range strings.Fields(string(out)) {
		for _, prefix := range forbidden {
			if strings.HasPrefix(pkg, prefix) {
				t.Errorf("web/source/kube imports %s", pkg)
			}
		}
	}
}
