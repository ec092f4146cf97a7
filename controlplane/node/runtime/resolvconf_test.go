package runtime

import (
	"os"
	"path/filepath"
	"testing"
)

// TestResolvConf: a pod's resolv.conf is written as containerd's CRI
// writes it (search, nameservers, options), only when the pod has a DNS
// configuration, and in place.
func TestResolvConf(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, resolvConfFile)
	if err := writeResolvConf(dir, PodSpec{}); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Fatalf("a pod without a DNS configuration got a resolv.conf: %v", err)
	}
	pod := PodSpec{DNS: &DNSConfig{
		Nameservers: []string{"10.96.0.10", "1.1.1.1"},
		Searches:    []string{"ns.svc.cluster.local", "svc.cluster.local", "cluster.local"},
		Options:     []string{"ndots:5", "edns0"},
	}}
	if err := writeResolvConf(dir, pod); err != nil {
		t.Fatal(err)
	}
	before, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	want := "search ns.svc.cluster.local svc.cluster.local cluster.local\nnameserver 10.96.0.10\nnameserver 1.1.1.1\noptions ndots:5 edns0\n"
	if got, _ := os.ReadFile(path); string(got) != want {
		t.Errorf("resolv.conf = %q, want %q", got, want)
	}
	pod.DNS = &DNSConfig{Nameservers: []string{"1.1.1.1"}}
	if err := writeResolvConf(dir, pod); err != nil {
		t.Fatal(err)
	}
	if got, _ := os.ReadFile(path); string(got) != "nameserver 1.1.1.1\n" {
		t.Errorf("rewritten resolv.conf = %q", got)
	}
	after, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if !os.SameFile(before, after) {
		t.Error("the rewrite replaced the file; containers bind-mount it and would keep the old one")
	}
}
