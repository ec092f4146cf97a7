package apiserver

import (
	"context"
	"fmt"
	"time"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/apis/flowcontrol/bootstrap"
	"k8s.io/apiserver/pkg/authentication/user"
	apirequest "k8s.io/apiserver/pkg/endpoints/request"
	utilflowcontrol "k8s.io/apiserver/pkg/util/flowcontrol"
	fcrequest "k8s.io/apiserver/pkg/util/flowcontrol/request"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// DefaultMaxRequestsInflight and DefaultMaxMutatingRequestsInflight are
// kube-apiserver's defaults of --max-requests-inflight and
// --max-mutating-requests-inflight, whose sum is API Priority and Fairness'
// seats. Seats sized to the machine (2 per CPU, 8 here) were tried: they
// kept a hundred simulated kubelets' writes in their level, but they also
// queued the scheduler's binds (5,000 pods: 143 pods/s, bound p99 28 s;
// 390 pods/s and 763 ms with these) and the controllers' creates. The
// simulated nodes bound their own writes instead (glassplane up's
// --simulated-writes-inflight), as kubemark's hollow nodes run within CPU
// limits of their own.
const (
	DefaultMaxRequestsInflight         = 400
	DefaultMaxMutatingRequestsInflight = 200
)

// flowWaitLimit is how long a request may wait in its priority level's
// queue before it is refused with 429, as kube-apiserver's default (a
// quarter of its one-minute request timeout).
const flowWaitLimit = 15 * time.Second

// flowControl is API Priority and Fairness: upstream's controller
// (k8s.io/apiserver/pkg/util/flowcontrol), configured by the cluster's
// FlowSchemas and PriorityLevelConfigurations, decides when each request
// runs.
type flowControl struct {
	ifc     utilflowcontrol.Interface
	dropped utilflowcontrol.DroppedRequestsTracker
}

// concurrencyLimit is the server's total seats, as kube-apiserver derives
// them with APF: --max-requests-inflight plus
// --max-mutating-requests-inflight (0 + 200 is 200, as there); a Config
// that sets neither gets kube-apiserver's defaults.
func (c Config) concurrencyLimit() int {
	if c.MaxRequestsInflight <= 0 && c.MaxMutatingRequestsInflight <= 0 {
		return DefaultMaxRequestsInflight + DefaultMaxMutatingRequestsInflight
	}
	return max(c.MaxRequestsInflight, 0) + max(c.MaxMutatingRequestsInflight, 0)
}

// RunFlowControl runs API Priority and Fairness until ctx ends, as
// kube-apiserver does by default: it makes the suggested and mandatory
// FlowSchemas and PriorityLevelConfigurations that are missing (as
// kube-apiserver's configuration ensurer does at start), follows them
// through cfg (the API server's loopback client configuration), and from
// then on every request but the long-running ones (watches, exec, attach,
// port-forward, logs, proxy) is classified by the FlowSchemas and runs
// when its priority level has a seat for it; it waits in the level's
// queues (fair queuing among flows) or is refused with 429 and
// Retry-After. The priority levels share Config.MaxRequestsInflight +
// Config.MaxMutatingRequestsInflight seats. The exempt level (system:masters,
// health probes) never waits.
func (s *Server) RunFlowControl(ctx context.Context, cfg *rest.Config) error {
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("failed to create the flow control's client: %w", err)
	}
	// As kube-apiserver's ensurer, it tries again while etcd is away; the
	// controller meanwhile runs with the mandatory configuration it holds
	// in memory (exempt and catch-all).
	go func() {
		for wait := time.Second; ; wait = min(2*wait, 30*time.Second) {
			err := ensureFlowControlConfig(ctx, client)
			if err == nil || ctx.Err() != nil {
				return
			}
			s.log.Warn("failed to make the bootstrap flow control configuration; trying again", "in", wait, "err", err)
			select {
			case <-ctx.Done():
				return
			case <-time.After(wait):
			}
		}
	}()
	factory := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithTransform(sanitizeFlowControl))
	f := &flowControl{
		ifc:     utilflowcontrol.New(factory, client.FlowcontrolV1(), s.cfg.concurrencyLimit()),
		dropped: utilflowcontrol.NewDroppedRequestsTracker(),
	}
	factory.Start(ctx.Done())
	defer factory.Shutdown()
	s.flow.Store(f)
	defer s.flow.Store(nil)
	s.log.Info("API priority and fairness on", "seats", s.cfg.concurrencyLimit())
	return f.ifc.Run(ctx.Done())
}

// ensureFlowControlConfig creates the bootstrap FlowSchemas and
// PriorityLevelConfigurations (upstream's, k8s.io/apiserver's bootstrap
// package) that are not there: people may change the suggested ones, and
// their changes stay.
func ensureFlowControlConfig(ctx context.Context, client kubernetes.Interface) error {
	fc := client.FlowcontrolV1()
	for _, list := range [][]*flowcontrolv1.PriorityLevelConfiguration{bootstrap.MandatoryPriorityLevelConfigurations, bootstrap.SuggestedPriorityLevelConfigurations} {
		for _, pl := range list {
			if _, err := fc.PriorityLevelConfigurations().Create(ctx, pl.DeepCopy(), metav1.CreateOptions{FieldManager: "api-priority-and-fairness-config-producer-v1"}); err != nil && !apierrors.IsAlreadyExists(err) {
				return fmt.Errorf("failed to create PriorityLevelConfiguration %s: %w", pl.Name, err)
			}
		}
	}
	for _, list := range [][]*flowcontrolv1.FlowSchema{bootstrap.MandatoryFlowSchemas, bootstrap.SuggestedFlowSchemas} {
		for _, fs := range list {
			if _, err := fc.FlowSchemas().Create(ctx, fs.DeepCopy(), metav1.CreateOptions{FieldManager: "api-priority-and-fairness-config-producer-v1"}); err != nil && !apierrors.IsAlreadyExists(err) {
				return fmt.Errorf("failed to create FlowSchema %s: %w", fs.Name, err)
			}
		}
	}
	return nil
}

// longRunning reports whether a request stays open beyond its answer:
// kube-apiserver's long-running check (the verbs watch and proxy; the
// subresources attach, exec, proxy, log and portforward). Flow control
// leaves them alone (kube-apiserver holds a seat for a watch while it
// starts; here a watch takes none).
func (q *request) longRunning() bool {
	switch q.info.Verb {
	case "watch", "proxy":
		return true
	}
	switch q.info.Subresource {
	case "attach", "exec", "proxy", "log", "portforward":
		return true
	}
	return false
}

// dispatch runs execute when flow control gives q a seat, or answers 429.
// The response names the FlowSchema and priority level that q fell in
// (X-Kubernetes-PF-FlowSchema-UID, X-Kubernetes-PF-PriorityLevel-UID), as
// kube-apiserver's does.
func (f *flowControl) dispatch(q *request, execute func()) {
	u := &user.DefaultInfo{Name: q.user.Name, UID: q.user.UID, Groups: q.user.Groups, Extra: q.user.Extra}
	info := &apirequest.RequestInfo{
		IsResourceRequest: q.info.IsResourceRequest, Path: q.info.Path, Verb: q.info.Verb,
		APIPrefix: q.info.APIPrefix, APIGroup: q.info.APIGroup, APIVersion: q.info.APIVersion,
		Namespace: q.info.Namespace, Resource: q.info.Resource, Subresource: q.info.Subresource, Name: q.info.Name,
	}
	var fs *flowcontrolv1.FlowSchema
	var pl *flowcontrolv1.PriorityLevelConfiguration
	note := func(s *flowcontrolv1.FlowSchema, l *flowcontrolv1.PriorityLevelConfiguration, _ string) {
		fs, pl = s, l
	}
	headers := func() {
		if fs != nil && pl != nil {
			q.w.Header().Set(flowcontrolv1.ResponseHeaderMatchedFlowSchemaUID, string(fs.UID))
			q.w.Header().Set(flowcontrolv1.ResponseHeaderMatchedPriorityLevelConfigurationUID, string(pl.UID))
		}
	}
	served := false
	wait, cancel := context.WithTimeout(q.ctx, flowWaitLimit)
	f.ifc.Handle(wait, utilflowcontrol.RequestDigest{RequestInfo: info, User: u}, note,
		func() fcrequest.WorkEstimate { return fcrequest.WorkEstimate{InitialSeats: 1} },
		func(bool) {},
		func() {
			served = true
			headers()
			execute()
		})
	cancel()
	if served {
		return
	}
	headers()
	retryAfter := int64(1)
	if pl != nil {
		f.dropped.RecordDroppedRequest(pl.Name)
		retryAfter = f.dropped.GetRetryAfter(pl.Name)
	}
	q.fail("", apierrors.NewTooManyRequests("Too many requests, please try again later.", int(retryAfter)))
}

// The tables of FlowSchemas and PriorityLevelConfigurations, as
// kube-apiserver prints them.
func init() {
	printers["flowschemas"] = printer{
		columns: []metav1.TableColumnDefinition{nameCol,
			col("PriorityLevel", "string", "Name of the PriorityLevelConfiguration referenced by this FlowSchema", 0),
			col("MatchingPrecedence", "string", "Precedence of this FlowSchema. Lower numbers go first.", 0),
			col("DistinguisherMethod", "string", "The method used to distinguish flows of this FlowSchema", 0),
			ageCol,
			col("MissingPL", "string", "When the PriorityLevelConfiguration referenced by this FlowSchema is not found", 0),
		},
		cells: func(obj runtime.Object) []any {
			fs, ok := obj.(*flowcontrolv1.FlowSchema)
			if !ok {
				return genericPrinter.cells(obj)
			}
			method := "<none>"
			if fs.Spec.DistinguisherMethod != nil {
				method = string(fs.Spec.DistinguisherMethod.Type)
			}
			missing := "?"
			for _, c := range fs.Status.Conditions {
				if c.Type == flowcontrolv1.FlowSchemaConditionDangling {
					missing = string(c.Status)
					break
				}
			}
			return []any{fs.Name, fs.Spec.PriorityLevelConfiguration.Name, int64(fs.Spec.MatchingPrecedence), method, age(fs.CreationTimestamp), missing}
		},
	}
	printers["prioritylevelconfigurations"] = printer{
		columns: []metav1.TableColumnDefinition{nameCol,
			col("Type", "string", "Type of this PriorityLevelConfiguration", 0),
			col("NominalConcurrencyShares", "string", "NominalConcurrencyShares of this PriorityLevelConfiguration", 0),
			col("Queues", "string", "Queues of this PriorityLevelConfiguration", 0),
			col("HandSize", "string", "HandSize of this PriorityLevelConfiguration", 0),
			col("QueueLengthLimit", "string", "QueueLengthLimit of this PriorityLevelConfiguration", 0),
			ageCol,
		},
		cells: func(obj runtime.Object) []any {
			pl, ok := obj.(*flowcontrolv1.PriorityLevelConfiguration)
			if !ok {
				return genericPrinter.cells(obj)
			}
			var shares, queues, handSize, queueLength any = "<none>", "<none>", "<none>", "<none>"
			if l := pl.Spec.Limited; l != nil {
				if l.NominalConcurrencyShares != nil {
					shares = int64(*l.NominalConcurrencyShares)
				}
				if q := l.LimitResponse.Queuing; q != nil {
					queues, handSize, queueLength = int64(q.Queues), int64(q.HandSize), int64(q.QueueLengthLimit)
				}
			}
			return []any{pl.Name, string(pl.Spec.Type), shares, queues, handSize, queueLength, age(pl.CreationTimestamp)}
		},
	}
}
