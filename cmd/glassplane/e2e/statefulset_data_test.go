package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestStatefulSetClaimKeepsData: db-0 of a StatefulSet on the containerd
// node writes to the claim its volumeClaimTemplate made (local-path); when
// the pod is deleted, the controller makes db-0 again with the same claim,
// and the new container reads what the first one wrote.
func TestStatefulSetClaimKeepsData(t *testing.T) {
	requireTool(t, "containerd", "real containers")
	requireTool(t, "kubectl", "the test drives kubectl")
	c := SharedCluster(t)
	ctx := context.Background()
	const ns = "sts-data"
	c.MustKubectl(t, "", "create", "namespace", ns)
	t.Cleanup(func() { _, _ = c.Kubectl(t, "", "delete", "namespace", ns, "--wait=false") })
	c.MustKubectl(t, `apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db, namespace: `+ns+`}
spec:
  serviceName: db
  replicas: 1
  selector: {matchLabels: {app: db}}
  template:
    metadata: {labels: {app: db}}
    spec:
      nodeSelector: {node.glassplane.io/runtime: containerd}
      terminationGracePeriodSeconds: 0
      containers:
      - name: main
        image: `+demoImage+`
        command: [sh, -c, "test -f /data/first || cat /proc/sys/kernel/random/uuid > /data/first; sleep 3600"]
        volumeMounts: [{name: data, mountPath: /data}]
  volumeClaimTemplates:
  - metadata: {name: data}
    spec:
      accessModes: [ReadWriteOnce]
      resources: {requests: {storage: 16Mi}}
`, "apply", "-f", "-")

	read := func() string {
		t.Helper()
		var out string
		Eventually(t, time.Minute, "db-0 reads /data/first", func() error {
			o, err := c.Kubectl(t, "", "exec", "-n", ns, "db-0", "--", "cat", "/data/first")
			if err != nil {
				return fmt.Errorf("%v: %s", err, o)
			}
			if out = strings.TrimSpace(o); len(out) != 36 {
				return fmt.Errorf("read %q", out)
			}
			return nil
		})
		return out
	}
	first := waitPodPhase(t, c, ns, "db-0", corev1.PodRunning, 3*time.Minute)
	written := read()
	claim, err := c.Client.CoreV1().PersistentVolumeClaims(ns).Get(ctx, "data-db-0", metav1.GetOptions{})
	if err != nil || claim.Status.Phase != corev1.ClaimBound {
		t.Fatalf("claim data-db-0: %v %+v", err, claim)
	}

	c.MustKubectl(t, "", "delete", "pod", "-n", ns, "db-0", "--wait=false")
	Eventually(t, 3*time.Minute, "db-0 made again and running", func() error {
		p, err := c.Client.CoreV1().Pods(ns).Get(ctx, "db-0", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if p.UID == first.UID || p.Status.Phase != corev1.PodRunning {
			return fmt.Errorf("db-0 %s is %s", p.UID, p.Status.Phase)
		}
		return nil
	})
	if again := read(); again != written {
		t.Errorf("the new db-0 read %q, the first wrote %q", again, written)
	}
	after, err := c.Client.CoreV1().PersistentVolumeClaims(ns).Get(ctx, "data-db-0", metav1.GetOptions{})
	if err != nil || after.UID != claim.UID {
		t.Errorf("data-db-0 after the pod came back: %v (uid %v, was %v)", err, after.UID, claim.UID)
	}
}
