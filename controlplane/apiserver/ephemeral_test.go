package apiserver_test

import (
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// TestEphemeralContainers: pods/ephemeralcontainers adds ephemeral
// containers to a pod (what kubectl debug does), with upstream's rules:
// they may only be added, not changed or removed, with unique names and
// none of the fields an ephemeral container may not have.
func TestEphemeralContainers(t *testing.T) {
	ctx := ctxT(t)
	ns := shared.namespace(t)
	pods := shared.client.CoreV1().Pods(ns)
	pod, err := pods.Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "target"},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "busybox"}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	debugger := corev1.EphemeralContainer{
		EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "debugger", Image: "busybox", Command: []string{"sleep", "60"}, TerminationMessagePolicy: corev1.TerminationMessageReadFile, ImagePullPolicy: corev1.PullIfNotPresent},
		TargetContainerName:      "app",
	}
	pod.Spec.EphemeralContainers = []corev1.EphemeralContainer{debugger}
	updated, err := pods.UpdateEphemeralContainers(ctx, pod.Name, pod, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(updated.Spec.EphemeralContainers) != 1 || updated.Spec.EphemeralContainers[0].Name != "debugger" {
		t.Fatalf("ephemeral containers %+v", updated.Spec.EphemeralContainers)
	}
	if updated.Generation != pod.Generation+1 {
		t.Errorf("generation %d after adding an ephemeral container, want %d", updated.Generation, pod.Generation+1)
	}
	got, err := pods.Get(ctx, pod.Name, metav1.GetOptions{})
	if err != nil || len(got.Spec.EphemeralContainers) != 1 {
		t.Fatalf("the stored pod: %v %+v", err, got)
	}
	// A strategic merge patch adds a second one, as client-go's tools do.
	patched, err := pods.Patch(ctx, pod.Name, types.StrategicMergePatchType,
		[]byte(`{"spec":{"ephemeralContainers":[{"name":"second","image":"busybox","terminationMessagePolicy":"File","imagePullPolicy":"IfNotPresent"}]}}`), metav1.PatchOptions{}, "ephemeralcontainers")
	if err != nil || len(patched.Spec.EphemeralContainers) != 2 {
		t.Fatalf("patch: %v %+v", err, patched)
	}

	for _, tc := range []struct {
		name string
		edit func(p *corev1.Pod)
		want string
	}{
		{"changed", func(p *corev1.Pod) { p.Spec.EphemeralContainers[debuggerAt(p)].Image = "other" }, `existing ephemeral containers "debugger" may not be changed`},
		{"removed", func(p *corev1.Pod) {
			p.Spec.EphemeralContainers = slices.Delete(p.Spec.EphemeralContainers, debuggerAt(p), debuggerAt(p)+1)
		}, `existing ephemeral containers "debugger" may not be removed`},
		{"a name taken", func(p *corev1.Pod) {
			p.Spec.EphemeralContainers = append(p.Spec.EphemeralContainers, corev1.EphemeralContainer{EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "app", Image: "busybox"}})
		}, `spec.ephemeralContainers[2].name: Duplicate value: "app"`},
		{"ports", func(p *corev1.Pod) {
			p.Spec.EphemeralContainers = append(p.Spec.EphemeralContainers, corev1.EphemeralContainer{EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "web", Image: "busybox", Ports: []corev1.ContainerPort{{ContainerPort: 80}}}})
		}, `spec.ephemeralContainers[2].ports: Forbidden: cannot be set for an Ephemeral Container`},
		{"no such target", func(p *corev1.Pod) {
			p.Spec.EphemeralContainers = append(p.Spec.EphemeralContainers, corev1.EphemeralContainer{EphemeralContainerCommon: corev1.EphemeralContainerCommon{Name: "third", Image: "busybox"}, TargetContainerName: "nope"})
		}, `spec.ephemeralContainers[2].targetContainerName: Not found: "nope"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cur, err := pods.Get(ctx, pod.Name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			tc.edit(cur)
			if _, err := pods.UpdateEphemeralContainers(ctx, pod.Name, cur, metav1.UpdateOptions{}); !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("update: %v, want 422 %q", err, tc.want)
			}
		})
	}
}

func debuggerAt(p *corev1.Pod) int {
	return slices.IndexFunc(p.Spec.EphemeralContainers, func(c corev1.EphemeralContainer) bool { return c.Name == "debugger" })
}
