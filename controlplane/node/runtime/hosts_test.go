package runtime

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

func TestManagedHosts(t *testing.T) {
	const base = "# Kubernetes-managed hosts file.\n" +
		"127.0.0.1\tlocalhost\n" +
		"::1\tlocalhost ip6-localhost ip6-loopback\n" +
		"fe00::0\tip6-localnet\n" +
		"fe00::0\tip6-mcastprefix\n" +
		"fe00::1\tip6-allnodes\n" +
		"fe00::2\tip6-allrouters\n"
	tests := []struct {
		name     string
		ips      []string
		aliases  []HostAlias
		hostname string
		domain   string
		want     string
	}{
		{"no address yet", nil, nil, "web", "", base},
		{"the pod's address", []string{"10.88.0.7"}, nil, "web", "", base + "10.88.0.7\tweb\n"},
		{"host aliases", []string{"10.88.0.7"}, []HostAlias{{IP: "10.1.2.3", Hostnames: []string{"foo.local", "bar.local"}}, {IP: "10.1.2.4", Hostnames: []string{"baz"}}}, "web", "",
			base + "10.88.0.7\tweb\n\n# Entries added by HostAliases.\n10.1.2.3\tfoo.local\tbar.local\n10.1.2.4\tbaz\n"},
		// A pod with a subdomain is named by its FQDN first, as the
		// kubelet writes it.
		{"a subdomain", []string{"10.88.0.7"}, nil, "querier-1", "dns-test.ns.svc.cluster.local", base + "10.88.0.7\tquerier-1.dns-test.ns.svc.cluster.local\tquerier-1\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := string(managedHosts(tc.ips, tc.hostname, tc.domain, tc.aliases)); got != tc.want {
				t.Errorf("managedHosts =\n%s\nwant\n%s", got, tc.want)
			}
		})
	}
}

// The file is written before the pod has an address, completed in place
// (containers bind-mount it, so its inode must stay) once it has one, and
// left alone by a later write without an address (a pod adopted after a
// restart).
func TestWriteHostsInPlace(t *testing.T) {
	dir := t.TempDir()
	pod := PodSpec{UID: "u1", Namespace: "default", Name: "web", Hostname: "web-host"}
	path := filepath.Join(dir, etcHostsFile)
	if err := writeHosts(dir, pod, nil); err != nil {
		t.Fatal(err)
	}
	inode := func() uint64 {
		t.Helper()
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		return fi.Sys().(*syscall.Stat_t).Ino
	}
	first := inode()
	if err := writeHosts(dir, pod, []string{"10.88.0.9"}); err != nil {
		t.Fatal(err)
	}
	if inode() != first {
		t.Error("the hosts file was replaced, not rewritten in place")
	}
	want := string(managedHosts([]string{"10.88.0.9"}, "web-host", "", nil))
	if err := writeHosts(dir, pod, nil); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != want {
		t.Errorf("hosts file =\n%s\nwant\n%s", got, want)
	}
}
