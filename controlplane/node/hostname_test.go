package node

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestLongPodNamesGetATruncatedHostname: runc's sethostname refuses 64
// characters and more; the kubelet cuts the name to 63 without a trailing
// '-' or '.'.
func TestLongPodNamesGetATruncatedHostname(t *testing.T) {
	long := "termination-message-container1ac1e4be-895f-4ae4-a7ca-e9e256ad3c7d"
	got := podSpecFor(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: long}}).Hostname
	if len(got) > 63 || !strings.HasPrefix(long, got) {
		t.Errorf("hostname of %s = %q", long, got)
	}
	if got := truncatePodHostname(strings.Repeat("a", 62) + "-b"); got != strings.Repeat("a", 62) {
		t.Errorf("a trailing '-' after the cut stays: %q", got)
	}
	if got := podSpecFor(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "short"}}).Hostname; got != "short" {
		t.Errorf("short name: %q", got)
	}
}
