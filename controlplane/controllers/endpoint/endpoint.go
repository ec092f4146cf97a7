package endpoint

import (
	"context"
	"fmt"
	"log/slog"
	"reflect"
	"sort"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"

	"github.com/glassplane/glassplane/controlplane/controllers/internal/controllerutil"
)

// headlessLabel marks the Endpoints of a headless service, as Kubernetes does.
const headlessLabel = "service.kubernetes.io/headless"

// Controller is the Endpoints controller.
type Controller struct {
	log       *slog.Logger
	client    kubernetes.Interface
	recorder  record.EventRecorder
	svcLister corelisters.ServiceLister
	podLister corelisters.PodLister
	epLister  corelisters.EndpointsLister
	synced    []toolscache.InformerSynced
	queue     workqueue.TypedRateLimitingInterface[string]
}

// New builds the controller on the given informers. Nothing runs until Run.
func New(log *slog.Logger, client kubernetes.Interface, recorder record.EventRecorder, svcInformer coreinformers.ServiceInformer, podInformer coreinformers.PodInformer, epInformer coreinformers.EndpointsInformer) (*Controller, error) {
	c := &Controller{
		log:       log.With("controller", "endpoint"),
		client:    client,
		recorder:  recorder,
		svcLister: svcInformer.Lister(),
		podLister: podInformer.Lister(),
		epLister:  epInformer.Lister(),
		synced:    []toolscache.InformerSynced{svcInformer.Informer().HasSynced, podInformer.Informer().HasSynced, epInformer.Informer().HasSynced},
		queue:     controllerutil.NewQueue("endpoint"),
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
	if _, err := epInformer.Informer().AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		DeleteFunc: enqueue,
	}); err != nil {
		return nil, fmt.Errorf("failed to add endpoints handler: %w", err)
	}
	return c, nil
}

// Run waits for the caches, then syncs services until ctx ends.
func (c *Controller) Run(ctx context.Context, workers int) error {
	defer c.queue.ShutDown()
	if !toolscache.WaitForNamedCacheSync("endpoint", ctx.Done(), c.synced...) {
		return nil
	}
	c.log.Info("controller started", "workers", workers)
	controllerutil.RunWorkers(ctx, c.log, c.queue, workers, c.sync)
	return nil
}

func (c *Controller) sync(ctx context.Context, key string) error {
	namespace, name, err := toolscache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	svc, err := c.svcLister.Services(namespace).Get(name)
	if apierrors.IsNotFound(err) {
		err := c.client.CoreV1().Endpoints(namespace).Delete(ctx, name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("failed to delete endpoints %q: %w", key, err)
		}
		return nil
	}
	if err != nil {
		return err
	}
	if svc.Spec.Selector == nil || svc.Spec.Type == v1.ServiceTypeExternalName {
		return nil
	}
	pods, err := c.podLister.Pods(namespace).List(labels.SelectorFromSet(svc.Spec.Selector))
	if err != nil {
		return err
	}
	subsets := Subsets(svc, pods)

	current, err := c.epLister.Endpoints(namespace).Get(name)
	exists := err == nil
	if err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	want := map[string]string{}
	for k, v := range svc.Labels {
		want[k] = v
	}
	if svc.Spec.ClusterIP == v1.ClusterIPNone {
		want[headlessLabel] = ""
	}
	if exists && equality.Semantic.DeepEqual(current.Subsets, subsets) && equality.Semantic.DeepEqual(labels.Set(current.Labels), labels.Set(want)) {
		return nil
	}
	var ep *v1.Endpoints
	if exists {
		ep = current.DeepCopy()
	} else {
		ep = &v1.Endpoints{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace}}
	}
	ep.Labels = want
	ep.Subsets = subsets
	if exists {
		_, err = c.client.CoreV1().Endpoints(namespace).Update(ctx, ep, metav1.UpdateOptions{})
	} else {
		_, err = c.client.CoreV1().Endpoints(namespace).Create(ctx, ep, metav1.CreateOptions{})
	}
	if err != nil {
		if apierrors.HasStatusCause(err, v1.NamespaceTerminatingCause) {
			return nil
		}
		c.recorder.Eventf(svc, v1.EventTypeWarning, "FailedToUpdateEndpoint", "Failed to update endpoint %v/%v: %v", namespace, name, err)
		return err
	}
	c.log.Debug("endpoints updated", "service", key, "subsets", len(subsets))
	return nil
}

// Subsets computes a service's endpoint subsets from its pods, packed as
// Kubernetes' RepackSubsets does: addresses with the same ports share a
// subset, ready ones under addresses and the rest under notReadyAddresses.
func Subsets(svc *v1.Service, pods []*v1.Pod) []v1.EndpointSubset {
	type entry struct {
		addr  v1.EndpointAddress
		ready bool
		ports []v1.EndpointPort
	}
	var entries []entry
	tolerateUnready := svc.Spec.PublishNotReadyAddresses
	for _, pod := range pods {
		if !controllerutil.ShouldPodBeInEndpoints(pod, tolerateUnready) {
			continue
		}
		node := pod.Spec.NodeName
		addr := v1.EndpointAddress{
			IP:        pod.Status.PodIP,
			NodeName:  &node,
			TargetRef: &v1.ObjectReference{Kind: "Pod", Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID},
		}
		if pod.Spec.Hostname != "" && pod.Spec.Subdomain == svc.Name {
			addr.Hostname = pod.Spec.Hostname
		}
		e := entry{addr: addr, ready: tolerateUnready || controllerutil.IsPodReady(pod)}
		for i := range svc.Spec.Ports {
			sp := &svc.Spec.Ports[i]
			port, err := controllerutil.FindPort(pod, sp)
			if err != nil {
				continue
			}
			e.ports = append(e.ports, v1.EndpointPort{Name: sp.Name, Port: port, Protocol: sp.Protocol, AppProtocol: sp.AppProtocol})
		}
		if len(svc.Spec.Ports) > 0 && len(e.ports) == 0 {
			continue
		}
		entries = append(entries, e)
	}
	byPorts := map[string]*v1.EndpointSubset{}
	var keys []string
	for _, e := range entries {
		sort.Slice(e.ports, func(i, j int) bool { return portKey(e.ports[i]) < portKey(e.ports[j]) })
		var parts []string
		for _, p := range e.ports {
			parts = append(parts, portKey(p))
		}
		k := strings.Join(parts, ",")
		s, ok := byPorts[k]
		if !ok {
			s = &v1.EndpointSubset{Ports: e.ports}
			byPorts[k] = s
			keys = append(keys, k)
		}
		if e.ready {
			s.Addresses = append(s.Addresses, e.addr)
		} else {
			s.NotReadyAddresses = append(s.NotReadyAddresses, e.addr)
		}
	}
	sort.Strings(keys)
	var out []v1.EndpointSubset
	for _, k := range keys {
		s := byPorts[k]
		sortAddresses(s.Addresses)
		sortAddresses(s.NotReadyAddresses)
		out = append(out, *s)
	}
	return out
}

func portKey(p v1.EndpointPort) string {
	return p.Name + "/" + string(p.Protocol) + "/" + strconv.Itoa(int(p.Port))
}

func sortAddresses(a []v1.EndpointAddress) {
	sort.Slice(a, func(i, j int) bool {
		if a[i].IP != a[j].IP {
			return a[i].IP < a[j].IP
		}
		return a[i].TargetRef.UID < a[j].TargetRef.UID
	})
}
