package runtime

import (
	"fmt"
	"net"
	"os/exec"
	"strings"
	"testing"
)

func TestForgetNeighbor(t *testing.T) {
	requireContainerd(t)
	// A namespace of the test's own, so that the host's table is not touched.
	uid := "0d1c2b3a-0000-4000-8000-0000000000c1"
	t.Cleanup(func() { _ = removeNetns(uid) })
	if err := ensureNetns(uid); err != nil {
		t.Fatalf("ensureNetns: %v", err)
	}
	inNs := func(t *testing.T, fn func() error) {
		t.Helper()
		if err := inNetns(NetnsPath(uid), fn); err != nil {
			t.Fatal(err)
		}
	}
	ip := func(args ...string) func() error {
		return func() error {
			if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
				return fmt.Errorf("ip %s: %w: %s", strings.Join(args, " "), err, out)
			}
			return nil
		}
	}
	inNs(t, ip("link", "add", "gpn0", "type", "bridge"))
	inNs(t, ip("link", "set", "gpn0", "up"))

	tests := []struct {
		name  string
		entry bool // the table holds an entry for the address (an earlier pod's)
	}{
		{name: "entry of an earlier pod", entry: true},
		{name: "no entry", entry: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.entry {
				inNs(t, ip("neigh", "replace", "10.99.0.5", "lladdr", "02:00:00:00:00:05", "dev", "gpn0", "nud", "stale"))
			}
			var neigh []byte
			show := func() (err error) {
				neigh, err = exec.Command("ip", "neigh", "show", "dev", "gpn0").Output()
				return err
			}
			inNs(t, show)
			if had := strings.Contains(string(neigh), "10.99.0.5"); had != tt.entry {
				t.Fatalf("before: neighbor table has the address = %v, want %v:\n%s", had, tt.entry, neigh)
			}
			inNs(t, func() error {
				if err := forgetNeighbor("gpn0", net.ParseIP("10.99.0.5")); err != nil {
					return err
				}
				return show()
			})
			if strings.Contains(string(neigh), "10.99.0.5") {
				t.Errorf("neighbor table still has the address:\n%s", neigh)
			}
		})
	}
	t.Run("unknown device", func(t *testing.T) {
		var err error
		inNs(t, func() error { err = forgetNeighbor("gpn-missing", net.ParseIP("10.99.0.5")); return nil })
		if err == nil || !strings.Contains(err.Error(), `failed to delete neighbor 10.99.0.5 on "gpn-missing"`) {
			t.Errorf("forgetNeighbor on a missing device = %v, want an error naming it", err)
		}
	})
}
