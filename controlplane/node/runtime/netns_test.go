package runtime

import (
	"net"
	"os"
	"testing"
)

func TestNetnsLoopbackUpAndRemoved(t *testing.T) {
	requireContainerd(t)
	uid := "0d1c2b3a-0000-4000-8000-0000000000b1"
	t.Cleanup(func() { _ = removeNetns(uid) })
	// A file without its namespace (left by a crash) is replaced.
	if err := os.MkdirAll(netnsDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(NetnsPath(uid), nil, 0o444); err != nil {
		t.Fatal(err)
	}
	for range 2 { // the second call keeps the namespace
		if err := ensureNetns(uid); err != nil {
			t.Fatalf("ensureNetns: %v", err)
		}
	}
	if !isNetns(NetnsPath(uid)) {
		t.Fatalf("%s is not a network namespace", NetnsPath(uid))
	}
	var lo *net.Interface
	var ifaces []net.Interface
	err := inNetns(NetnsPath(uid), func() error {
		var err error
		if ifaces, err = net.Interfaces(); err != nil {
			return err
		}
		lo, err = net.InterfaceByName("lo")
		return err
	})
	if err != nil {
		t.Fatalf("inspect namespace: %v", err)
	}
	if lo.Flags&net.FlagUp == 0 {
		t.Errorf("loopback in the pod's namespace is down: %v", lo.Flags)
	}
	if len(ifaces) != 1 {
		t.Errorf("pod namespace has interfaces %v, want only lo (not the host's)", ifaces)
	}
	if err := removeNetns(uid); err != nil {
		t.Fatalf("removeNetns: %v", err)
	}
	if _, err := os.Stat(NetnsPath(uid)); !os.IsNotExist(err) {
		t.Errorf("namespace file still present after removeNetns (stat: %v)", err)
	}
	if err := removeNetns(uid); err != nil {
		t.Errorf("removeNetns of a removed namespace: %v", err)
	}
}
