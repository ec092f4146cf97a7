package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/glassplane/glassplane/api/v1alpha1"
	"github.com/glassplane/glassplane/controlplane/apiserver/auth/rbac"
)

// decisionsPath is the path of the decision records in namespace ns, or
// of one.
func decisionsPath(ns string, name ...string) []string {
	return append([]string{"/apis", v1alpha1.GroupName, "v1alpha1", "namespaces", ns, "schedulingdecisions"}, name...)
}

// decisionRecord reads the decision record of pod ns/name, its
// SchedulingDecision, through the API as the admin.
func decisionRecord(ctx context.Context, c *Cluster, ns, name string) (*v1alpha1.SchedulingDecision, error) {
	res := c.Client.CoreV1().RESTClient().Get().AbsPath(decisionsPath(ns, name)...).SetHeader("Accept", "application/json").Do(ctx)
	if err := res.Error(); err != nil {
		return nil, err
	}
	raw, err := res.Raw()
	if err != nil {
		return nil, err
	}
	var r v1alpha1.SchedulingDecision
	return &r, json.Unmarshal(raw, &r)
}

// TestDecisionRecordsAreSchedulingDecisions: the scheduler of `glassplane
// up` (as system:kube-scheduler) keeps each pod's decision record as the
// SchedulingDecision of the pod's name in the pod's namespace, owned by
// the pod: kubectl lists it with its columns and describes it, a user
// with view in the namespace reads it (and may not change it), nothing
// goes into glassplane-system or onto the pod, the dashboard's scheduler
// page shows it, and without it explains the pod by its events; the
// garbage collector deletes it with its pod.
func TestDecisionRecordsAreSchedulingDecisions(t *testing.T) {
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

	Eventually(t, 60*time.Second, "a record per pod in "+ns, func() error {
		raw, err := c.Client.CoreV1().RESTClient().Get().AbsPath(decisionsPath(ns)...).SetHeader("Accept", "application/json").DoRaw(ctx)
		if err != nil {
			return err
		}
		var list v1alpha1.SchedulingDecisionList
		if err := json.Unmarshal(raw, &list); err != nil {
			return err
		}
		var got []string
		for _, r := range list.Items {
			got = append(got, r.Name)
		}
		sort.Strings(got)
		if strings.Join(got, ",") != strings.Join(names, ",") {
			return fmt.Errorf("records %v", got)
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
		r, err := decisionRecord(ctx, c, ns, n)
		if err != nil {
			t.Fatalf("record of %s: %v", n, err)
		}
		if r.PodUID != pod.UID || len(r.OwnerReferences) != 1 || r.OwnerReferences[0].Kind != "Pod" || r.OwnerReferences[0].UID != pod.UID {
			t.Errorf("record %s: pod uid %q, ownerReferences %+v; want the pod's %s", n, r.PodUID, r.OwnerReferences, pod.UID)
		}
		if len(r.Attempts) == 0 || r.Attempts[len(r.Attempts)-1].Node != nodes[n] || len(r.Attempts[len(r.Attempts)-1].Filter) == 0 {
			t.Errorf("record %s: attempts %+v, want the last to choose %s", n, r.Attempts, nodes[n])
		}
	}
	if cms, err := c.Client.CoreV1().ConfigMaps(rbac.NamespaceGlassplaneSystem).List(ctx, metav1.ListOptions{}); err != nil {
		t.Fatal(err)
	} else {
		for _, cm := range cms.Items {
			if strings.HasPrefix(cm.Name, ns+".") {
				t.Errorf("a ConfigMap %s/%s still holds a decision", cm.Namespace, cm.Name)
			}
		}
	}

	out := c.MustKubectl(t, "", "get", "schedulingdecisions", "-n", ns)
	if header := strings.Join(strings.Fields(strings.SplitN(out, "\n", 2)[0]), " "); header != "NAME NODE ATTEMPTS LAST ATTEMPT AGE" {
		t.Errorf("kubectl get schedulingdecisions has the columns %q:\n%s", header, out)
	}
	for _, n := range names {
		if !strings.Contains(out, n) || !strings.Contains(out, nodes[n]) {
			t.Errorf("kubectl get schedulingdecisions lacks %s on %s:\n%s", n, nodes[n], out)
		}
	}
	pod, err := c.Client.CoreV1().Pods(ns).Get(ctx, "rec-a", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if out := c.MustKubectl(t, "", "get", "schedulingdecision.glassplane.io", "rec-a", "-n", ns, "-o", "wide"); !strings.Contains(out, "POD UID") || !strings.Contains(out, string(pod.UID)) {
		t.Errorf("kubectl get -o wide lacks the pod's uid:\n%s", out)
	}
	if out := c.MustKubectl(t, "", "describe", "schedulingdecision", "rec-a", "-n", ns); !strings.Contains(out, string(pod.UID)) || !strings.Contains(out, nodes["rec-a"]) || !strings.Contains(out, "NodeResourcesFit") {
		t.Errorf("kubectl describe schedulingdecision lacks the pod's uid, its node or the plugins:\n%s", out)
	}

	const viewer = "record-viewer"
	if _, err := c.Client.RbacV1().RoleBindings(ns).Create(ctx, &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "view"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "view"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: viewer}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	Eventually(t, 30*time.Second, "the viewer to read the records", func() error {
		out, err := c.Kubectl(t, "", "get", "schedulingdecisions", "-n", ns, "--as", viewer)
		if err != nil || !strings.Contains(out, "rec-a") {
			return fmt.Errorf("%v: %s", err, out)
		}
		return nil
	})
	if out, _ := c.Kubectl(t, "", "auth", "can-i", "patch", "schedulingdecisions.glassplane.io", "-n", ns, "--as", viewer); strings.TrimSpace(out) != "no" {
		t.Errorf("a viewer may patch the records: %s", out)
	}

	body := getPage(t, c, "/scheduler/"+ns+"/rec-a")
	if !strings.Contains(body, `data-testid="sched-matrix"`) || !strings.Contains(body, nodes["rec-a"]) || !strings.Contains(body, "schedulingdecisions.glassplane.io/rec-a") {
		t.Errorf("the scheduler page of rec-a lacks the matrix, node %s or the record\n%s", nodes["rec-a"], tail(body, 40))
	}
	// Without its record (as under kube-scheduler), rec-b is explained by
	// its Scheduled event, and the page says why there is no more.
	c.MustKubectl(t, "", "delete", "schedulingdecision", "rec-b", "-n", ns)
	body = getPage(t, c, "/scheduler/"+ns+"/rec-b")
	if !strings.Contains(body, `data-testid="sched-no-record"`) || !strings.Contains(body, `data-reason="Scheduled"`) || !strings.Contains(body, "Successfully assigned "+ns+"/rec-b to "+nodes["rec-b"]) || strings.Contains(body, `data-testid="sched-matrix"`) {
		t.Errorf("the scheduler page of rec-b without its record does not explain it by its events\n%s", tail(body, 60))
	}

	if err := c.Client.CoreV1().Pods(ns).Delete(ctx, "rec-a", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	Eventually(t, 90*time.Second, "the record deleted with its pod", func() error {
		_, err := decisionRecord(ctx, c, ns, "rec-a")
		if err == nil {
			return fmt.Errorf("the record of rec-a still exists")
		}
		if !apierrors.IsNotFound(err) {
			return err
		}
		return nil
	})
	if _, err := decisionRecord(ctx, c, ns, "rec-c"); err != nil {
		t.Errorf("the record of rec-c went with rec-a: %v", err)
	}
}

// getPage reads a dashboard page, which must answer 200.
func getPage(t *testing.T, c *Cluster, path string) string {
	t.Helper()
	resp, err := http.Get(c.WebURL + path)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s = %d\n%s", path, resp.StatusCode, tail(string(raw), 40))
	}
	return string(raw)
}
