package kubeversion

import (
	"os"
	"strings"
	"testing"
)

// TestMatchesGoMod fails when go.mod's k8s.io/api moves to another version
// than the one Glassplane reports.
func TestMatchesGoMod(t *testing.T) {
	b, err := os.ReadFile("../../go.mod")
	if err != nil {
		t.Fatal(err)
	}
	var module string
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) >= 2 && f[0] == "k8s.io/api" {
			module = f[1]
		}
	}
	if module == "" {
		t.Fatal("go.mod requires no k8s.io/api")
	}
	want := "v1." + strings.TrimPrefix(module, "v0.")
	if got := "v" + Major + "." + Minor + "." + Patch; got != want {
		t.Errorf("kubeversion reports Kubernetes %s, but go.mod's k8s.io/api %s implements %s", got, module, want)
	}
	if !strings.HasPrefix(GitVersion, want+"+") {
		t.Errorf("GitVersion = %q, want %s+glassplane", GitVersion, want)
	}
}
