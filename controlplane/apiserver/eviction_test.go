package apiserver_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	policyv1beta1 "k8s.io/api/policy/v1beta1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"

	"github.com/glassplane/glassplane/controlplane/apiserver/auth/rbac"
)

// runningPod creates a pod labelled app=web and moves it to Running, ready
// or not, with finalizers if given (so that an evicted pod stays to be
// looked at).
func runningPod(t *testing.T, ns, name string, ready bool, finalizers ...string) *corev1.Pod {
	t.Helper()
	ctx := ctxT(t)
	p := testPod(name)
	p.Labels["app"] = "web"
	p.Finalizers = finalizers
	created, err := shared.client.CoreV1().Pods(ns).Create(ctx, p, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create pod %s: %v", name, err)
	}
	readiness := corev1.ConditionFalse
	if ready {
		readiness = corev1.ConditionTrue
	}
	created.Status.Phase = corev1.PodRunning
	created.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: readiness}}
	running, err := shared.client.CoreV1().Pods(ns).UpdateStatus(ctx, created, metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("pod %s to Running: %v", name, err)
	}
	return running
}

// budget creates a PodDisruptionBudget selecting app=web and writes its
// status through /status; observedGeneration < 0 means the budget's
// generation.
func budget(t *testing.T, ns, name string, spec policyv1.PodDisruptionBudgetSpec, status policyv1.PodDisruptionBudgetStatus) *policyv1.PodDisruptionBudget {
	t.Helper()
	ctx := ctxT(t)
	if spec.Selector == nil {
		spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}
	}
	if spec.MinAvailable == nil && spec.MaxUnavailable == nil {
		spec.MaxUnavailable = intOrString(intstr.FromInt32(1))
	}
	pdbs := shared.client.PolicyV1().PodDisruptionBudgets(ns)
	created, err := pdbs.Create(ctx, testBudget(name, spec), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create budget %s: %v", name, err)
	}
	if status.ObservedGeneration < 0 {
		status.ObservedGeneration = created.Generation
	}
	created.Status = status
	out, err := pdbs.UpdateStatus(ctx, created, metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("budget %s status: %v", name, err)
	}
	return out
}

// evict posts an Eviction for pod and returns the response and its Status.
func evict(t *testing.T, ns, pod, query, body string) (*http.Response, metav1.Status) {
	t.Helper()
	if body == "" {
		body = fmt.Sprintf(`{"apiVersion":"policy/v1","kind":"Eviction","metadata":{"name":%q}}`, pod)
	}
	path := "/api/v1/namespaces/" + ns + "/pods/" + pod + "/eviction" + query
	resp, out := shared.do(t, http.MethodPost, path, "application/json", strings.NewReader(body))
	var st metav1.Status
	if err := json.Unmarshal([]byte(out), &st); err != nil || st.Kind != "Status" {
		t.Fatalf("eviction answer is not a Status (%v): %s", err, out)
	}
	return resp, st
}

func podGone(t *testing.T, ns, name string) bool {
	t.Helper()
	_, err := shared.client.CoreV1().Pods(ns).Get(context.Background(), name, metav1.GetOptions{})
	return apierrors.IsNotFound(err)
}

func getBudget(t *testing.T, ns, name string) *policyv1.PodDisruptionBudget {
	t.Helper()
	pdb, err := shared.client.PolicyV1().PodDisruptionBudgets(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get budget %s: %v", name, err)
	}
	return pdb
}

// wantEvicted checks kube-apiserver's answer to a successful eviction.
func wantEvicted(t *testing.T, resp *http.Response, st metav1.Status) {
	t.Helper()
	if resp.StatusCode != http.StatusCreated || st.Status != metav1.StatusSuccess || st.Code != http.StatusCreated {
		t.Fatalf("eviction: %d %+v, want 201 Success", resp.StatusCode, st)
	}
}

// wantBudgetRefusal checks a 429 with the DisruptionBudget cause.
func wantBudgetRefusal(t *testing.T, resp *http.Response, st metav1.Status, cause string) {
	t.Helper()
	if resp.StatusCode != http.StatusTooManyRequests || st.Reason != metav1.StatusReasonTooManyRequests ||
		st.Message != "Cannot evict pod as it would violate the pod's disruption budget." {
		t.Fatalf("eviction: %d %+v, want 429 TooManyRequests", resp.StatusCode, st)
	}
	if st.Details == nil || len(st.Details.Causes) != 1 || st.Details.Causes[0].Type != policyv1.DisruptionBudgetCause || st.Details.Causes[0].Message != cause {
		t.Fatalf("causes = %+v, want one DisruptionBudget cause %q", st.Details, cause)
	}
}

func TestEvictionWithoutBudgetMarksAndDeletesThePod(t *testing.T) {
	ctx := ctxT(t)
	ns := shared.namespace(t)
	runningPod(t, ns, "gone", true)
	resp, st := evict(t, ns, "gone", "", "")
	wantEvicted(t, resp, st)
	if !podGone(t, ns, "gone") {
		t.Errorf("pod still there after eviction")
	}

	// A finalizer keeps the evicted pod to show what the eviction did.
	runningPod(t, ns, "held", true, "example.com/hold")
	resp, st = evict(t, ns, "held", "", "")
	wantEvicted(t, resp, st)
	pod, err := shared.client.CoreV1().Pods(ns).Get(ctx, "held", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if pod.DeletionTimestamp == nil {
		t.Errorf("evicted pod is not being deleted")
	}
	var target *corev1.PodCondition
	for i := range pod.Status.Conditions {
		if pod.Status.Conditions[i].Type == corev1.DisruptionTarget {
			target = &pod.Status.Conditions[i]
		}
	}
	if target == nil || target.Status != corev1.ConditionTrue || target.Reason != "EvictionByEvictionAPI" || target.Message != "Eviction API: evicting" {
		t.Errorf("DisruptionTarget condition = %+v", target)
	}
}

func TestEvictionTakesADisruptionFromTheBudget(t *testing.T) {
	ns := shared.namespace(t)
	runningPod(t, ns, "web-1", true)
	runningPod(t, ns, "web-2", true)
	budget(t, ns, "web", policyv1.PodDisruptionBudgetSpec{}, policyv1.PodDisruptionBudgetStatus{
		ObservedGeneration: -1, DisruptionsAllowed: 1, CurrentHealthy: 2, DesiredHealthy: 1, ExpectedPods: 2,
	})

	resp, st := evict(t, ns, "web-1", "", "")
	wantEvicted(t, resp, st)
	if !podGone(t, ns, "web-1") {
		t.Errorf("web-1 still there after eviction")
	}
	pdb := getBudget(t, ns, "web")
	if pdb.Status.DisruptionsAllowed != 0 {
		t.Errorf("disruptionsAllowed = %d, want 0", pdb.Status.DisruptionsAllowed)
	}
	if _, ok := pdb.Status.DisruptedPods["web-1"]; !ok || len(pdb.Status.DisruptedPods) != 1 {
		t.Errorf("disruptedPods = %v, want web-1", pdb.Status.DisruptedPods)
	}
	if len(pdb.Status.Conditions) != 1 || pdb.Status.Conditions[0].Type != policyv1.DisruptionAllowedCondition ||
		pdb.Status.Conditions[0].Status != metav1.ConditionFalse || pdb.Status.Conditions[0].Reason != policyv1.InsufficientPodsReason {
		t.Errorf("conditions = %+v, want DisruptionAllowed False InsufficientPods", pdb.Status.Conditions)
	}

	resp, st = evict(t, ns, "web-2", "", "")
	wantBudgetRefusal(t, resp, st, "The disruption budget web needs 1 healthy pods and has 2 currently")
	if resp.Header.Get("Retry-After") != "" {
		t.Errorf("Retry-After = %q, want none", resp.Header.Get("Retry-After"))
	}
	if podGone(t, ns, "web-2") {
		t.Errorf("web-2 deleted although the budget refused")
	}
}

func TestEvictionRefusals(t *testing.T) {
	for _, tc := range []struct {
		name   string
		status policyv1.PodDisruptionBudgetStatus
		code   int
		check  func(t *testing.T, resp *http.Response, st metav1.Status)
	}{
		{"generation not observed", policyv1.PodDisruptionBudgetStatus{ObservedGeneration: 0, DisruptionsAllowed: 5}, http.StatusTooManyRequests,
			func(t *testing.T, resp *http.Response, st metav1.Status) {
				wantBudgetRefusal(t, resp, st, "The disruption budget web is still being processed by the server.")
				if resp.Header.Get("Retry-After") != "10" || st.Details.RetryAfterSeconds != 10 {
					t.Errorf("Retry-After = %q, retryAfterSeconds = %d, want 10", resp.Header.Get("Retry-After"), st.Details.RetryAfterSeconds)
				}
			}},
		{"too many disrupted pods", policyv1.PodDisruptionBudgetStatus{ObservedGeneration: -1, DisruptionsAllowed: 1, DisruptedPods: manyDisrupted(2001)}, http.StatusForbidden,
			func(t *testing.T, resp *http.Response, st metav1.Status) {
				want := `poddisruptionbudget.policy "web" is forbidden: DisruptedPods map too big - too many evictions not confirmed by PDB controller`
				if st.Reason != metav1.StatusReasonForbidden || st.Message != want {
					t.Errorf("got %s %q, want Forbidden %q", st.Reason, st.Message, want)
				}
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ns := shared.namespace(t)
			runningPod(t, ns, "web-1", true)
			budget(t, ns, "web", policyv1.PodDisruptionBudgetSpec{}, tc.status)
			resp, st := evict(t, ns, "web-1", "", "")
			if resp.StatusCode != tc.code {
				t.Fatalf("code = %d, want %d: %+v", resp.StatusCode, tc.code, st)
			}
			tc.check(t, resp, st)
			if podGone(t, ns, "web-1") {
				t.Errorf("pod deleted although the eviction was refused")
			}
			if got := getBudget(t, ns, "web").Status.DisruptionsAllowed; got != tc.status.DisruptionsAllowed {
				t.Errorf("disruptionsAllowed = %d, want it unchanged at %d", got, tc.status.DisruptionsAllowed)
			}
		})
	}
}

func manyDisrupted(n int) map[string]metav1.Time {
	out := make(map[string]metav1.Time, n)
	for i := range n {
		out[fmt.Sprintf("p-%d", i)] = metav1.Now()
	}
	return out
}

func TestEvictionWithTwoBudgets(t *testing.T) {
	ns := shared.namespace(t)
	runningPod(t, ns, "web-1", true)
	status := policyv1.PodDisruptionBudgetStatus{ObservedGeneration: -1, DisruptionsAllowed: 1}
	budget(t, ns, "one", policyv1.PodDisruptionBudgetSpec{}, status)
	budget(t, ns, "two", policyv1.PodDisruptionBudgetSpec{}, status)
	resp, st := evict(t, ns, "web-1", "", "")
	if resp.StatusCode != http.StatusInternalServerError || st.Status != metav1.StatusFailure ||
		st.Message != "This pod has more than one PodDisruptionBudget, which the eviction subresource does not support." {
		t.Fatalf("eviction: %d %+v", resp.StatusCode, st)
	}
	if podGone(t, ns, "web-1") {
		t.Errorf("pod deleted")
	}
}

// TestEvictionUnguarded evicts pods the budget does not guard: pending
// pods, unready pods the budget can spare, and pods it does not select
// (an empty selector selects none here, as in kube-apiserver).
func TestEvictionUnguarded(t *testing.T) {
	always := policyv1.AlwaysAllow
	for _, tc := range []struct {
		name    string
		pod     func(t *testing.T, ns string)
		spec    policyv1.PodDisruptionBudgetSpec
		status  policyv1.PodDisruptionBudgetStatus
		evicted bool
	}{
		{"pending", func(t *testing.T, ns string) {
			p := testPod("web-1")
			p.Labels["app"] = "web"
			if _, err := shared.client.CoreV1().Pods(ns).Create(ctxT(t), p, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}, policyv1.PodDisruptionBudgetSpec{}, policyv1.PodDisruptionBudgetStatus{ObservedGeneration: -1}, true},
		{"unready-healthy-budget", func(t *testing.T, ns string) { runningPod(t, ns, "web-1", false) },
			policyv1.PodDisruptionBudgetSpec{}, policyv1.PodDisruptionBudgetStatus{ObservedGeneration: -1, CurrentHealthy: 2, DesiredHealthy: 2}, true},
		{"unready-unhealthy-budget", func(t *testing.T, ns string) { runningPod(t, ns, "web-1", false) },
			policyv1.PodDisruptionBudgetSpec{}, policyv1.PodDisruptionBudgetStatus{ObservedGeneration: -1, CurrentHealthy: 1, DesiredHealthy: 2}, false},
		{"unready-always-allow", func(t *testing.T, ns string) { runningPod(t, ns, "web-1", false) },
			policyv1.PodDisruptionBudgetSpec{UnhealthyPodEvictionPolicy: &always}, policyv1.PodDisruptionBudgetStatus{ObservedGeneration: -1, CurrentHealthy: 1, DesiredHealthy: 2}, true},
		{"empty-selector", func(t *testing.T, ns string) { runningPod(t, ns, "web-1", true) },
			policyv1.PodDisruptionBudgetSpec{Selector: &metav1.LabelSelector{}}, policyv1.PodDisruptionBudgetStatus{ObservedGeneration: -1}, true},
		{"other-selector", func(t *testing.T, ns string) { runningPod(t, ns, "web-1", true) },
			policyv1.PodDisruptionBudgetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}}}, policyv1.PodDisruptionBudgetStatus{ObservedGeneration: -1}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ns := shared.namespace(t)
			tc.pod(t, ns)
			budget(t, ns, "web", tc.spec, tc.status)
			resp, st := evict(t, ns, "web-1", "", "")
			if !tc.evicted {
				wantBudgetRefusal(t, resp, st, fmt.Sprintf("The disruption budget web needs %d healthy pods and has %d currently", tc.status.DesiredHealthy, tc.status.CurrentHealthy))
				if podGone(t, ns, "web-1") {
					t.Errorf("pod deleted")
				}
				return
			}
			wantEvicted(t, resp, st)
			if !podGone(t, ns, "web-1") {
				t.Errorf("pod still there")
			}
			if pdb := getBudget(t, ns, "web"); pdb.Status.DisruptionsAllowed != 0 || len(pdb.Status.DisruptedPods) != 0 {
				t.Errorf("budget touched: %+v", pdb.Status)
			}
		})
	}
}

func TestEvictionDryRun(t *testing.T) {
	for _, tc := range []struct{ name, query, body string }{
		{"query", "?dryRun=All", ""},
		{"deleteOptions", "", `{"apiVersion":"policy/v1","kind":"Eviction","metadata":{"name":"web-1"},"deleteOptions":{"dryRun":["All"]}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ns := shared.namespace(t)
			before := runningPod(t, ns, "web-1", true)
			budget(t, ns, "web", policyv1.PodDisruptionBudgetSpec{}, policyv1.PodDisruptionBudgetStatus{ObservedGeneration: -1, DisruptionsAllowed: 1})
			resp, st := evict(t, ns, "web-1", tc.query, tc.body)
			wantEvicted(t, resp, st)
			pod, err := shared.client.CoreV1().Pods(ns).Get(ctxT(t), "web-1", metav1.GetOptions{})
			if err != nil {
				t.Fatalf("dry-run eviction deleted the pod: %v", err)
			}
			if pod.ResourceVersion != before.ResourceVersion || pod.DeletionTimestamp != nil {
				t.Errorf("dry-run eviction changed the pod")
			}
			if pdb := getBudget(t, ns, "web"); pdb.Status.DisruptionsAllowed != 1 || len(pdb.Status.DisruptedPods) != 0 {
				t.Errorf("dry-run eviction changed the budget: %+v", pdb.Status)
			}
		})
	}
}

func TestEvictionBadRequests(t *testing.T) {
	ns := shared.namespace(t)
	runningPod(t, ns, "web-1", true)
	for _, tc := range []struct {
		name, pod, body string
		code            int
		message         string
	}{
		{"name mismatch", "web-1", `{"apiVersion":"policy/v1","kind":"Eviction","metadata":{"name":"other"}}`, http.StatusBadRequest,
			"name in URL does not match name in Eviction object"},
		{"namespace mismatch", "web-1", `{"apiVersion":"policy/v1","kind":"Eviction","metadata":{"name":"web-1","namespace":"elsewhere"}}`, http.StatusBadRequest,
			"the namespace of the provided object does not match the namespace sent on the request"},
		{"missing pod", "ghost", "", http.StatusNotFound, `pods "ghost" not found`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			resp, st := evict(t, ns, tc.pod, "", tc.body)
			if resp.StatusCode != tc.code || st.Message != tc.message {
				t.Errorf("got %d %q, want %d %q", resp.StatusCode, st.Message, tc.code, tc.message)
			}
		})
	}
	if podGone(t, ns, "web-1") {
		t.Errorf("a refused eviction deleted the pod")
	}
}

func TestEvictionAcceptsPolicyV1beta1(t *testing.T) {
	ns := shared.namespace(t)
	runningPod(t, ns, "web-1", true)
	resp, st := evict(t, ns, "web-1", "", `{"apiVersion":"policy/v1beta1","kind":"Eviction","metadata":{"name":"web-1"}}`)
	wantEvicted(t, resp, st)
	if !podGone(t, ns, "web-1") {
		t.Errorf("pod still there")
	}
}

// TestEvictionWithClientGo evicts as kubectl drain does, which retries
// while apierrors.IsTooManyRequests holds.
func TestEvictionWithClientGo(t *testing.T) {
	ctx := ctxT(t)
	ns := shared.namespace(t)
	runningPod(t, ns, "web-1", true)
	runningPod(t, ns, "web-2", true)
	budget(t, ns, "web", policyv1.PodDisruptionBudgetSpec{}, policyv1.PodDisruptionBudgetStatus{ObservedGeneration: -1, DisruptionsAllowed: 1, CurrentHealthy: 2, DesiredHealthy: 1})
	evictions := shared.client.PolicyV1().Evictions(ns)
	if err := evictions.Evict(ctx, &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: "web-1", Namespace: ns}}); err != nil {
		t.Fatalf("first eviction: %v", err)
	}
	if !podGone(t, ns, "web-1") {
		t.Errorf("web-1 still there")
	}
	err := evictions.Evict(ctx, &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: "web-2", Namespace: ns}})
	if !apierrors.IsTooManyRequests(err) {
		t.Fatalf("second eviction: %v, want TooManyRequests", err)
	}
	if got := err.Error(); got != "Cannot evict pod as it would violate the pod's disruption budget." {
		t.Errorf("error = %q", got)
	}

	// kube-controller-manager and kubectl send protobuf bodies.
	runningPod(t, ns, "web-3", true)
	pb, _ := protobufClient(t)
	err = pb.PolicyV1().Evictions(ns).Evict(ctx, &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: "web-3", Namespace: ns}})
	if !apierrors.IsTooManyRequests(err) {
		t.Fatalf("protobuf eviction: %v, want TooManyRequests", err)
	}
	if err := pb.PolicyV1beta1().Evictions(ns).Evict(ctx, &policyv1beta1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: "ghost", Namespace: ns}}); !apierrors.IsNotFound(err) {
		t.Errorf("protobuf policy/v1beta1 eviction of a missing pod: %v, want NotFound", err)
	}
}

// TestRBACEvictionAndBudgets checks the bootstrap policy for budgets and
// evictions: edit may evict and write budgets, view may only read budgets,
// the disruption controller (and the controller manager that runs it) may
// read budgets, write their status and read scales, and the scheduler may
// only read budgets.
func TestRBACEvictionAndBudgets(t *testing.T) {
	env := sharedRBACEnv(t)
	ns := env.namespace(t, "evictions")
	ctx := ctxT(t)
	for _, name := range []string{"web-1", "web-2"} {
		if _, err := env.admin.CoreV1().Pods(ns).Create(ctx, testPod(name), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	evictPod := func(c kubernetes.Interface, name string) error {
		return c.PolicyV1().Evictions(ns).Evict(ctx, &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}})
	}
	selector := &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}

	vera := env.client(t, "vera")
	env.bind(t, ns, "vera-view", "view", userSubject("vera"))
	eventuallyAllowed(t, "vera to list budgets", func() error {
		_, err := vera.PolicyV1().PodDisruptionBudgets(ns).List(ctx, metav1.ListOptions{})
		return err
	})
	requireForbidden(t, evictPod(vera, "web-1"), `pods "web-1" is forbidden: User "vera" cannot create resource "pods/eviction" in API group "" in the namespace "evictions"`)
	_, err := vera.PolicyV1().PodDisruptionBudgets(ns).Create(ctx, testBudget("web", policyv1.PodDisruptionBudgetSpec{Selector: selector}), metav1.CreateOptions{})
	requireForbidden(t, err, `poddisruptionbudgets.policy is forbidden: User "vera" cannot create resource "poddisruptionbudgets" in API group "policy" in the namespace "evictions"`)

	eddie := env.client(t, "eddie")
	env.bind(t, ns, "eddie-edit", "edit", userSubject("eddie"))
	eventuallyAllowed(t, "eddie to evict", func() error { return evictPod(eddie, "web-1") })
	if _, err := eddie.PolicyV1().PodDisruptionBudgets(ns).Create(ctx, testBudget("web", policyv1.PodDisruptionBudgetSpec{Selector: selector}), metav1.CreateOptions{}); err != nil {
		t.Errorf("edit should create budgets: %v", err)
	}

	// The disruption controller's own service account holds only its role;
	// the controller manager, which runs it, holds that role too.
	for _, user := range []string{rbac.ServiceAccountUsername("kube-system", "disruption-controller"), rbac.UserKubeControllerManager} {
		c := env.client(t, user)
		pdb, err := c.PolicyV1().PodDisruptionBudgets(ns).Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			t.Fatalf("%s get budget: %v", user, err)
		}
		pdb.Status.ObservedGeneration = pdb.Generation
		if _, err := c.PolicyV1().PodDisruptionBudgets(ns).UpdateStatus(ctx, pdb, metav1.UpdateOptions{}); err != nil {
			t.Errorf("%s update budget status: %v", user, err)
		}
		// Not found, not forbidden: the request was authorized.
		if _, err := c.AppsV1().Deployments(ns).GetScale(ctx, "none", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("%s get deployments/scale: %v, want NotFound", user, err)
		}
		if _, err := c.AppsV1().ReplicaSets(ns).GetScale(ctx, "none", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("%s get replicasets/scale: %v, want NotFound", user, err)
		}
	}
	sa := env.client(t, rbac.ServiceAccountUsername("kube-system", "disruption-controller"))
	_, err = sa.PolicyV1().PodDisruptionBudgets(ns).Create(ctx, testBudget("other", policyv1.PodDisruptionBudgetSpec{Selector: selector}), metav1.CreateOptions{})
	requireForbidden(t, err, `poddisruptionbudgets.policy is forbidden: User "system:serviceaccount:kube-system:disruption-controller" cannot create resource "poddisruptionbudgets" in API group "policy" in the namespace "evictions"`)

	scheduler := env.client(t, rbac.UserKubeScheduler)
	if _, err := scheduler.PolicyV1().PodDisruptionBudgets(ns).List(ctx, metav1.ListOptions{}); err != nil {
		t.Errorf("scheduler list budgets: %v", err)
	}
	pdb, err := scheduler.PolicyV1().PodDisruptionBudgets(ns).Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("scheduler get budget: %v", err)
	}
	_, err = scheduler.PolicyV1().PodDisruptionBudgets(ns).UpdateStatus(ctx, pdb, metav1.UpdateOptions{})
	requireForbidden(t, err, `poddisruptionbudgets.policy "web" is forbidden: User "system:kube-scheduler" cannot update resource "poddisruptionbudgets/status" in API group "policy" in the namespace "evictions"`)
}
