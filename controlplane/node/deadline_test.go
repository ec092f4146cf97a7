package node

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// TestActiveDeadlineFailsThePod: a running pod whose activeDeadlineSeconds
// is shortened below how long it has run is stopped and Failed with reason
// DeadlineExceeded, as the kubelet does (conformance: "should allow
// activeDeadlineSeconds to be updated").
func TestActiveDeadlineFailsThePod(t *testing.T) {
	h := startAgent(t, simRuntime(), nil)
	pod := newPod("deadline", corev1.RestartPolicyAlways, "nginx")
	pod.Spec.ActiveDeadlineSeconds = ptr.To[int64](3600)
	h.createPod(t, pod)
	eventually(t, "pod Running", func() (bool, string) {
		p := h.getPod(t, "deadline")
		return p.Status.Phase == corev1.PodRunning, string(p.Status.Phase)
	})
	p := h.getPod(t, "deadline")
	p.Spec.ActiveDeadlineSeconds = ptr.To[int64](1)
	if _, err := h.client.CoreV1().Pods("default").Update(context.Background(), p, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "pod Failed with DeadlineExceeded", func() (bool, string) {
		p := h.getPod(t, "deadline")
		return p.Status.Phase == corev1.PodFailed && p.Status.Reason == "DeadlineExceeded" && p.Status.Message == deadlineMessage,
			string(p.Status.Phase) + " " + p.Status.Reason
	})
	eventually(t, "the DeadlineExceeded event", func() (bool, string) {
		got := h.eventMessages(t, "deadline")
		return hasAll(got, "DeadlineExceeded: "+deadlineMessage), strings.Join(got, " | ")
	})
	if cs := h.getPod(t, "deadline").Status.ContainerStatuses; len(cs) != 1 || cs[0].State.Running != nil {
		t.Errorf("the container still runs: %+v", cs)
	}
}
