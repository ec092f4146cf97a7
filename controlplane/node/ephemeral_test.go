package node

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestEphemeralContainerStarts: an ephemeral container added to a running
// pod (kubectl debug) is started beside the app containers and reported
// in ephemeralContainerStatuses (never ready).
func TestEphemeralContainerStarts(t *testing.T) {
	h := startAgent(t, simRuntime(), nil)
	h.createPod(t, newPod("target", corev1.RestartPolicyAlways, "nginx"))
	eventually(t, "pod Running", func() (bool, string) {
		p := h.getPod(t, "target")
		return p.Status.Phase == corev1.PodRunning, string(p.Status.Phase)
	})
	pod := h.getPod(t, "target")
	pod.Spec.EphemeralContainers = []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{
		Name: "debugger", Image: "busybox", Command: []string{"true"},
	}}}
	if _, err := h.client.CoreV1().Pods("default").Update(context.Background(), pod, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the ephemeral container's status", func() (bool, string) {
		p := h.getPod(t, "target")
		if len(p.Status.EphemeralContainerStatuses) != 1 {
			return false, "no status"
		}
		cs := p.Status.EphemeralContainerStatuses[0]
		return cs.Name == "debugger" && (cs.State.Running != nil || cs.State.Terminated != nil) && !cs.Ready, cs.String()
	})
	eventually(t, "the Started event", func() (bool, string) {
		got := h.eventMessages(t, "target")
		return hasAll(got, "Started: Started container debugger"), strings.Join(got, " | ")
	})
	if p := h.getPod(t, "target"); len(p.Status.ContainerStatuses) != 1 || !p.Status.ContainerStatuses[0].Ready {
		t.Errorf("app container statuses %+v", p.Status.ContainerStatuses)
	}
}
