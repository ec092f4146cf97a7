package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestDemoCronJob plays the cron-job demo on the shared cluster: a Job by
// hand, the scheduled Job of the next minute, and the history limit
// pruning the older.
func TestDemoCronJob(t *testing.T) {
	c := SharedCluster(t)
	out, err := playDemo(t, c, "cron-job")
	if err != nil {
		t.Fatalf("glassplane demo run cron-job: %v\n%s", err, out)
	}
	for _, want := range []string{"cronjob.batch/tick created: schedule */1 * * * *, timeZone Etc/UTC",
		"job.batch/tick-by-hand Complete, owned by cronjob.batch/tick", "job.batch/tick-by-hand deleted by successfulJobsHistoryLimit 1"} {
		if !strings.Contains(out, want) {
			t.Errorf("the demo said:\n%s\nwant %q", out, want)
		}
	}
	if !regexp.MustCompile(`job\.batch/tick-\d{8,} scheduled for \S+Z, Complete`).MatchString(out) {
		t.Errorf("the demo said:\n%s\nwant the scheduled Job", out)
	}
}

// TestDemoAutoscale plays the autoscale demo on the shared cluster (on
// its simulated nodes, through the pods' usage annotation): up to 4 with
// the controller's reason, and back to 1.
func TestDemoAutoscale(t *testing.T) {
	c := SharedCluster(t)
	out, err := playDemo(t, c, "autoscale")
	if err != nil {
		t.Fatalf("glassplane demo run autoscale: %v\n%s", err, out)
	}
	for _, want := range []string{"deployment.apps/web: 1 pod on a simulated node",
		"horizontalpodautoscaler.autoscaling/web scaled deployment.apps/web to 4: cpu resource utilization (percentage of request) above target",
		"horizontalpodautoscaler.autoscaling/web scaled deployment.apps/web back to 1: All metrics below target"} {
		if !strings.Contains(out, want) {
			t.Errorf("the demo said:\n%s\nwant %q", out, want)
		}
	}
}

// webPage fetches a dashboard page of the shared cluster.
func webPage(t *testing.T, c *Cluster, path string) string {
	t.Helper()
	resp, err := http.Get(c.WebURL + path)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s = %d: %s", path, resp.StatusCode, body)
	}
	return string(body)
}

// TestDashboardStatefulSetClaims runs a StatefulSet of 3 with claims on
// the simulated nodes: the overview lists db-0, db-1, db-2 in order on
// their nodes with the claim each mounts, and the claim's page shows its
// local-path volume, the node it is pinned to and the directory there.
func TestDashboardStatefulSetClaims(t *testing.T) {
	c := SharedCluster(t)
	ctx := context.Background()
	ns := "dash-claims"
	hpaNamespace(t, c, ns)
	c.MustKubectl(t, `apiVersion: apps/v1
kind: StatefulSet
metadata: {name: db}
spec:
  serviceName: db
  replicas: 3
  selector: {matchLabels: {app: db}}
  persistentVolumeClaimRetentionPolicy: {whenDeleted: Delete, whenScaled: Delete}
  template:
    metadata: {labels: {app: db}}
    spec:
      nodeSelector: {node.glassplane.io/runtime: simulated}
      terminationGracePeriodSeconds: 1
      containers: [{name: main, image: busybox:1.36, command: [sleep, "3600"], volumeMounts: [{name: data, mountPath: /data}]}]
  volumeClaimTemplates:
  - metadata: {name: data}
    spec:
      accessModes: [ReadWriteOnce]
      resources: {requests: {storage: 16Mi}}
`, "apply", "-n", ns, "-f", "-")
	Eventually(t, 2*time.Minute, "db ready with three bound claims", func() error {
		s, err := c.Client.AppsV1().StatefulSets(ns).Get(ctx, "db", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if s.Status.ReadyReplicas != 3 {
			return fmt.Errorf("%d ready", s.Status.ReadyReplicas)
		}
		return nil
	})
	overview := webPage(t, c, "/")
	chip := regexp.MustCompile(`data-testid="pod-` + ns + `-(db-\d)"[^>]*data-claims="([^"]*)"`)
	var order []string
	for _, m := range chip.FindAllStringSubmatch(overview, -1) {
		order = append(order, m[1]+"="+m[2])
	}
	// Pods of one node are in ordinal order; across nodes, each node's in turn.
	byNode := map[string][]string{}
	for _, name := range []string{"db-0", "db-1", "db-2"} {
		p, err := c.Client.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		byNode[p.Spec.NodeName] = append(byNode[p.Spec.NodeName], name+"=data-"+name)
	}
	for node, want := range byNode {
		var got []string
		for _, o := range order {
			for _, w := range want {
				if o == w {
					got = append(got, o)
				}
			}
		}
		if strings.Join(got, " ") != strings.Join(want, " ") {
			t.Errorf("chips on %s: %v, want %v (all: %v)", node, got, want, order)
		}
	}

	claim, err := c.Client.CoreV1().PersistentVolumeClaims(ns).Get(ctx, "data-db-1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if claim.Status.Phase != corev1.ClaimBound {
		t.Fatalf("data-db-1 is %s", claim.Status.Phase)
	}
	pv, err := c.Client.CoreV1().PersistentVolumes().Get(ctx, claim.Spec.VolumeName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	page := webPage(t, c, "/objects/persistentvolumeclaims/"+ns+"/data-db-1")
	db1, err := c.Client.CoreV1().Pods(ns).Get(ctx, "db-1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`data-testid="pvc-volume-link">` + pv.Name + `<`,
		`data-testid="pvc-node-link">` + db1.Spec.NodeName + `<`,
		`data-testid="pvc-path">` + pv.Spec.HostPath.Path + `<`,
		`data-testid="pvc-pod" data-name="db-1" data-node="` + db1.Spec.NodeName + `"`,
		`data-testid="pvc-phase">Bound<`,
	} {
		if !strings.Contains(page, want) {
			t.Errorf("the claim's page lacks %s", want)
		}
	}
}
