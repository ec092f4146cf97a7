package node

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/glassplane/glassplane/controlplane/node/runtime"
)

// TestPodDNS: a pod's resolv.conf follows the kubelet's rules for each
// dnsPolicy, merges dnsConfig and keeps to the resolver's limits.
func TestPodDNS(t *testing.T) {
	host := runtime.DNSConfig{
		Nameservers: []string{"192.168.1.1", "192.168.1.2"},
		Searches:    []string{"corp.example", "example"},
		Options:     []string{"timeout:2", "rotate"},
	}
	clusterDNS := []string{"10.96.0.10"}
	pod := func(policy corev1.DNSPolicy, hostNet bool, dc *corev1.PodDNSConfig) *corev1.Pod {
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "shop", UID: "u1"},
			Spec:       corev1.PodSpec{DNSPolicy: policy, HostNetwork: hostNet, DNSConfig: dc},
		}
	}
	clusterFirst := runtime.DNSConfig{
		Nameservers: []string{"10.96.0.10"},
		Searches:    []string{"shop.svc.cluster.local", "svc.cluster.local", "cluster.local", "corp.example", "example"},
		Options:     []string{"ndots:5"},
	}
	many := func(n int, f string) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = fmt.Sprintf(f, i)
		}
		return out
	}
	long := strings.Repeat("a", 63) + "." + strings.Repeat("b", 63) + "." + strings.Repeat("c", 63) + "." + strings.Repeat("d", 64)
	for _, tc := range []struct {
		name       string
		pod        *corev1.Pod
		clusterDNS []string
		domain     string
		want       runtime.DNSConfig
		wantEvents []string
	}{
		{name: "ClusterFirst", pod: pod(corev1.DNSClusterFirst, false, nil), want: clusterFirst},
		{name: "empty policy is ClusterFirst", pod: pod("", false, nil), want: clusterFirst},
		{name: "ClusterFirstWithHostNet on the host network", pod: pod(corev1.DNSClusterFirstWithHostNet, true, nil), want: clusterFirst},
		{name: "ClusterFirstWithHostNet off the host network", pod: pod(corev1.DNSClusterFirstWithHostNet, false, nil), want: clusterFirst},
		{name: "ClusterFirst on the host network falls back to Default", pod: pod(corev1.DNSClusterFirst, true, nil), want: host},
		{name: "Default", pod: pod(corev1.DNSDefault, false, nil), want: host},
		{name: "ClusterFirst without cluster DNS falls back to Default", pod: pod(corev1.DNSClusterFirst, false, nil), clusterDNS: []string{},
			want: host, wantEvents: []string{`MissingClusterDNS: pod: "web_shop(u1)". kubelet does not have ClusterDNS IP configured and cannot create Pod using "ClusterFirst" policy. Falling back to "Default" policy.`}},
		{name: "ClusterFirst without a cluster domain searches the host's", pod: pod(corev1.DNSClusterFirst, false, nil), domain: "-",
			want: runtime.DNSConfig{Nameservers: []string{"10.96.0.10"}, Searches: host.Searches, Options: []string{"ndots:5"}}},
		{name: "None takes only dnsConfig", pod: pod(corev1.DNSNone, false, &corev1.PodDNSConfig{
			Nameservers: []string{"1.1.1.1"}, Searches: []string{"my.dns.search.suffix"},
			Options: []corev1.PodDNSConfigOption{{Name: "ndots", Value: ptr.To("2")}, {Name: "edns0"}},
		}), want: runtime.DNSConfig{Nameservers: []string{"1.1.1.1"}, Searches: []string{"my.dns.search.suffix"}, Options: []string{"edns0", "ndots:2"}}},
		{name: "ClusterFirst merges dnsConfig, the pod's option wins", pod: pod(corev1.DNSClusterFirst, false, &corev1.PodDNSConfig{
			Nameservers: []string{"10.96.0.10", "1.1.1.1"}, Searches: []string{"cluster.local", "extra.example"},
			Options: []corev1.PodDNSConfigOption{{Name: "ndots", Value: ptr.To("1")}, {Name: "single-request-reopen"}},
		}), want: runtime.DNSConfig{
			Nameservers: []string{"10.96.0.10", "1.1.1.1"},
			Searches:    append(append([]string{}, clusterFirst.Searches...), "extra.example"),
			Options:     []string{"ndots:1", "single-request-reopen"},
		}},
		{name: "Default merges dnsConfig", pod: pod(corev1.DNSDefault, false, &corev1.PodDNSConfig{Nameservers: []string{"8.8.8.8"}}),
			want: runtime.DNSConfig{Nameservers: []string{"192.168.1.1", "192.168.1.2", "8.8.8.8"}, Searches: host.Searches, Options: []string{"rotate", "timeout:2"}}},
		{name: "at most 3 nameservers", pod: pod(corev1.DNSNone, false, &corev1.PodDNSConfig{Nameservers: []string{"1.1.1.1", "2.2.2.2", "3.3.3.3", "4.4.4.4"}}),
			want:       runtime.DNSConfig{Nameservers: []string{"1.1.1.1", "2.2.2.2", "3.3.3.3"}, Options: []string{}},
			wantEvents: []string{"DNSConfigForming: Nameserver limits were exceeded, some nameservers have been omitted, the applied nameserver line is: 1.1.1.1 2.2.2.2 3.3.3.3"}},
		{name: "at most 32 search domains", pod: pod(corev1.DNSNone, false, &corev1.PodDNSConfig{Nameservers: []string{"1.1.1.1"}, Searches: many(40, "d%d.example")}),
			want:       runtime.DNSConfig{Nameservers: []string{"1.1.1.1"}, Searches: many(32, "d%d.example"), Options: []string{}},
			wantEvents: []string{"DNSConfigForming: Search Line limits were exceeded, some search paths have been omitted, the applied search line is: " + strings.Join(many(32, "d%d.example"), " ")}},
		{name: "search domains longer than 253 are dropped", pod: pod(corev1.DNSNone, false, &corev1.PodDNSConfig{Nameservers: []string{"1.1.1.1"}, Searches: []string{"a.example", long, "b.example"}}),
			want:       runtime.DNSConfig{Nameservers: []string{"1.1.1.1"}, Searches: []string{"a.example", "b.example"}, Options: []string{}},
			wantEvents: []string{"DNSConfigForming: Search Line limits were exceeded, some search paths have been omitted, the applied search line is: a.example b.example"}},
		{name: "the search line is cut to 2048 characters from the end", pod: pod(corev1.DNSNone, false, &corev1.PodDNSConfig{Nameservers: []string{"1.1.1.1"}, Searches: many(30, strings.Repeat("x", 90)+"%02d")}),
			want:       runtime.DNSConfig{Nameservers: []string{"1.1.1.1"}, Searches: many(22, strings.Repeat("x", 90)+"%02d"), Options: []string{}},
			wantEvents: []string{"DNSConfigForming: Search Line limits were exceeded, some search paths have been omitted, the applied search line is: " + strings.Join(many(22, strings.Repeat("x", 90)+"%02d"), " ")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cdns := clusterDNS
			if tc.clusterDNS != nil {
				cdns = tc.clusterDNS
			}
			domain := "cluster.local"
			if tc.domain == "-" {
				domain = ""
			}
			got, events := podDNS(tc.pod, cdns, domain, host)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("DNS config (-want +got):\n%s", diff)
			}
			var gotEvents []string
			for _, e := range events {
				gotEvents = append(gotEvents, e.reason+": "+e.message)
			}
			if diff := cmp.Diff(tc.wantEvents, gotEvents); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
		})
	}
}

// TestPodDNSKeepsHostConfig: forming a pod's configuration does not change
// the host's.
func TestPodDNSKeepsHostConfig(t *testing.T) {
	host := runtime.DNSConfig{Nameservers: []string{"192.168.1.1"}, Searches: []string{"a.example", "a.example"}, Options: []string{"rotate"}}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"}, Spec: corev1.PodSpec{
		DNSPolicy: corev1.DNSDefault, DNSConfig: &corev1.PodDNSConfig{Nameservers: []string{"1.1.1.1"}, Searches: []string{"b.example"}},
	}}
	podDNS(pod, nil, "cluster.local", host)
	want := runtime.DNSConfig{Nameservers: []string{"192.168.1.1"}, Searches: []string{"a.example", "a.example"}, Options: []string{"rotate"}}
	if diff := cmp.Diff(want, host); diff != "" {
		t.Errorf("host config changed (-want +got):\n%s", diff)
	}
}

// TestParseResolvConf: the host's nameservers, last search line and
// options, as the kubelet reads them.
func TestParseResolvConf(t *testing.T) {
	for _, tc := range []struct {
		name, in string
		want     runtime.DNSConfig
	}{
		{name: "empty", in: "", want: runtime.DNSConfig{}},
		{name: "full", in: "# comment\n; other comment\nnameserver 10.0.0.1\nnameserver 10.0.0.2\nsearch a.example. b.example .\noptions ndots:2 rotate\noptions ndots:3\n",
			want: runtime.DNSConfig{Nameservers: []string{"10.0.0.1", "10.0.0.2"}, Searches: []string{"a.example", "b.example"}, Options: []string{"rotate", "ndots:3"}}},
		{name: "last search line wins", in: "search a.example\nsearch b.example\nnameserver 1.1.1.1\n",
			want: runtime.DNSConfig{Nameservers: []string{"1.1.1.1"}, Searches: []string{"b.example"}}},
		{name: "nameserver without address", in: "nameserver\nnameserver 1.1.1.1\n",
			want: runtime.DNSConfig{Nameservers: []string{"1.1.1.1"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, parseResolvConf([]byte(tc.in))); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}
