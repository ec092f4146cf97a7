package admission

import (
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// TestValidatePodDNSConfig: a pod's dnsPolicy and dnsConfig get
// Kubernetes' 422 causes with field paths.
func TestValidatePodDNSConfig(t *testing.T) {
	many := func(n int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = fmt.Sprintf("d%d.example", i)
		}
		return out
	}
	long := make([]string, 20)
	for i := range long {
		long[i] = strings.Repeat("a", 60) + "." + strings.Repeat("b", 60) + fmt.Sprintf("%d", i)
	}
	for _, tc := range []struct {
		name   string
		policy corev1.DNSPolicy
		dc     *corev1.PodDNSConfig
		want   []string
	}{
		{name: "ClusterFirst without dnsConfig", policy: corev1.DNSClusterFirst},
		{name: "None without dnsConfig", policy: corev1.DNSNone,
			want: []string{"spec.dnsConfig: Required value: must provide `dnsConfig` when `dnsPolicy` is None"}},
		{name: "None without nameservers", policy: corev1.DNSNone, dc: &corev1.PodDNSConfig{Searches: []string{"a.example"}},
			want: []string{"spec.dnsConfig.nameservers: Required value: must provide at least one DNS nameserver when `dnsPolicy` is None"}},
		{name: "valid", policy: corev1.DNSNone, dc: &corev1.PodDNSConfig{
			Nameservers: []string{"1.1.1.1", "2001:db8::1"}, Searches: []string{"a.example.", "_srv.example", "."},
			Options: []corev1.PodDNSConfigOption{{Name: "ndots"}}}},
		{name: "unknown policy", policy: "Sometimes",
			want: []string{`spec.dnsPolicy: Unsupported value: "Sometimes": supported values: "ClusterFirstWithHostNet", "ClusterFirst", "Default", "None"`}},
		{name: "bad nameservers", policy: corev1.DNSClusterFirst, dc: &corev1.PodDNSConfig{Nameservers: []string{"1.1.1.1", "2.2.2.2", "3.3.3.3", "dns.example"}},
			want: []string{
				`spec.dnsConfig.nameservers: Invalid value: ["1.1.1.1","2.2.2.2","3.3.3.3","dns.example"]: must not have more than 3 nameservers`,
				`spec.dnsConfig.nameservers[3]: Invalid value: "dns.example": must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)`,
			}},
		{name: "too many searches", policy: corev1.DNSClusterFirst, dc: &corev1.PodDNSConfig{Searches: many(33)},
			want: []string{`spec.dnsConfig.searches: Invalid value: ["` + strings.Join(many(33), `","`) + `"]: must not have more than 32 search paths`}},
		{name: "search list too long", policy: corev1.DNSClusterFirst, dc: &corev1.PodDNSConfig{Searches: long},
			want: []string{`spec.dnsConfig.searches: Invalid value: ["` + strings.Join(long, `","`) + `"]: must not have more than 2048 characters (including spaces) in the search list`}},
		{name: "bad search and option", policy: corev1.DNSClusterFirst, dc: &corev1.PodDNSConfig{Searches: []string{"Bad_Domain"}, Options: []corev1.PodDNSConfigOption{{}}},
			want: []string{
				`spec.dnsConfig.searches[0]: Invalid value: "Bad_Domain": ` + dns1123SubdomainErrorMsgWithUnderscore + ` (e.g. 'example.com', regex used for validation is '` + dns1123SubdomainFmtWithUnderscore + `')`,
				`spec.dnsConfig.options[0]: Required value: must not be empty`,
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := seedPod()
			pod.Spec.DNSConfig = tc.dc
			Default(pod)
			pod.Spec.DNSPolicy = tc.policy
			assertStrings(t, errorStrings(Validate(pod, nil)), tc.want)
		})
	}
}
