package apiserver_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/apis/flowcontrol/bootstrap"
	utilflowcontrol "k8s.io/apiserver/pkg/util/flowcontrol"
	fq "k8s.io/apiserver/pkg/util/flowcontrol/fairqueuing"
	fcrequest "k8s.io/apiserver/pkg/util/flowcontrol/request"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"github.com/glassplane/glassplane/controlplane/apiserver"
)

// TestFlowControlClassifies runs API Priority and Fairness with upstream's
// controller: the bootstrap FlowSchemas and priority levels are made, the
// controller marks them not dangling, and each answer names the
// FlowSchema and priority level its request fell in, after
// impersonation, as kube-apiserver's do: a kubelet's request is in
// system-nodes (level system), the admin's in exempt.
func TestFlowControlClassifies(t *testing.T) {
	env := newEnv(t)
	ctx := ctxT(t)
	go env.server.RunFlowControl(ctx, env.config)

	fc := env.client.FlowcontrolV1()
	want := map[string]string{} // FlowSchema → its priority level
	for _, fs := range append(bootstrap.MandatoryFlowSchemas, bootstrap.SuggestedFlowSchemas...) {
		want[fs.Name] = fs.Spec.PriorityLevelConfiguration.Name
	}
	var schemas *flowcontrolv1.FlowSchemaList
	eventually(t, "the bootstrap FlowSchemas, found by the controller", func() bool {
		var err error
		if schemas, err = fc.FlowSchemas().List(ctx, metav1.ListOptions{}); err != nil || len(schemas.Items) != len(want) {
			return false
		}
		for _, fs := range schemas.Items {
			if want[fs.Name] != fs.Spec.PriorityLevelConfiguration.Name || len(fs.Status.Conditions) == 0 ||
				fs.Status.Conditions[0].Type != flowcontrolv1.FlowSchemaConditionDangling || fs.Status.Conditions[0].Status != flowcontrolv1.ConditionFalse {
				return false
			}
		}
		return true
	})
	levels, err := fc.PriorityLevelConfigurations().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	uid := map[string]string{}
	for _, fs := range schemas.Items {
		uid["fs/"+fs.Name] = string(fs.UID)
	}
	for _, pl := range levels.Items {
		uid["pl/"+pl.Name] = string(pl.UID)
	}

	node := rest.CopyConfig(env.config)
	node.Impersonate = rest.ImpersonationConfig{UserName: "system:node:n1", Groups: []string{"system:nodes", "system:authenticated"}}
	for _, c := range []struct {
		who       string
		cfg       *rest.Config
		fs, level string
	}{
		{"a kubelet", node, "system-nodes", "system"},
		{"the admin", env.config, "exempt", "exempt"},
	} {
		eventually(t, c.who+"'s request in "+c.fs, func() bool {
			h := headersOf(t, c.cfg, "/api/v1/namespaces/default/configmaps")
			return h.Get(flowcontrolv1.ResponseHeaderMatchedFlowSchemaUID) == uid["fs/"+c.fs] &&
				h.Get(flowcontrolv1.ResponseHeaderMatchedPriorityLevelConfigurationUID) == uid["pl/"+c.level]
		})
	}

	// A FlowSchema is kept as its owner changed it.
	fs, err := fc.FlowSchemas().Get(ctx, "global-default", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	fs.Spec.MatchingPrecedence = 9000
	if _, err := fc.FlowSchemas().Update(ctx, fs, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	restart, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- env.server.RunFlowControl(restart, env.config) }()
	eventually(t, "the changed FlowSchema kept on a restart", func() bool {
		got, err := fc.FlowSchemas().Get(ctx, "global-default", metav1.GetOptions{})
		return err == nil && got.Spec.MatchingPrecedence == 9000
	})
	cancel()
	<-done
}

// headersOf is the response headers of a GET of path as cfg's identity.
func headersOf(t *testing.T, cfg *rest.Config, path string) http.Header {
	t.Helper()
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	req, err := http.NewRequest(http.MethodGet, cfg.Host+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.Header
}

// refusing is a flow controller that classifies every request in one
// FlowSchema and priority level and never gives it a seat.
type refusing struct {
	utilflowcontrol.Interface
	fs *flowcontrolv1.FlowSchema
	pl *flowcontrolv1.PriorityLevelConfiguration
}

func (r refusing) Handle(ctx context.Context, _ utilflowcontrol.RequestDigest,
	noteFn func(*flowcontrolv1.FlowSchema, *flowcontrolv1.PriorityLevelConfiguration, string),
	workEstimator func() fcrequest.WorkEstimate, _ fq.QueueNoteFn, _ func()) {
	noteFn(r.fs, r.pl, "")
	workEstimator()
}

// TestFlowControlRefuses checks the answer to a request its priority level
// has no seat for: 429 TooManyRequests as a Status, with Retry-After and
// the FlowSchema and level named, and nothing done. Long-running requests
// (a watch) are not held.
func TestFlowControlRefuses(t *testing.T) {
	env := newEnv(t)
	ctx := ctxT(t)
	fs := &flowcontrolv1.FlowSchema{ObjectMeta: metav1.ObjectMeta{Name: "busy", UID: "fs-uid"}}
	pl := &flowcontrolv1.PriorityLevelConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "busy", UID: "pl-uid"}}
	apiserver.SetFlowControl(env.server, refusing{fs: fs, pl: pl})

	// A watch is not held: it is answered, and its stream opened.
	watch, err := http.NewRequestWithContext(ctx, http.MethodGet, env.url+"/api/v1/namespaces/default/configmaps?watch=true", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := env.http.Do(watch)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("a watch was held: %s", resp.Status)
	}
	resp, body := env.do(t, http.MethodPost, "/api/v1/namespaces/default/configmaps", "application/json",
		strings.NewReader(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"refused"}}`))
	var status metav1.Status
	if err := json.Unmarshal([]byte(body), &status); err != nil {
		t.Fatalf("the refusal is not a Status: %v: %s", err, body)
	}
	if resp.StatusCode != http.StatusTooManyRequests || status.Reason != metav1.StatusReasonTooManyRequests || status.Details == nil || status.Details.RetryAfterSeconds < 1 {
		t.Errorf("create = %s %s", resp.Status, body)
	}
	if resp.Header.Get("Retry-After") == "" || resp.Header.Get(flowcontrolv1.ResponseHeaderMatchedFlowSchemaUID) != "fs-uid" || resp.Header.Get(flowcontrolv1.ResponseHeaderMatchedPriorityLevelConfigurationUID) != "pl-uid" {
		t.Errorf("the refusal's headers = %v", resp.Header)
	}
	apiserver.SetFlowControl(env.server, nil)
	if _, err := env.client.CoreV1().ConfigMaps("default").Get(ctx, "refused", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the refused create was stored: %v", err)
	}
}

// TestFlowControlObjects checks the defaults and validation of FlowSchemas
// and PriorityLevelConfigurations while flow control runs: a minimal level
// gets kube-apiserver's defaults (30 shares, 0% lendable, 64 queues of 50
// with hands of 8), a broken one is refused with 422 naming the fields,
// nothing of it stored, and requests go on being answered.
func TestFlowControlObjects(t *testing.T) {
	env := newEnv(t)
	ctx := ctxT(t)
	go env.server.RunFlowControl(ctx, env.config)
	fc := env.client.FlowcontrolV1()

	pl, err := fc.PriorityLevelConfigurations().Create(ctx, &flowcontrolv1.PriorityLevelConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "minimal"},
		Spec: flowcontrolv1.PriorityLevelConfigurationSpec{Type: flowcontrolv1.PriorityLevelEnablementLimited, Limited: &flowcontrolv1.LimitedPriorityLevelConfiguration{
			LimitResponse: flowcontrolv1.LimitResponse{Type: flowcontrolv1.LimitResponseTypeQueue, Queuing: &flowcontrolv1.QueuingConfiguration{}},
		}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	l := pl.Spec.Limited
	if l.NominalConcurrencyShares == nil || *l.NominalConcurrencyShares != 30 || l.LendablePercent == nil || *l.LendablePercent != 0 ||
		*l.LimitResponse.Queuing != (flowcontrolv1.QueuingConfiguration{Queues: 64, HandSize: 8, QueueLengthLimit: 50}) {
		t.Errorf("minimal level's spec = %+v, queuing %+v", l, l.LimitResponse.Queuing)
	}
	fs, err := fc.FlowSchemas().Create(ctx, &flowcontrolv1.FlowSchema{
		ObjectMeta: metav1.ObjectMeta{Name: "minimal"},
		Spec: flowcontrolv1.FlowSchemaSpec{PriorityLevelConfiguration: flowcontrolv1.PriorityLevelConfigurationReference{Name: "minimal"}, Rules: []flowcontrolv1.PolicyRulesWithSubjects{{
			Subjects:      []flowcontrolv1.Subject{{Kind: flowcontrolv1.SubjectKindUser, User: &flowcontrolv1.UserSubject{Name: "someone"}}},
			ResourceRules: []flowcontrolv1.ResourcePolicyRule{{Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"}, ClusterScope: true, Namespaces: []string{"*"}}},
		}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if fs.Spec.MatchingPrecedence != 1000 {
		t.Errorf("minimal FlowSchema's matchingPrecedence = %d, want 1000", fs.Spec.MatchingPrecedence)
	}

	for _, c := range []struct {
		name   string
		create func() error
		fields []string
	}{
		{"level without its limited part", func() error {
			_, err := fc.PriorityLevelConfigurations().Create(ctx, &flowcontrolv1.PriorityLevelConfiguration{
				ObjectMeta: metav1.ObjectMeta{Name: "broken"},
				Spec:       flowcontrolv1.PriorityLevelConfigurationSpec{Type: flowcontrolv1.PriorityLevelEnablementLimited},
			}, metav1.CreateOptions{})
			return err
		}, []string{"spec.limited"}},
		{"level with a hand larger than its queues and a bad percent", func() error {
			_, err := fc.PriorityLevelConfigurations().Create(ctx, &flowcontrolv1.PriorityLevelConfiguration{
				ObjectMeta: metav1.ObjectMeta{Name: "broken"},
				Spec: flowcontrolv1.PriorityLevelConfigurationSpec{Type: flowcontrolv1.PriorityLevelEnablementLimited, Limited: &flowcontrolv1.LimitedPriorityLevelConfiguration{
					LendablePercent: ptr.To[int32](101),
					LimitResponse:   flowcontrolv1.LimitResponse{Type: flowcontrolv1.LimitResponseTypeQueue, Queuing: &flowcontrolv1.QueuingConfiguration{Queues: 2, HandSize: 3, QueueLengthLimit: 1}},
				}},
			}, metav1.CreateOptions{})
			return err
		}, []string{"spec.limited.lendablePercent", "spec.limited.limitResponse.queuing.handSize"}},
		{"a second exempt level", func() error {
			_, err := fc.PriorityLevelConfigurations().Create(ctx, &flowcontrolv1.PriorityLevelConfiguration{
				ObjectMeta: metav1.ObjectMeta{Name: "broken"},
				Spec:       flowcontrolv1.PriorityLevelConfigurationSpec{Type: flowcontrolv1.PriorityLevelEnablementExempt},
			}, metav1.CreateOptions{})
			return err
		}, []string{"spec.type"}},
		{"FlowSchema with a user subject without its user", func() error {
			_, err := fc.FlowSchemas().Create(ctx, &flowcontrolv1.FlowSchema{
				ObjectMeta: metav1.ObjectMeta{Name: "broken"},
				Spec: flowcontrolv1.FlowSchemaSpec{MatchingPrecedence: 20000, PriorityLevelConfiguration: flowcontrolv1.PriorityLevelConfigurationReference{Name: "minimal"}, Rules: []flowcontrolv1.PolicyRulesWithSubjects{{
					Subjects:         []flowcontrolv1.Subject{{Kind: flowcontrolv1.SubjectKindUser}},
					NonResourceRules: []flowcontrolv1.NonResourcePolicyRule{{Verbs: []string{"get"}, NonResourceURLs: []string{"/healthz"}}},
				}}},
			}, metav1.CreateOptions{})
			return err
		}, []string{"spec.matchingPrecedence", "spec.rules[0].subjects[0].user"}},
	} {
		err := c.create()
		if !apierrors.IsInvalid(err) {
			t.Errorf("%s: %v, want 422", c.name, err)
			continue
		}
		causes := map[string]bool{}
		for _, cause := range err.(apierrors.APIStatus).Status().Details.Causes {
			causes[cause.Field] = true
		}
		for _, f := range c.fields {
			if !causes[f] {
				t.Errorf("%s: no cause for %s in %v", c.name, f, err)
			}
		}
	}
	if _, err := fc.PriorityLevelConfigurations().Get(ctx, "broken", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("a refused level was stored: %v", err)
	}
	// The controller took the minimal objects in, and the server answers.
	eventually(t, "the minimal FlowSchema found by the controller", func() bool {
		got, err := fc.FlowSchemas().Get(ctx, "minimal", metav1.GetOptions{})
		return err == nil && len(got.Status.Conditions) > 0 && got.Status.Conditions[0].Status == flowcontrolv1.ConditionFalse
	})
}
