package podautoscaler

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"time"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	cacheddiscovery "k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	autoscalinginformers "k8s.io/client-go/informers/autoscaling/v2"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	autoscalinglisters "k8s.io/client-go/listers/autoscaling/v2"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/scale"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	metricsv1beta1 "k8s.io/metrics/pkg/apis/metrics/v1beta1"
	"k8s.io/utils/ptr"

	"github.com/glassplane/glassplane/controlplane/controllers/internal/controllerutil"
)

// defaultCPUUtilization is the target of an HPA without metrics.
const defaultCPUUtilization int32 = 80

// MetricsSource lists the resource metrics of pods, as metrics.k8s.io's
// PodMetrics.
type MetricsSource interface {
	PodMetrics(ctx context.Context, namespace string, selector labels.Selector) ([]metricsv1beta1.PodMetrics, error)
}

// Config is what the controller may be tuned with; zero values take
// kube-controller-manager's defaults.
type Config struct {
	// SyncPeriod is how often each HPA is reconciled (DefaultSyncPeriod).
	SyncPeriod time.Duration
	// DownscaleStabilization is the scale-down window of HPAs that set
	// none (DefaultDownscaleStabilization).
	DownscaleStabilization time.Duration
}

// Controller is the horizontal pod autoscaler.
type Controller struct {
	cfg       Config
	log       *slog.Logger
	client    kubernetes.Interface
	scales    scale.ScalesGetter
	mapper    scale.PreferredResourceMapper
	metrics   MetricsSource
	recorder  record.EventRecorder
	hpaLister autoscalinglisters.HorizontalPodAutoscalerLister
	podLister corelisters.PodLister
	synced    []toolscache.InformerSynced
	queue     workqueue.TypedRateLimitingInterface[string]
	calc      *calculator
	memory    *memory
	now       func() time.Time
}

// New builds the controller over HPA and pod informers; scales reads and
// writes targets' scale subresources (mapper resolves their kinds), and
// metrics lists pods' resource usage.
func New(cfg Config, log *slog.Logger, client kubernetes.Interface, scales scale.ScalesGetter, mapper scale.PreferredResourceMapper, metrics MetricsSource,
	recorder record.EventRecorder, hpaInformer autoscalinginformers.HorizontalPodAutoscalerInformer, podInformer coreinformers.PodInformer) (*Controller, error) {
	if cfg.SyncPeriod <= 0 {
		cfg.SyncPeriod = DefaultSyncPeriod
	}
	if cfg.DownscaleStabilization <= 0 {
		cfg.DownscaleStabilization = DefaultDownscaleStabilization
	}
	c := &Controller{
		cfg: cfg, log: log.With("controller", "horizontal-pod-autoscaler"), client: client, scales: scales, mapper: mapper, metrics: metrics,
		recorder: recorder, hpaLister: hpaInformer.Lister(), podLister: podInformer.Lister(),
		synced: []toolscache.InformerSynced{hpaInformer.Informer().HasSynced, podInformer.Informer().HasSynced},
		queue:  controllerutil.NewQueue("horizontalpodautoscaler"),
		calc:   newCalculator(), memory: newMemory(), now: time.Now,
	}
	if _, err := hpaInformer.Informer().AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc: c.enqueue,
		UpdateFunc: func(old, cur any) {
			// Only spec changes call for a sync now; the controller's own
			// status writes would otherwise loop.
			if o, n := old.(*autoscalingv2.HorizontalPodAutoscaler), cur.(*autoscalingv2.HorizontalPodAutoscaler); !equality.Semantic.DeepEqual(o.Spec, n.Spec) {
				c.enqueue(cur)
			}
		},
		DeleteFunc: func(obj any) {
			if key, err := controllerutil.KeyFunc(obj); err == nil {
				c.memory.forget(key)
			}
		},
	}); err != nil {
		return nil, fmt.Errorf("failed to add horizontal pod autoscaler handler: %w", err)
	}
	// Upstream's default pod informer is enough: pods are read, not watched for.
	podInformer.Informer()
	return c, nil
}

// Run waits for the caches, then reconciles HPAs every SyncPeriod with
// workers goroutines until ctx ends.
func (c *Controller) Run(ctx context.Context, workers int) error {
	defer c.queue.ShutDown()
	if !toolscache.WaitForNamedCacheSync("horizontal-pod-autoscaler", ctx.Done(), c.synced...) {
		return nil
	}
	c.log.Info("controller started", "workers", workers, "syncPeriod", c.cfg.SyncPeriod)
	controllerutil.RunWorkers(ctx, c.log, c.queue, workers, c.sync)
	return nil
}

func (c *Controller) enqueue(obj any) {
	if key, err := controllerutil.KeyFunc(obj); err == nil {
		c.queue.Add(key)
	}
}

// sync reconciles one HPA and schedules its next reconcile.
func (c *Controller) sync(ctx context.Context, key string) error {
	namespace, name, err := toolscache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	hpa, err := c.hpaLister.HorizontalPodAutoscalers(namespace).Get(name)
	if apierrors.IsNotFound(err) {
		c.memory.forget(key)
		return nil
	}
	if err != nil {
		return err
	}
	c.queue.AddAfter(key, c.cfg.SyncPeriod)
	return c.reconcile(ctx, key, hpa.DeepCopy())
}

// reconcile is reconcileAutoscaler.
func (c *Controller) reconcile(ctx context.Context, key string, hpa *autoscalingv2.HorizontalPodAutoscaler) error {
	original := hpa.Status.DeepCopy()
	ref := hpa.Spec.ScaleTargetRef
	reference := fmt.Sprintf("%s/%s/%s", ref.Kind, hpa.Namespace, ref.Name)
	targetGV, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil {
		c.recorder.Event(hpa, v1.EventTypeWarning, "FailedGetScale", err.Error())
		c.setCondition(hpa, autoscalingv2.AbleToScale, v1.ConditionFalse, "FailedGetScale", "the HPA controller was unable to get the target's current scale: %v", err)
		return c.updateStatus(ctx, original, hpa)
	}
	gr, sc, err := c.scaleForTarget(ctx, hpa.Namespace, targetGV.WithKind(ref.Kind).GroupKind(), ref.Name)
	if err != nil {
		c.recorder.Event(hpa, v1.EventTypeWarning, "FailedGetScale", err.Error())
		c.setCondition(hpa, autoscalingv2.AbleToScale, v1.ConditionFalse, "FailedGetScale", "the HPA controller was unable to get the target's current scale: %v", err)
		if uerr := c.updateStatus(ctx, original, hpa); uerr != nil {
			return uerr
		}
		return fmt.Errorf("failed to query scale subresource for %s: %w", reference, err)
	}
	c.setCondition(hpa, autoscalingv2.AbleToScale, v1.ConditionTrue, "SucceededGetScale", "the HPA controller was able to get the target's current scale")
	current := sc.Spec.Replicas
	minReplicas := int32(1)
	if hpa.Spec.MinReplicas != nil {
		minReplicas = *hpa.Spec.MinReplicas
	}
	var desired int32
	var statuses []autoscalingv2.MetricStatus
	reason := ""
	switch {
	case sc.Spec.Replicas == 0 && minReplicas != 0:
		c.setCondition(hpa, autoscalingv2.ScalingActive, v1.ConditionFalse, "ScalingDisabled", "scaling is disabled since the replica count of the target is zero")
		desired = 0
	case current > hpa.Spec.MaxReplicas:
		reason, desired = "Current number of replicas above Spec.MaxReplicas", hpa.Spec.MaxReplicas
	case current < minReplicas:
		reason, desired = "Current number of replicas below Spec.MinReplicas", minReplicas
	default:
		proposal, metricName, st, err := c.replicasForMetrics(ctx, hpa, sc, current)
		statuses = st
		if err != nil {
			c.setStatus(hpa, current, hpa.Status.DesiredReplicas, statuses, false)
			if uerr := c.updateStatus(ctx, original, hpa); uerr != nil {
				return uerr
			}
			c.recorder.Event(hpa, v1.EventTypeWarning, "FailedComputeMetricsReplicas", err.Error())
			c.log.Debug("no replica count from metrics", "hpa", key, "err", err)
			return nil
		}
		desired = proposal
		if desired > current {
			reason = metricName + " above target"
		}
		if desired < current {
			reason = "All metrics below target"
		}
		desired = c.normalize(hpa, key, current, desired, minReplicas)
	}
	rescale := desired != current && !(sc.Spec.Replicas == 0 && minReplicas != 0)
	if rescale {
		sc.Spec.Replicas = desired
		if _, err := c.scales.Scales(hpa.Namespace).Update(ctx, gr, sc, metav1.UpdateOptions{}); err != nil {
			c.recorder.Eventf(hpa, v1.EventTypeWarning, "FailedRescale", "New size: %d; reason: %s; error: %v", desired, reason, err.Error())
			c.setCondition(hpa, autoscalingv2.AbleToScale, v1.ConditionFalse, "FailedUpdateScale", "the HPA controller was unable to update the target scale: %v", err)
			c.setStatus(hpa, current, hpa.Status.DesiredReplicas, statuses, false)
			if uerr := c.updateStatus(ctx, original, hpa); uerr != nil {
				return uerr
			}
			return fmt.Errorf("failed to rescale %s: %w", reference, err)
		}
		c.setCondition(hpa, autoscalingv2.AbleToScale, v1.ConditionTrue, "SucceededRescale", "the HPA controller was able to update the target scale to %d", desired)
		c.recorder.Eventf(hpa, v1.EventTypeNormal, "SuccessfulRescale", "New size: %d; reason: %s", desired, reason)
		c.memory.storeScaleEvent(key, hpa.Spec.Behavior, current, desired, c.now())
		c.log.Info("rescaled", "hpa", key, "target", reference, "from", current, "to", desired, "reason", reason)
	} else {
		desired = current
		if sc.Spec.Replicas == 0 && minReplicas != 0 {
			desired = 0
		}
	}
	c.setStatus(hpa, current, desired, statuses, rescale)
	return c.updateStatus(ctx, original, hpa)
}

// scaleForTarget reads the target's scale through the first resource of
// its kind that serves one.
func (c *Controller) scaleForTarget(ctx context.Context, namespace string, gk schema.GroupKind, name string) (schema.GroupResource, *autoscalingv1.Scale, error) {
	gvr, err := c.mapper.ResourceFor(schema.GroupVersionResource{Group: gk.Group, Resource: gk.Kind})
	if err != nil {
		if m, ok := c.mapper.(interface{ Reset() }); ok {
			m.Reset()
		}
		if gvr, err = c.mapper.ResourceFor(schema.GroupVersionResource{Group: gk.Group, Resource: gk.Kind}); err != nil {
			return schema.GroupResource{}, nil, fmt.Errorf("unable to determine resource for scale target reference: %w", err)
		}
	}
	gr := gvr.GroupResource()
	sc, err := c.scales.Scales(namespace).Get(ctx, gr, name, metav1.GetOptions{})
	if err != nil {
		return gr, nil, err
	}
	return gr, sc, nil
}

// replicasForMetrics is computeReplicasForMetrics over resource metrics:
// the largest proposal of the HPA's metrics, the metric that made it and
// every metric's status.
func (c *Controller) replicasForMetrics(ctx context.Context, hpa *autoscalingv2.HorizontalPodAutoscaler, sc *autoscalingv1.Scale, current int32) (int32, string, []autoscalingv2.MetricStatus, error) {
	selector, err := labels.Parse(sc.Status.Selector)
	if err != nil || sc.Status.Selector == "" {
		msg := "selector is required"
		if err != nil {
			msg = fmt.Sprintf("couldn't convert selector into a corresponding internal selector object: %v", err)
		}
		c.recorder.Event(hpa, v1.EventTypeWarning, "SelectorRequired", msg)
		c.setCondition(hpa, autoscalingv2.ScalingActive, v1.ConditionFalse, "InvalidSelector", "the HPA target's scale is missing a selector")
		return 0, "", nil, fmt.Errorf("%s", msg)
	}
	specs := hpa.Spec.Metrics
	if len(specs) == 0 {
		// What the API's defaulting gives an HPA without metrics (one
		// written as autoscaling/v1 without a CPU target).
		specs = []autoscalingv2.MetricSpec{{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{
			Name: v1.ResourceCPU, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: ptr.To(defaultCPUUtilization)}}}}
	}
	statuses := make([]autoscalingv2.MetricStatus, len(specs))
	var proposal int32 = -1
	name := ""
	invalid := 0
	var firstErr error
	for i, spec := range specs {
		replicas, metricName, status, err := c.replicasForMetric(ctx, hpa, spec, selector, current)
		if err != nil {
			invalid++
			if firstErr == nil {
				firstErr = err
			}
			continue
		}
		statuses[i] = status
		if replicas > proposal {
			proposal, name = replicas, metricName
		}
	}
	if invalid == len(specs) || proposal < 0 {
		return -1, "", statuses, fmt.Errorf("invalid metrics (%v invalid out of %v), first error is: %v", invalid, len(specs), firstErr)
	}
	c.setCondition(hpa, autoscalingv2.ScalingActive, v1.ConditionTrue, "ValidMetricFound", "the HPA was able to successfully calculate a replica count from %s", name)
	return proposal, name, statuses, nil
}

// replicasForMetric proposes a replica count for one metric.
func (c *Controller) replicasForMetric(ctx context.Context, hpa *autoscalingv2.HorizontalPodAutoscaler, spec autoscalingv2.MetricSpec, selector labels.Selector, current int32) (int32, string, autoscalingv2.MetricStatus, error) {
	var res v1.ResourceName
	var target autoscalingv2.MetricTarget
	container := ""
	switch {
	case spec.Type == autoscalingv2.ResourceMetricSourceType && spec.Resource != nil:
		res, target = spec.Resource.Name, spec.Resource.Target
	case spec.Type == autoscalingv2.ContainerResourceMetricSourceType && spec.ContainerResource != nil:
		res, target, container = spec.ContainerResource.Name, spec.ContainerResource.Target, spec.ContainerResource.Container
	default:
		err := fmt.Errorf("unknown metric source type %q", spec.Type)
		c.setCondition(hpa, autoscalingv2.ScalingActive, v1.ConditionFalse, "InvalidMetricSourceType", "the HPA was unable to compute the replica count: %v", err)
		return 0, "", autoscalingv2.MetricStatus{}, err
	}
	metrics, err := c.podMetrics(ctx, hpa.Namespace, selector, res, container)
	if err == nil && len(metrics) == 0 {
		err = fmt.Errorf("no metrics returned from resource metrics API")
	}
	if err != nil {
		err = fmt.Errorf("failed to get %s utilization: unable to get metrics for resource %s: %w", res, res, err)
		c.recorder.Event(hpa, v1.EventTypeWarning, "FailedGetResourceMetric", err.Error())
		c.setCondition(hpa, autoscalingv2.ScalingActive, v1.ConditionFalse, "FailedGetResourceMetric", "the HPA was unable to compute the replica count: %v", err)
		return 0, "", autoscalingv2.MetricStatus{}, err
	}
	pods, err := c.podLister.Pods(hpa.Namespace).List(selector)
	if err != nil {
		return 0, "", autoscalingv2.MetricStatus{}, err
	}
	status := autoscalingv2.MetricStatus{Type: spec.Type}
	value := func(cur autoscalingv2.MetricValueStatus) {
		if container != "" {
			status.ContainerResource = &autoscalingv2.ContainerResourceMetricStatus{Name: res, Container: container, Current: cur}
		} else {
			status.Resource = &autoscalingv2.ResourceMetricStatus{Name: res, Current: cur}
		}
	}
	if target.AverageValue != nil {
		replicas, usage, err := c.calc.averageValueReplicas(current, target.AverageValue.MilliValue(), res, pods, metrics)
		if err != nil {
			err = fmt.Errorf("failed to get %s usage: %w", res, err)
			c.recorder.Event(hpa, v1.EventTypeWarning, "FailedGetResourceMetric", err.Error())
			c.setCondition(hpa, autoscalingv2.ScalingActive, v1.ConditionFalse, "FailedGetResourceMetric", "the HPA was unable to compute the replica count: %v", err)
			return 0, "", autoscalingv2.MetricStatus{}, err
		}
		value(autoscalingv2.MetricValueStatus{AverageValue: resource.NewMilliQuantity(usage, resource.DecimalSI)})
		return replicas, fmt.Sprintf("%s resource", res), status, nil
	}
	if target.AverageUtilization == nil {
		err := fmt.Errorf("invalid resource metric source: neither a utilization target nor a value target was set")
		c.setCondition(hpa, autoscalingv2.ScalingActive, v1.ConditionFalse, "FailedGetResourceMetric", "the HPA was unable to compute the replica count: %v", err)
		return 0, "", autoscalingv2.MetricStatus{}, err
	}
	replicas, utilization, raw, err := c.calc.resourceReplicas(current, *target.AverageUtilization, res, container, pods, metrics)
	if err != nil {
		err = fmt.Errorf("failed to get %s utilization: %w", res, err)
		c.recorder.Event(hpa, v1.EventTypeWarning, "FailedGetResourceMetric", err.Error())
		c.setCondition(hpa, autoscalingv2.ScalingActive, v1.ConditionFalse, "FailedGetResourceMetric", "the HPA was unable to compute the replica count: %v", err)
		return 0, "", autoscalingv2.MetricStatus{}, err
	}
	value(autoscalingv2.MetricValueStatus{AverageUtilization: &utilization, AverageValue: resource.NewMilliQuantity(raw, resource.DecimalSI)})
	name := fmt.Sprintf("%s resource utilization (percentage of request)", res)
	if container != "" {
		name = fmt.Sprintf("%s container resource utilization (percentage of request)", res)
	}
	return replicas, name, status, nil
}

// podMetrics reads the pods' usage of res (of container, when set) in
// milli-units, as upstream's resource metrics client.
func (c *Controller) podMetrics(ctx context.Context, namespace string, selector labels.Selector, res v1.ResourceName, container string) (podMetrics, error) {
	list, err := c.metrics.PodMetrics(ctx, namespace, selector)
	if err != nil {
		return nil, err
	}
	out := podMetrics{}
	for _, m := range list {
		var sum int64
		found := false
		for _, ct := range m.Containers {
			if container != "" && ct.Name != container {
				continue
			}
			q, ok := ct.Usage[res]
			if !ok {
				found = false
				break
			}
			sum += q.MilliValue()
			found = true
		}
		if found {
			out[m.Name] = podMetric{value: sum, timestamp: m.Timestamp.Time, window: m.Window.Duration}
		}
	}
	return out, nil
}

// normalize is normalizeDesiredReplicas or, with a behavior,
// normalizeDesiredReplicasWithBehaviors.
func (c *Controller) normalize(hpa *autoscalingv2.HorizontalPodAutoscaler, key string, current, desired, minReplicas int32) int32 {
	now := c.now()
	if hpa.Spec.Behavior == nil {
		stabilized := c.memory.stabilize(key, desired, c.cfg.DownscaleStabilization, now)
		if stabilized != desired {
			c.setCondition(hpa, autoscalingv2.AbleToScale, v1.ConditionTrue, "ScaleDownStabilized", "recent recommendations were higher than current one, applying the highest recent recommendation")
		} else {
			c.setCondition(hpa, autoscalingv2.AbleToScale, v1.ConditionTrue, "ReadyForNewScale", "recommended size matches current size")
		}
		limited, reason, msg := limitWithoutBehavior(current, stabilized, minReplicas, hpa.Spec.MaxReplicas)
		c.setCondition(hpa, autoscalingv2.ScalingLimited, conditionIf(limited != stabilized), reason, "%s", msg)
		return limited
	}
	a := normalization{key: key, scaleUp: hpa.Spec.Behavior.ScaleUp, scaleDown: hpa.Spec.Behavior.ScaleDown,
		minReplicas: minReplicas, maxReplicas: hpa.Spec.MaxReplicas, currentReplicas: current, desired: desired}
	a.scaleUp, a.scaleDown = withDefaultRules(a.scaleUp, true, 0), withDefaultRules(a.scaleDown, false, c.cfg.DownscaleStabilization)
	stabilized, reason, msg := c.memory.stabilizeWithBehaviors(a, now)
	if stabilized != desired {
		c.setCondition(hpa, autoscalingv2.AbleToScale, v1.ConditionTrue, reason, "%s", msg)
	} else {
		c.setCondition(hpa, autoscalingv2.AbleToScale, v1.ConditionTrue, "ReadyForNewScale", "recommended size matches current size")
	}
	a.desired = stabilized
	limited, reason, msg := c.memory.limitWithBehaviors(a, now)
	c.setCondition(hpa, autoscalingv2.ScalingLimited, conditionIf(limited != stabilized), reason, "%s", msg)
	return limited
}

// withDefaultRules fills what the API server's defaulting would have (a
// behavior written before it, or by a client that skipped it), and a
// scale-down window left unset with the controller's.
func withDefaultRules(r *autoscalingv2.HPAScalingRules, up bool, downWindow time.Duration) *autoscalingv2.HPAScalingRules {
	out := &autoscalingv2.HPAScalingRules{}
	if r != nil {
		out = r.DeepCopy()
	}
	if out.SelectPolicy == nil {
		p := autoscalingv2.MaxChangePolicySelect
		out.SelectPolicy = &p
	}
	if len(out.Policies) == 0 {
		out.Policies = []autoscalingv2.HPAScalingPolicy{{Type: autoscalingv2.PercentScalingPolicy, Value: 100, PeriodSeconds: 15}}
		if up {
			out.Policies = append([]autoscalingv2.HPAScalingPolicy{{Type: autoscalingv2.PodsScalingPolicy, Value: 4, PeriodSeconds: 15}}, out.Policies...)
		}
	}
	if out.StabilizationWindowSeconds == nil {
		w := int32(downWindow / time.Second)
		out.StabilizationWindowSeconds = &w
	}
	return out
}

func conditionIf(b bool) v1.ConditionStatus {
	if b {
		return v1.ConditionTrue
	}
	return v1.ConditionFalse
}

// setCondition sets a condition, keeping its transition time while its
// status stays.
func (c *Controller) setCondition(hpa *autoscalingv2.HorizontalPodAutoscaler, typ autoscalingv2.HorizontalPodAutoscalerConditionType, status v1.ConditionStatus, reason, format string, args ...any) {
	cond := autoscalingv2.HorizontalPodAutoscalerCondition{Type: typ, Status: status, Reason: reason, Message: fmt.Sprintf(format, args...),
		LastTransitionTime: metav1.NewTime(c.now())}
	for i := range hpa.Status.Conditions {
		if hpa.Status.Conditions[i].Type == typ {
			if hpa.Status.Conditions[i].Status == status {
				cond.LastTransitionTime = hpa.Status.Conditions[i].LastTransitionTime
			}
			hpa.Status.Conditions[i] = cond
			return
		}
	}
	hpa.Status.Conditions = append(hpa.Status.Conditions, cond)
}

// setStatus is setStatus: replicas, metrics and, on a rescale, its time.
func (c *Controller) setStatus(hpa *autoscalingv2.HorizontalPodAutoscaler, current, desired int32, metrics []autoscalingv2.MetricStatus, rescale bool) {
	hpa.Status.CurrentReplicas, hpa.Status.DesiredReplicas = current, desired
	var kept []autoscalingv2.MetricStatus
	for _, m := range metrics {
		if m.Type != "" {
			kept = append(kept, m)
		}
	}
	hpa.Status.CurrentMetrics = kept
	if rescale {
		t := metav1.NewTime(c.now())
		hpa.Status.LastScaleTime = &t
	}
}

// updateStatus writes the status when it changed.
func (c *Controller) updateStatus(ctx context.Context, original *autoscalingv2.HorizontalPodAutoscalerStatus, hpa *autoscalingv2.HorizontalPodAutoscaler) error {
	if equality.Semantic.DeepEqual(original, &hpa.Status) {
		return nil
	}
	_, err := c.client.AutoscalingV2().HorizontalPodAutoscalers(hpa.Namespace).UpdateStatus(ctx, hpa, metav1.UpdateOptions{})
	if err != nil {
		c.recorder.Event(hpa, v1.EventTypeWarning, "FailedUpdateStatus", err.Error())
		return fmt.Errorf("failed to update status for %s: %w", hpa.Name, err)
	}
	return nil
}

// RESTMetrics reads metrics.k8s.io through an API client's REST client,
// as upstream's resource metrics client.
type RESTMetrics struct{ Client kubernetes.Interface }

// PodMetrics implements MetricsSource.
func (r RESTMetrics) PodMetrics(ctx context.Context, namespace string, selector labels.Selector) ([]metricsv1beta1.PodMetrics, error) {
	raw, err := r.Client.CoreV1().RESTClient().Get().AbsPath("/apis/metrics.k8s.io/v1beta1/namespaces", namespace, "pods").
		Param("labelSelector", selector.String()).SetHeader("Accept", "application/json").DoRaw(ctx)
	if err != nil {
		return nil, fmt.Errorf("unable to fetch metrics from resource metrics API: %w", err)
	}
	var list metricsv1beta1.PodMetricsList
	if err := json.Unmarshal(raw, &list); err != nil {
		return nil, fmt.Errorf("unable to decode metrics from resource metrics API: %w", err)
	}
	return list.Items, nil
}

// NewForClient builds the controller with kube-controller-manager's
// defaults, reaching targets' scale subresources and metrics.k8s.io
// through client.
func NewForClient(log *slog.Logger, client kubernetes.Interface, recorder record.EventRecorder,
	hpaInformer autoscalinginformers.HorizontalPodAutoscalerInformer, podInformer coreinformers.PodInformer) (*Controller, error) {
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(cacheddiscovery.NewMemCacheClient(client.Discovery()))
	scales := scale.New(client.CoreV1().RESTClient(), mapper, dynamic.LegacyAPIPathResolverFunc, scale.NewDiscoveryScaleKindResolver(client.Discovery()))
	return New(Config{}, log, client, scales, mapper, RESTMetrics{Client: client}, recorder, hpaInformer, podInformer)
}
