package e2e

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/glassplane/glassplane/controlplane/scheduler/explain"
)

// TestDecisionRecordsStayOutOfUserNamespaces: the scheduler of `glassplane
// up` (as system:kube-scheduler, through its Role in glassplane-system)
// keeps each pod's decision record in glassplane-system, labelled with the
// pod; the user's namespace gets no ConfigMap and the pod no annotation;
// the dashboard's scheduler page still shows the decision; deleting the pod
// deletes its record.
func TestDecisionRecordsStayOutOfUserNamespaces(t *testing.T) {
	c := SharedCluster(t)
	ctx := context.Background()
	const ns = "records"
	createNamespace(t, c, ns)
	t.Cleanup(func() { c.Kubectl(t, "", "delete", "namespace", ns, "--wait=false") })
	names := []string{"rec-a", "rec-b", "rec-c"}
	for _, n := range names {
		createPods(t, c, ns, schedPod(n, "10m", nil))
	}
	nodes := nodesOf(t, c, ns, names...)

	records := map[string]string{}
	Eventually(t, 60*time.Second, "a record per pod in "+explain.RecordNamespace, func() error {
		list, err := c.Client.CoreV1().ConfigMaps(explain.RecordNamespace).List(ctx, metav1.ListOptions{LabelSelector: explain.PodNamespaceLabel + "=" + ns})
		if err != nil {
			return err
		}
		for _, cm := range list.Items {
			records[cm.Labels[explain.PodNameLabel]] = cm.Name
		}
		if len(records) != len(names) {
			return fmt.Errorf("records %v", records)
		}
		return nil
	})
	for _, n := range names {
		pod, err := c.Client.CoreV1().Pods(ns).Get(ctx, n, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(pod.Annotations) != 0 {
			t.Errorf("pod %s has annotations %v, want none", n, pod.Annotations)
		}
		cm, err := c.Client.CoreV1().ConfigMaps(explain.RecordNamespace).Get(ctx, explain.RecordName(ns, n), metav1.GetOptions{})
		if err != nil {
			t.Fatalf("record of %s: %v", n, err)
		}
		if cm.Labels[explain.PodUIDLabel] != string(pod.UID) || len(cm.OwnerReferences) != 0 {
			t.Errorf("record %s: labels %v, ownerReferences %v", cm.Name, cm.Labels, cm.OwnerReferences)
		}
	}
	out := c.MustKubectl(t, "", "get", "cm", "-n", ns)
	if strings.Contains(out, "decisions") || strings.Contains(out, "rec-") {
		t.Errorf("kubectl get cm -n %s shows decision records:\n%s", ns, out)
	}
	if out := c.MustKubectl(t, "", "describe", "pod", "-n", ns, "rec-a"); strings.Contains(out, "scheduler.glassplane.io") {
		t.Errorf("kubectl describe pod shows Glassplane's annotations:\n%s", out)
	}
	if out := c.MustKubectl(t, "", "get", "cm", "-n", explain.RecordNamespace, "-l", explain.PodNamespaceLabel+"="+ns); !strings.Contains(out, explain.RecordName(ns, "rec-a")) {
		t.Errorf("kubectl get cm -n %s lacks the record of rec-a:\n%s", explain.RecordNamespace, out)
	}

	resp, err := http.Get(c.WebURL + "/scheduler/" + ns + "/rec-a")
	if err != nil {
		t.Fatal(err)
	}
	raw, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	body := string(raw)
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, nodes["rec-a"]) || !strings.Contains(body, explain.RecordName(ns, "rec-a")) {
		t.Errorf("GET /scheduler/%s/rec-a = %d, want the decision naming node %s and the record\n%s", ns, resp.StatusCode, nodes["rec-a"], tail(body, 40))
	}

	if err := c.Client.CoreV1().Pods(ns).Delete(ctx, "rec-a", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	Eventually(t, 90*time.Second, "the record deleted with its pod", func() error {
		_, err := c.Client.CoreV1().ConfigMaps(explain.RecordNamespace).Get(ctx, explain.RecordName(ns, "rec-a"), metav1.GetOptions{})
		if err == nil {
			return fmt.Errorf("%s still exists", explain.RecordName(ns, "rec-a"))
		}
		if !apierrors.IsNotFound(err) {
			return err
		}
		return nil
	})
	if _, err := c.Client.CoreV1().ConfigMaps(explain.RecordNamespace).Get(ctx, explain.RecordName(ns, "rec-b"), metav1.GetOptions{}); err != nil {
		t.Errorf("the record of rec-b went with rec-a: %v", err)
	}
}
