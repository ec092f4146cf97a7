package dns

import (
	"net/netip"
	"strings"
	"testing"
)

// TestServiceIP: the kube-dns address is the range's 10th, as kubeadm
// picks it, and a range too small for it is refused.
func TestServiceIP(t *testing.T) {
	for _, tc := range []struct{ cidr, want, err string }{
		{cidr: "10.96.0.0/16", want: "10.96.0.10"},
		{cidr: "10.100.0.0/12", want: "10.96.0.10"},
		{cidr: "192.168.7.0/24", want: "192.168.7.10"},
		{cidr: "192.168.7.0/29", err: "too small"},
		{cidr: "fd00::/108", err: "want an IPv4 CIDR"},
		{cidr: "nonsense", err: "want an IPv4 CIDR"},
	} {
		t.Run(tc.cidr, func(t *testing.T) {
			ip, err := ServiceIP(tc.cidr)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("ServiceIP(%q) = %v, %v; want an error with %q", tc.cidr, ip, err, tc.err)
				}
				return
			}
			if err != nil || ip.String() != tc.want {
				t.Fatalf("ServiceIP(%q) = %v, %v; want %s", tc.cidr, ip, err, tc.want)
			}
		})
	}
}

// TestNewChecksConfig: a listen address the EndpointSlice cannot point at
// and a missing kubeconfig are refused before anything starts.
func TestNewChecksConfig(t *testing.T) {
	ok := Config{Listen: "127.0.0.1:0", Kubeconfig: "/kc", ServiceIP: netip.MustParseAddr("10.96.0.10")}
	for _, tc := range []struct {
		name   string
		mutate func(*Config)
		err    string
	}{
		{name: "valid", mutate: func(*Config) {}},
		{name: "unspecified host", mutate: func(c *Config) { c.Listen = "0.0.0.0:53" }, err: "want an IPv4 address"},
		{name: "name as host", mutate: func(c *Config) { c.Listen = "localhost:53" }, err: "want an IPv4 address"},
		{name: "no port", mutate: func(c *Config) { c.Listen = "127.0.0.1" }, err: "invalid DNS listen address"},
		{name: "bad port", mutate: func(c *Config) { c.Listen = "127.0.0.1:70000" }, err: "invalid DNS listen port"},
		{name: "no kubeconfig", mutate: func(c *Config) { c.Kubeconfig = "" }, err: "kubeconfig is required"},
		{name: "no service IP", mutate: func(c *Config) { c.ServiceIP = netip.Addr{} }, err: "not IPv4"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := ok
			tc.mutate(&cfg)
			_, err := New(cfg, nil)
			if tc.err == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Fatalf("New = %v, want an error with %q", err, tc.err)
			}
		})
	}
}

// TestCorefile: the server block binds the address, serves the cluster
// domain and reverse zones from the API with upstream's defaults, and
// forwards the rest with a bounded wait.
func TestCorefile(t *testing.T) {
	cfg := Config{ClusterDomain: "corp.local", Kubeconfig: "/data/dns-kubeconfig", ResolvConf: "/etc/resolv.conf"}
	got := corefile(cfg, netip.MustParseAddr("127.0.0.1"), 5353)
	for _, want := range []string{
		".:5353 {",
		"bind 127.0.0.1",
		"kubernetes corp.local in-addr.arpa ip6.arpa {",
		`kubeconfig "/data/dns-kubeconfig"`,
		"pods insecure",
		"fallthrough in-addr.arpa ip6.arpa",
		"ttl 30",
		`forward . "/etc/resolv.conf" {`,
		"max_connect_attempts 2",
		"read_timeout 1s",
		"cache 30",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("Corefile lacks %q:\n%s", want, got)
		}
	}
}
