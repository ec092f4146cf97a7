package apiserver_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/glassplane/glassplane/controlplane/storage"
)

func testBudget(name string, spec policyv1.PodDisruptionBudgetSpec) *policyv1.PodDisruptionBudget {
	return &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: spec}
}

func intOrString(v intstr.IntOrString) *intstr.IntOrString { return &v }

func TestPodDisruptionBudgetCreateGetListUpdate(t *testing.T) {
	ctx := ctxT(t)
	ns := shared.namespace(t)
	pdbs := shared.client.PolicyV1().PodDisruptionBudgets(ns)

	in := testBudget("web", policyv1.PodDisruptionBudgetSpec{
		MinAvailable: intOrString(intstr.FromInt32(2)),
		Selector:     &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
	})
	in.Status.DisruptionsAllowed = 7
	created, err := pdbs.Create(ctx, in, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	if created.Generation != 1 || created.Status.DisruptionsAllowed != 0 {
		t.Errorf("create: generation %d, disruptionsAllowed %d; want 1 and a reset status", created.Generation, created.Status.DisruptionsAllowed)
	}
	if _, err := shared.store.Get(ctx, storage.Key("poddisruptionbudgets", ns, "web")); err != nil {
		t.Errorf("etcd key /registry/poddisruptionbudgets/%s/web: %v", ns, err)
	}
	list, err := pdbs.List(ctx, metav1.ListOptions{})
	if err != nil || len(list.Items) != 1 || list.Items[0].Name != "web" {
		t.Fatalf("list: %+v %v", list, err)
	}

	got, err := pdbs.Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get: %v", err)
	}
	got.Spec.MinAvailable = intOrString(intstr.FromString("50%"))
	got.Status.DisruptionsAllowed = 3
	updated, err := pdbs.Update(ctx, got, metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("update: %v", err)
	}
	if updated.Generation != 2 || updated.Spec.MinAvailable.String() != "50%" {
		t.Errorf("update: generation %d, minAvailable %v; want 2 and 50%%", updated.Generation, updated.Spec.MinAvailable)
	}
	if updated.Status.DisruptionsAllowed != 0 {
		t.Errorf("update of the main resource changed status.disruptionsAllowed to %d", updated.Status.DisruptionsAllowed)
	}

	updated.Status = policyv1.PodDisruptionBudgetStatus{ObservedGeneration: 2, DisruptionsAllowed: 1, CurrentHealthy: 3, DesiredHealthy: 2, ExpectedPods: 3}
	updated.Spec.MinAvailable = intOrString(intstr.FromInt32(9))
	st, err := pdbs.UpdateStatus(ctx, updated, metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("update status: %v", err)
	}
	if st.Status.DisruptionsAllowed != 1 || st.Status.ObservedGeneration != 2 {
		t.Errorf("status not written: %+v", st.Status)
	}
	if st.Spec.MinAvailable.String() != "50%" || st.Generation != 2 {
		t.Errorf("status update changed spec: minAvailable %v, generation %d", st.Spec.MinAvailable, st.Generation)
	}

	_, err = pdbs.UpdateStatus(ctx, &policyv1.PodDisruptionBudget{ObjectMeta: st.ObjectMeta, Status: policyv1.PodDisruptionBudgetStatus{DisruptionsAllowed: -1}}, metav1.UpdateOptions{})
	if !hasCause(err, "status.disruptionsAllowed", "must be greater than or equal to 0") {
		t.Errorf("negative disruptionsAllowed through /status: %v", err)
	}
}

// hasCause reports whether err is a 422 Invalid with a cause on field whose
// message contains msg.
func hasCause(err error, field, msg string) bool {
	if !apierrors.IsInvalid(err) {
		return false
	}
	for _, c := range err.(apierrors.APIStatus).Status().Details.Causes {
		if c.Field == field && strings.Contains(c.Message, msg) {
			return true
		}
	}
	return false
}

func TestPodDisruptionBudgetValidation(t *testing.T) {
	ctx := ctxT(t)
	ns := shared.namespace(t)
	pdbs := shared.client.PolicyV1().PodDisruptionBudgets(ns)
	selector := &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}
	policy := func(p policyv1.UnhealthyPodEvictionPolicyType) *policyv1.UnhealthyPodEvictionPolicyType { return &p }
	cases := []struct {
		name  string
		spec  policyv1.PodDisruptionBudgetSpec
		field string
		msg   string
	}{
		{"both set", policyv1.PodDisruptionBudgetSpec{MinAvailable: intOrString(intstr.FromInt32(1)), MaxUnavailable: intOrString(intstr.FromInt32(1)), Selector: selector},
			"spec", "minAvailable and maxUnavailable cannot be both set"},
		{"negative minAvailable", policyv1.PodDisruptionBudgetSpec{MinAvailable: intOrString(intstr.FromInt32(-1)), Selector: selector},
			"spec.minAvailable", "must be greater than or equal to 0"},
		{"maxUnavailable over 100%", policyv1.PodDisruptionBudgetSpec{MaxUnavailable: intOrString(intstr.FromString("120%")), Selector: selector},
			"spec.maxUnavailable", "must not be greater than 100%"},
		{"minAvailable not a percent", policyv1.PodDisruptionBudgetSpec{MinAvailable: intOrString(intstr.FromString("half")), Selector: selector},
			"spec.minAvailable", "a valid percent string must be a numeric string followed by an ending '%'"},
		{"bad selector operator", policyv1.PodDisruptionBudgetSpec{MinAvailable: intOrString(intstr.FromInt32(1)),
			Selector: &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "app", Operator: "Near", Values: []string{"x"}}}}},
			"spec.selector.matchExpressions[0].operator", "not a valid selector operator"},
		{"bad selector label", policyv1.PodDisruptionBudgetSpec{MinAvailable: intOrString(intstr.FromInt32(1)),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "not valid!"}}},
			"spec.selector.matchLabels", "a valid label must be"},
		{"unknown eviction policy", policyv1.PodDisruptionBudgetSpec{MinAvailable: intOrString(intstr.FromInt32(1)), Selector: selector, UnhealthyPodEvictionPolicy: policy("Sometimes")},
			"spec.unhealthyPodEvictionPolicy", `Unsupported value: "Sometimes": supported values: "AlwaysAllow", "IfHealthyBudget"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := pdbs.Create(ctx, testBudget("bad", tc.spec), metav1.CreateOptions{})
			if !hasCause(err, tc.field, tc.msg) {
				t.Fatalf("create: got %v, want 422 with %s: %s", err, tc.field, tc.msg)
			}
		})
	}

	if _, err := pdbs.Create(ctx, testBudget("good", policyv1.PodDisruptionBudgetSpec{MaxUnavailable: intOrString(intstr.FromString("100%")), Selector: selector, UnhealthyPodEvictionPolicy: policy(policyv1.AlwaysAllow)}), metav1.CreateOptions{}); err != nil {
		t.Fatalf("valid budget refused: %v", err)
	}
	good, err := pdbs.Get(ctx, "good", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	good.Spec.MinAvailable = intOrString(intstr.FromInt32(1))
	if _, err := pdbs.Update(ctx, good, metav1.UpdateOptions{}); !hasCause(err, "spec", "minAvailable and maxUnavailable cannot be both set") {
		t.Errorf("update setting both: %v", err)
	}
}

func TestPodDisruptionBudgetTable(t *testing.T) {
	ctx := ctxT(t)
	ns := shared.namespace(t)
	pdbs := shared.client.PolicyV1().PodDisruptionBudgets(ns)
	selector := &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}
	if _, err := pdbs.Create(ctx, testBudget("a-min", policyv1.PodDisruptionBudgetSpec{MinAvailable: intOrString(intstr.FromString("50%")), Selector: selector}), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	b, err := pdbs.Create(ctx, testBudget("b-max", policyv1.PodDisruptionBudgetSpec{MaxUnavailable: intOrString(intstr.FromInt32(1)), Selector: selector}), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	b.Status = policyv1.PodDisruptionBudgetStatus{ObservedGeneration: 1, DisruptionsAllowed: 2}
	if _, err := pdbs.UpdateStatus(ctx, b, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}

	req, err := http.NewRequestWithContext(ctx, http.MethodGet, shared.url+"/apis/policy/v1/namespaces/"+ns+"/poddisruptionbudgets", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io")
	resp, err := shared.http.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var table metav1.Table
	if err := json.Unmarshal(raw, &table); err != nil || table.Kind != "Table" {
		t.Fatalf("not a table (%v): %s", err, raw)
	}
	var names []string
	for _, c := range table.ColumnDefinitions {
		names = append(names, c.Name)
	}
	if got, want := strings.Join(names, ","), "Name,Min Available,Max Unavailable,Allowed Disruptions,Age"; got != want {
		t.Errorf("columns = %s, want %s", got, want)
	}
	if len(table.Rows) != 2 {
		t.Fatalf("rows = %d, want 2", len(table.Rows))
	}
	wantRows := [][]any{{"a-min", "50%", "N/A", float64(0)}, {"b-max", "N/A", "1", float64(2)}}
	for i, want := range wantRows {
		cells := table.Rows[i].Cells
		for j, w := range want {
			if cells[j] != w {
				t.Errorf("row %d cell %d = %v, want %v", i, j, cells[j], w)
			}
		}
	}
}

func TestPodDisruptionBudgetDiscovery(t *testing.T) {
	list, err := shared.client.Discovery().ServerResourcesForGroupVersion("policy/v1")
	if err != nil {
		t.Fatalf("discovery of policy/v1: %v", err)
	}
	found := map[string]metav1.APIResource{}
	for _, r := range list.APIResources {
		found[r.Name] = r
	}
	pdb, ok := found["poddisruptionbudgets"]
	if !ok || !pdb.Namespaced || pdb.SingularName != "poddisruptionbudget" || strings.Join(pdb.ShortNames, ",") != "pdb" {
		t.Errorf("poddisruptionbudgets in discovery: %+v", pdb)
	}
	if _, ok := found["poddisruptionbudgets/status"]; !ok {
		t.Errorf("poddisruptionbudgets/status missing from discovery")
	}
	core, err := shared.client.Discovery().ServerResourcesForGroupVersion("v1")
	if err != nil {
		t.Fatal(err)
	}
	var eviction *metav1.APIResource
	for i := range core.APIResources {
		if core.APIResources[i].Name == "pods/eviction" {
			eviction = &core.APIResources[i]
		}
	}
	if eviction == nil || eviction.Group != "policy" || eviction.Version != "v1" || eviction.Kind != "Eviction" || strings.Join(eviction.Verbs, ",") != "create" {
		t.Errorf("pods/eviction in discovery: %+v", eviction)
	}
	resp, body := shared.do(t, http.MethodGet, "/openapi/v3/apis/policy/v1", "", nil)
	if resp.StatusCode != http.StatusOK || !strings.Contains(body, "io.k8s.api.policy.v1.PodDisruptionBudget") {
		t.Errorf("OpenAPI v3 for policy/v1: %d", resp.StatusCode)
	}
}
