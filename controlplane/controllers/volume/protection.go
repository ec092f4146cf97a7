package volume

import (
	"context"
	"fmt"
	"log/slog"
	"slices"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	"github.com/glassplane/glassplane/controlplane/controllers/internal/controllerutil"
)

// The protection finalizers, as upstream names them.
const (
	PVCProtectionFinalizer = "kubernetes.io/pvc-protection"
	PVProtectionFinalizer  = "kubernetes.io/pv-protection"
)

// ClaimProtection is the pvc-protection controller: every claim carries
// kubernetes.io/pvc-protection, removed once the claim is being deleted and
// no pod that has not finished uses it.
type ClaimProtection struct {
	log       *slog.Logger
	client    kubernetes.Interface
	pvcLister corelisters.PersistentVolumeClaimLister
	podLister corelisters.PodLister
	synced    []toolscache.InformerSynced
	queue     workqueue.TypedRateLimitingInterface[string]
}

// NewClaimProtection builds the pvc-protection controller.
func NewClaimProtection(log *slog.Logger, client kubernetes.Interface, pvcInformer coreinformers.PersistentVolumeClaimInformer, podInformer coreinformers.PodInformer) (*ClaimProtection, error) {
	c := &ClaimProtection{
		log:       log.With("controller", "pvc-protection"),
		client:    client,
		pvcLister: pvcInformer.Lister(),
		podLister: podInformer.Lister(),
		synced:    []toolscache.InformerSynced{pvcInformer.Informer().HasSynced, podInformer.Informer().HasSynced},
		queue:     controllerutil.NewQueue("pvcprotection"),
	}
	enqueue := func(obj any) {
		if key, err := controllerutil.KeyFunc(obj); err == nil {
			c.queue.Add(key)
		}
	}
	if _, err := pvcInformer.Informer().AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc: enqueue, UpdateFunc: func(_, o any) { enqueue(o) },
	}); err != nil {
		return nil, fmt.Errorf("failed to add claim handler: %w", err)
	}
	podChanged := func(obj any) {
		if t, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
			obj = t.Obj
		}
		pod, ok := obj.(*v1.Pod)
		if !ok {
			return
		}
		for _, name := range ClaimNames(pod) {
			c.queue.Add(pod.Namespace + "/" + name)
		}
	}
	if _, err := podInformer.Informer().AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		UpdateFunc: func(_, o any) { podChanged(o) }, DeleteFunc: podChanged,
	}); err != nil {
		return nil, fmt.Errorf("failed to add pod handler: %w", err)
	}
	return c, nil
}

// ClaimNames returns the claims a pod's volumes use: its
// persistentVolumeClaim volumes and the claims of its ephemeral volumes
// (named <pod>-<volume>).
func ClaimNames(pod *v1.Pod) []string {
	var names []string
	for _, vol := range pod.Spec.Volumes {
		switch {
		case vol.PersistentVolumeClaim != nil:
			names = append(names, vol.PersistentVolumeClaim.ClaimName)
		case vol.Ephemeral != nil:
			names = append(names, pod.Name+"-"+vol.Name)
		}
	}
	return names
}

// Run waits for the caches, then syncs claims until ctx ends.
func (c *ClaimProtection) Run(ctx context.Context, workers int) error {
	defer c.queue.ShutDown()
	if !toolscache.WaitForNamedCacheSync("pvc-protection", ctx.Done(), c.synced...) {
		return nil
	}
	c.log.Info("controller started", "workers", workers)
	controllerutil.RunWorkers(ctx, c.log, c.queue, workers, c.sync)
	return nil
}

func (c *ClaimProtection) sync(ctx context.Context, key string) error {
	namespace, name, err := toolscache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	claim, err := c.pvcLister.PersistentVolumeClaims(namespace).Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	has := slices.Contains(claim.Finalizers, PVCProtectionFinalizer)
	switch {
	case claim.DeletionTimestamp == nil && !has:
		cl := claim.DeepCopy()
		cl.Finalizers = append(cl.Finalizers, PVCProtectionFinalizer)
		_, err := c.client.CoreV1().PersistentVolumeClaims(namespace).Update(ctx, cl, metav1.UpdateOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("failed to add finalizer to claim %s: %w", key, err)
		}
	case claim.DeletionTimestamp != nil && has:
		used, err := c.inUse(claim)
		if err != nil || used {
			return err
		}
		cl := claim.DeepCopy()
		cl.Finalizers = slices.DeleteFunc(cl.Finalizers, func(f string) bool { return f == PVCProtectionFinalizer })
		_, err = c.client.CoreV1().PersistentVolumeClaims(namespace).Update(ctx, cl, metav1.UpdateOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("failed to remove finalizer from claim %s: %w", key, err)
		}
		c.log.Info("claim no longer in use, finalizer removed", "claim", key)
	}
	return nil
}

// inUse reports whether a pod that has not finished uses claim. A pod not
// yet scheduled counts too, as upstream's podUsesPVC.
func (c *ClaimProtection) inUse(claim *v1.PersistentVolumeClaim) (bool, error) {
	pods, err := c.podLister.Pods(claim.Namespace).List(labels.Everything())
	if err != nil {
		return false, err
	}
	for _, pod := range pods {
		if pod.Status.Phase == v1.PodSucceeded || pod.Status.Phase == v1.PodFailed {
			continue
		}
		if slices.Contains(ClaimNames(pod), claim.Name) {
			return true, nil
		}
	}
	return false, nil
}

// VolumeProtection is the pv-protection controller: every volume carries
// kubernetes.io/pv-protection, removed once it is being deleted and is not
// Bound.
type VolumeProtection struct {
	log      *slog.Logger
	client   kubernetes.Interface
	pvLister corelisters.PersistentVolumeLister
	synced   []toolscache.InformerSynced
	queue    workqueue.TypedRateLimitingInterface[string]
}

// NewVolumeProtection builds the pv-protection controller.
func NewVolumeProtection(log *slog.Logger, client kubernetes.Interface, pvInformer coreinformers.PersistentVolumeInformer) (*VolumeProtection, error) {
	c := &VolumeProtection{
		log:      log.With("controller", "pv-protection"),
		client:   client,
		pvLister: pvInformer.Lister(),
		synced:   []toolscache.InformerSynced{pvInformer.Informer().HasSynced},
		queue:    controllerutil.NewQueue("pvprotection"),
	}
	enqueue := func(obj any) {
		if pv, ok := obj.(*v1.PersistentVolume); ok {
			c.queue.Add(pv.Name)
		}
	}
	if _, err := pvInformer.Informer().AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc: enqueue, UpdateFunc: func(_, o any) { enqueue(o) },
	}); err != nil {
		return nil, fmt.Errorf("failed to add volume handler: %w", err)
	}
	return c, nil
}

// Run waits for the cache, then syncs volumes until ctx ends.
func (c *VolumeProtection) Run(ctx context.Context, workers int) error {
	defer c.queue.ShutDown()
	if !toolscache.WaitForNamedCacheSync("pv-protection", ctx.Done(), c.synced...) {
		return nil
	}
	c.log.Info("controller started", "workers", workers)
	controllerutil.RunWorkers(ctx, c.log, c.queue, workers, c.sync)
	return nil
}

func (c *VolumeProtection) sync(ctx context.Context, name string) error {
	pv, err := c.pvLister.Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	has := slices.Contains(pv.Finalizers, PVProtectionFinalizer)
	var next *v1.PersistentVolume
	switch {
	case pv.DeletionTimestamp == nil && !has:
		next = pv.DeepCopy()
		next.Finalizers = append(next.Finalizers, PVProtectionFinalizer)
	case pv.DeletionTimestamp != nil && has && pv.Status.Phase != v1.VolumeBound:
		next = pv.DeepCopy()
		next.Finalizers = slices.DeleteFunc(next.Finalizers, func(f string) bool { return f == PVProtectionFinalizer })
	default:
		return nil
	}
	_, err = c.client.CoreV1().PersistentVolumes().Update(ctx, next, metav1.UpdateOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("failed to update finalizers of volume %q: %w", name, err)
	}
	return nil
}
