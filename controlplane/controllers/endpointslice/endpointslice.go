package endpointslice

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"sync"

	v1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	coreinformers "k8s.io/client-go/informers/core/v1"
	discoveryinformers "k8s.io/client-go/informers/discovery/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	discoverylisters "k8s.io/client-go/listers/discovery/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"

	"github.com/glassplane/glassplane/controlplane/controllers/internal/controllerutil"
)

const (
	// ControllerName is the managed-by label value, as Kubernetes' controller sets it.
	ControllerName = "endpointslice-controller.k8s.io"
	// MaxEndpointsPerSlice is Kubernetes' default --max-endpoints-per-slice.
	MaxEndpointsPerSlice = 100
)

var serviceKind = v1.SchemeGroupVersion.WithKind("Service")

// Controller is the EndpointSlice controller.
type Controller struct {
	log         *slog.Logger
	client      kubernetes.Interface
	recorder    record.EventRecorder
	svcLister   corelisters.ServiceLister
	podLister   corelisters.PodLister
	sliceLister discoverylisters.EndpointSliceLister
	synced      []toolscache.InformerSynced
	queue       workqueue.TypedRateLimitingInterface[string]
	tracker     *tracker
	// serviceUIDs maps a Service's key to its uid, for forgetting what
	// the tracker holds of it once it is gone.
	serviceUIDs sync.Map
}

// errStaleCache asks for a later sync: the slice informer has not yet seen
// the controller's own writes.
var errStaleCache = errors.New("EndpointSlice informer cache is out of date")

// New builds the controller on the given informers. Nothing runs until Run.
func New(log *slog.Logger, client kubernetes.Interface, recorder record.EventRecorder, svcInformer coreinformers.ServiceInformer, podInformer coreinformers.PodInformer, sliceInformer discoveryinformers.EndpointSliceInformer) (*Controller, error) {
	c := &Controller{
		log:         log.With("controller", "endpointslice"),
		client:      client,
		recorder:    recorder,
		svcLister:   svcInformer.Lister(),
		podLister:   podInformer.Lister(),
		sliceLister: sliceInformer.Lister(),
		synced:      []toolscache.InformerSynced{svcInformer.Informer().HasSynced, podInformer.Informer().HasSynced, sliceInformer.Informer().HasSynced},
		queue:       controllerutil.NewQueue("endpoint_slice"),
		tracker:     newTracker(),
	}
	enqueue := func(obj any) {
		if key, err := controllerutil.KeyFunc(obj); err == nil {
			c.queue.Add(key)
		}
	}
	if _, err := svcInformer.Informer().AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc: enqueue, UpdateFunc: func(_, o any) { enqueue(o) }, DeleteFunc: enqueue,
	}); err != nil {
		return nil, fmt.Errorf("failed to add service handler: %w", err)
	}
	podChanged := func(obj any) {
		if t, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
			obj = t.Obj
		}
		if pod, ok := obj.(*v1.Pod); ok {
			for _, s := range controllerutil.ServicesForPod(c.svcLister, pod) {
				enqueue(s)
			}
		}
	}
	if _, err := podInformer.Informer().AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc: podChanged,
		UpdateFunc: func(old, cur any) {
			if !reflect.DeepEqual(old.(*v1.Pod).Labels, cur.(*v1.Pod).Labels) {
				podChanged(old)
			}
			podChanged(cur)
		},
		DeleteFunc: podChanged,
	}); err != nil {
		return nil, fmt.Errorf("failed to add pod handler: %w", err)
	}
	sliceChanged := func(obj any) {
		if t, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
			obj = t.Obj
		}
		if s, ok := obj.(*discoveryv1.EndpointSlice); ok && s.Labels[discoveryv1.LabelManagedBy] == ControllerName {
			if name := s.Labels[discoveryv1.LabelServiceName]; name != "" {
				c.queue.Add(s.Namespace + "/" + name)
			}
		}
	}
	sliceDeleted := func(obj any) {
		if t, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
			obj = t.Obj
		}
		if s, ok := obj.(*discoveryv1.EndpointSlice); ok {
			c.tracker.gone(s)
		}
		sliceChanged(obj)
	}
	if _, err := sliceInformer.Informer().AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc: sliceChanged, UpdateFunc: func(_, o any) { sliceChanged(o) }, DeleteFunc: sliceDeleted,
	}); err != nil {
		return nil, fmt.Errorf("failed to add endpointslice handler: %w", err)
	}
	return c, nil
}

// Run waits for the caches, then syncs services until ctx ends.
func (c *Controller) Run(ctx context.Context, workers int) error {
	defer c.queue.ShutDown()
	if !toolscache.WaitForNamedCacheSync("endpoint_slice", ctx.Done(), c.synced...) {
		return nil
	}
	c.log.Info("controller started", "workers", workers)
	controllerutil.RunWorkers(ctx, c.log, c.queue, workers, c.sync)
	return nil
}

// desiredSlice is one slice's content before it is matched to an object.
type desiredSlice struct {
	portsKey  string
	ports     []discoveryv1.EndpointPort
	endpoints []discoveryv1.Endpoint
}

func (c *Controller) sync(ctx context.Context, key string) error {
	namespace, name, err := toolscache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	svc, err := c.svcLister.Services(namespace).Get(name)
	if apierrors.IsNotFound(err) {
		// The slices are owned by the Service; the garbage collector
		// removes them.
		if uid, ok := c.serviceUIDs.LoadAndDelete(key); ok {
			c.tracker.forget(uid.(types.UID))
		}
		return nil
	}
	if err != nil {
		return err
	}
	if svc.Spec.Selector == nil || svc.Spec.Type == v1.ServiceTypeExternalName || svc.DeletionTimestamp != nil {
		return nil
	}
	pods, err := c.podLister.Pods(namespace).List(labels.SelectorFromSet(svc.Spec.Selector))
	if err != nil {
		return err
	}
	existing, err := c.sliceLister.EndpointSlices(namespace).List(labels.SelectorFromSet(labels.Set{
		discoveryv1.LabelServiceName: name, discoveryv1.LabelManagedBy: ControllerName,
	}))
	if err != nil {
		return err
	}
	c.serviceUIDs.Store(key, svc.UID)
	if c.tracker.stale(svc.UID, existing) {
		return errStaleCache
	}
	sort.Slice(existing, func(i, j int) bool { return existing[i].Name < existing[j].Name })
	used := make([]bool, len(existing))
	for _, want := range desired(svc, pods) {
		match := -1
		for i, s := range existing {
			if !used[i] && portsKey(s.Ports) == want.portsKey {
				match = i
				break
			}
		}
		if match < 0 {
			if err := c.create(ctx, svc, want); err != nil {
				return err
			}
			continue
		}
		used[match] = true
		if err := c.update(ctx, svc, existing[match], want); err != nil {
			return err
		}
	}
	for i, s := range existing {
		if used[i] {
			continue
		}
		err := c.client.DiscoveryV1().EndpointSlices(namespace).Delete(ctx, s.Name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("failed to delete endpoint slice %q: %w", s.Name, err)
		}
		if err == nil {
			c.tracker.deleting(svc.UID, s)
		}
	}
	return nil
}

func sliceLabels(svc *v1.Service) map[string]string {
	l := map[string]string{}
	for k, v := range svc.Labels {
		l[k] = v
	}
	l[discoveryv1.LabelServiceName] = svc.Name
	l[discoveryv1.LabelManagedBy] = ControllerName
	if svc.Spec.ClusterIP == v1.ClusterIPNone {
		l[v1.IsHeadlessService] = ""
	}
	return l
}

func (c *Controller) create(ctx context.Context, svc *v1.Service, want desiredSlice) error {
	slice := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{
			GenerateName:    svc.Name + "-",
			Namespace:       svc.Namespace,
			Labels:          sliceLabels(svc),
			OwnerReferences: []metav1.OwnerReference{*controllerutil.NewControllerRef(svc, serviceKind)},
		},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints:   want.endpoints,
		Ports:       want.ports,
	}
	created, err := c.client.DiscoveryV1().EndpointSlices(svc.Namespace).Create(ctx, slice, metav1.CreateOptions{})
	if err != nil && !apierrors.HasStatusCause(err, v1.NamespaceTerminatingCause) {
		c.recorder.Eventf(svc, v1.EventTypeWarning, "FailedToUpdateEndpointSlices", "Error updating Endpoint Slices for Service %s/%s: %v", svc.Namespace, svc.Name, err)
		return fmt.Errorf("failed to create endpoint slice for %q: %w", svc.Name, err)
	}
	if err == nil {
		c.tracker.wrote(svc.UID, created)
	}
	return nil
}

func (c *Controller) update(ctx context.Context, svc *v1.Service, cur *discoveryv1.EndpointSlice, want desiredSlice) error {
	wantLabels := sliceLabels(svc)
	if equality.Semantic.DeepEqual(cur.Endpoints, want.endpoints) && equality.Semantic.DeepEqual(cur.Ports, want.ports) && equality.Semantic.DeepEqual(labels.Set(cur.Labels), labels.Set(wantLabels)) {
		return nil
	}
	s := cur.DeepCopy()
	s.Labels = wantLabels
	s.Endpoints = want.endpoints
	s.Ports = want.ports
	updated, err := c.client.DiscoveryV1().EndpointSlices(s.Namespace).Update(ctx, s, metav1.UpdateOptions{})
	if err != nil {
		c.recorder.Eventf(svc, v1.EventTypeWarning, "FailedToUpdateEndpointSlices", "Error updating Endpoint Slices for Service %s/%s: %v", svc.Namespace, svc.Name, err)
		return fmt.Errorf("failed to update endpoint slice %q: %w", s.Name, err)
	}
	c.tracker.wrote(svc.UID, updated)
	return nil
}

// desired groups the service's pods by their resolved ports and cuts each
// group into slices of at most MaxEndpointsPerSlice.
func desired(svc *v1.Service, pods []*v1.Pod) []desiredSlice {
	groups := map[string]*desiredSlice{}
	var keys []string
	for _, pod := range pods {
		if !controllerutil.ShouldPodBeInEndpoints(pod, true) {
			continue
		}
		var ports []discoveryv1.EndpointPort
		for i := range svc.Spec.Ports {
			sp := &svc.Spec.Ports[i]
			n, err := controllerutil.FindPort(pod, sp)
			if err != nil {
				continue
			}
			name, proto := sp.Name, sp.Protocol
			ports = append(ports, discoveryv1.EndpointPort{Name: &name, Port: &n, Protocol: &proto, AppProtocol: sp.AppProtocol})
		}
		if len(svc.Spec.Ports) > 0 && len(ports) == 0 {
			continue
		}
		k := portsKey(ports)
		g, ok := groups[k]
		if !ok {
			g = &desiredSlice{portsKey: k, ports: ports}
			groups[k] = g
			keys = append(keys, k)
		}
		g.endpoints = append(g.endpoints, endpointFor(pod, svc))
	}
	sort.Strings(keys)
	if len(keys) == 0 {
		// No endpoints: one placeholder slice, without endpoints or
		// ports, as upstream's reconciler keeps, so a Service always has
		// a slice to watch.
		return []desiredSlice{{portsKey: portsKey(nil), ports: []discoveryv1.EndpointPort{}, endpoints: []discoveryv1.Endpoint{}}}
	}
	var out []desiredSlice
	for _, k := range keys {
		g := groups[k]
		sort.Slice(g.endpoints, func(i, j int) bool { return g.endpoints[i].TargetRef.Name < g.endpoints[j].TargetRef.Name })
		for start := 0; start < len(g.endpoints); start += MaxEndpointsPerSlice {
			end := min(start+MaxEndpointsPerSlice, len(g.endpoints))
			out = append(out, desiredSlice{portsKey: g.portsKey, ports: g.ports, endpoints: g.endpoints[start:end]})
		}
	}
	return out
}

func endpointFor(pod *v1.Pod, svc *v1.Service) discoveryv1.Endpoint {
	terminating := pod.DeletionTimestamp != nil
	serving := controllerutil.IsPodReady(pod)
	ready := !terminating && (serving || svc.Spec.PublishNotReadyAddresses)
	node := pod.Spec.NodeName
	ep := discoveryv1.Endpoint{
		Addresses:  []string{pod.Status.PodIP},
		Conditions: discoveryv1.EndpointConditions{Ready: &ready, Serving: &serving, Terminating: &terminating},
		TargetRef:  &v1.ObjectReference{Kind: "Pod", Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID},
	}
	if node != "" {
		ep.NodeName = &node
	}
	if pod.Spec.Hostname != "" && pod.Spec.Subdomain == svc.Name {
		h := pod.Spec.Hostname
		ep.Hostname = &h
	}
	return ep
}

func portsKey(ports []discoveryv1.EndpointPort) string {
	var parts []string
	for _, p := range ports {
		name, proto, port := "", "", int32(0)
		if p.Name != nil {
			name = *p.Name
		}
		if p.Protocol != nil {
			proto = string(*p.Protocol)
		}
		if p.Port != nil {
			port = *p.Port
		}
		parts = append(parts, name+"/"+proto+"/"+strconv.Itoa(int(port)))
	}
	sort.Strings(parts)
	return strings.Join(parts, ",")
}
