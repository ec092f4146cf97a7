package volume

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	coreinformers "k8s.io/client-go/informers/core/v1"
	storageinformers "k8s.io/client-go/informers/storage/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	storagelisters "k8s.io/client-go/listers/storage/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/component-helpers/storage/volume"

	"github.com/glassplane/glassplane/controlplane/controllers/internal/controllerutil"
	"github.com/glassplane/glassplane/controlplane/localpath"
)

// Event reasons and messages of the binder, as kube-controller-manager's
// persistentvolume controller and the external provisioners give them.
const (
	reasonWaitForFirstConsumer = "WaitForFirstConsumer"
	reasonFailedBinding        = "FailedBinding"
	reasonVolumeMismatch       = "VolumeMismatch"
	reasonClaimLost            = "ClaimLost"
	reasonClaimMisbound        = "ClaimMisbound"
	reasonExternalProvisioning = "ExternalProvisioning"
	reasonProvisioning         = "Provisioning"
	reasonProvisioningOK       = "ProvisioningSucceeded"
	reasonProvisioningFailed   = "ProvisioningFailed"
	reasonVolumeFailedDelete   = "VolumeFailedDelete"
	reasonVolumeFailedRecycle  = "VolumeFailedRecycle"

	msgWaitForFirstConsumer = "waiting for first consumer to be created before binding"
	msgNoVolumeNoClass      = "no persistent volumes available for this claim and no storage class is set"
)

// resyncPeriod is how often every claim and volume is synced again, as the
// upstream controller's --pvclaimbinder-sync-period.
const resyncPeriod = 15 * time.Second

// labelRuntime is the node agent's label naming its runtime; a local-path
// volume of an Immediate class goes to a node that runs containers.
const labelRuntime = "node.glassplane.io/runtime"

// Binder is the persistentvolume-binder controller with the built-in
// local-path provisioner.
type Binder struct {
	log         *slog.Logger
	client      kubernetes.Interface
	recorder    record.EventRecorder
	provisioner record.EventRecorder
	pvLister    corelisters.PersistentVolumeLister
	pvcLister   corelisters.PersistentVolumeClaimLister
	classLister storagelisters.StorageClassLister
	nodeLister  corelisters.NodeLister
	synced      []toolscache.InformerSynced
	claims      workqueue.TypedRateLimitingInterface[string]
	volumes     workqueue.TypedRateLimitingInterface[string]
}

// NewBinder builds the binder on the given informers. recorder reports as
// persistentvolume-controller, provisioner as the local-path provisioner.
// Nothing runs until Run.
func NewBinder(log *slog.Logger, client kubernetes.Interface, recorder, provisioner record.EventRecorder,
	pvInformer coreinformers.PersistentVolumeInformer, pvcInformer coreinformers.PersistentVolumeClaimInformer,
	classInformer storageinformers.StorageClassInformer, nodeInformer coreinformers.NodeInformer) (*Binder, error) {
	b := &Binder{
		log:         log.With("controller", "persistentvolume-binder"),
		client:      client,
		recorder:    recorder,
		provisioner: provisioner,
		pvLister:    pvInformer.Lister(),
		pvcLister:   pvcInformer.Lister(),
		classLister: classInformer.Lister(),
		nodeLister:  nodeInformer.Lister(),
		synced: []toolscache.InformerSynced{pvInformer.Informer().HasSynced, pvcInformer.Informer().HasSynced,
			classInformer.Informer().HasSynced, nodeInformer.Informer().HasSynced},
		claims:  controllerutil.NewQueue("claims"),
		volumes: controllerutil.NewQueue("volumes"),
	}
	claimChanged := func(obj any) {
		if t, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
			obj = t.Obj
		}
		pvc, ok := obj.(*v1.PersistentVolumeClaim)
		if !ok {
			return
		}
		if key, err := controllerutil.KeyFunc(pvc); err == nil {
			b.claims.Add(key)
		}
		if pvc.Spec.VolumeName != "" {
			b.volumes.Add(pvc.Spec.VolumeName)
		}
	}
	if _, err := pvcInformer.Informer().AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc: claimChanged, UpdateFunc: func(_, o any) { claimChanged(o) }, DeleteFunc: claimChanged,
	}); err != nil {
		return nil, fmt.Errorf("failed to add claim handler: %w", err)
	}
	volumeChanged := func(obj any) {
		if t, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
			obj = t.Obj
		}
		pv, ok := obj.(*v1.PersistentVolume)
		if !ok {
			return
		}
		b.volumes.Add(pv.Name)
		if ref := pv.Spec.ClaimRef; ref != nil {
			b.claims.Add(ref.Namespace + "/" + ref.Name)
		} else {
			b.enqueueUnboundClaims()
		}
	}
	if _, err := pvInformer.Informer().AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc: volumeChanged, UpdateFunc: func(_, o any) { volumeChanged(o) }, DeleteFunc: volumeChanged,
	}); err != nil {
		return nil, fmt.Errorf("failed to add volume handler: %w", err)
	}
	return b, nil
}

// Run waits for the caches, then syncs claims and volumes until ctx ends.
func (b *Binder) Run(ctx context.Context, workers int) error {
	defer b.claims.ShutDown()
	defer b.volumes.ShutDown()
	if !toolscache.WaitForNamedCacheSync("persistentvolume-binder", ctx.Done(), b.synced...) {
		return nil
	}
	b.log.Info("controller started", "workers", workers)
	go b.resync(ctx)
	done := make(chan struct{})
	go func() {
		controllerutil.RunWorkers(ctx, b.log, b.volumes, workers, b.syncVolume)
		close(done)
	}()
	controllerutil.RunWorkers(ctx, b.log, b.claims, workers, b.syncClaim)
	<-done
	return nil
}

// resync queues every claim and volume each resyncPeriod.
func (b *Binder) resync(ctx context.Context) {
	t := time.NewTicker(resyncPeriod)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if claims, err := b.pvcLister.List(labels.Everything()); err == nil {
			for _, c := range claims {
				b.claims.Add(c.Namespace + "/" + c.Name)
			}
		}
		if pvs, err := b.pvLister.List(labels.Everything()); err == nil {
			for _, pv := range pvs {
				b.volumes.Add(pv.Name)
			}
		}
	}
}

func (b *Binder) enqueueUnboundClaims() {
	claims, err := b.pvcLister.List(labels.Everything())
	if err != nil {
		return
	}
	for _, c := range claims {
		if c.Spec.VolumeName == "" {
			b.claims.Add(c.Namespace + "/" + c.Name)
		}
	}
}

func (b *Binder) syncClaim(ctx context.Context, key string) error {
	namespace, name, err := toolscache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	claim, err := b.pvcLister.PersistentVolumeClaims(namespace).Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if claim.Spec.VolumeName == "" {
		return b.syncUnboundClaim(ctx, claim)
	}
	return b.syncBoundClaim(ctx, claim)
}

// class returns the claim's StorageClass: nil without error for a claim of
// no class, a NotFound error for a missing one.
func (b *Binder) class(claim *v1.PersistentVolumeClaim) (*storagev1.StorageClass, error) {
	name := volume.GetPersistentVolumeClaimClass(claim)
	if name == "" {
		return nil, nil
	}
	return b.classLister.Get(name)
}

func (b *Binder) syncUnboundClaim(ctx context.Context, claim *v1.PersistentVolumeClaim) error {
	class, classErr := b.class(claim)
	if classErr != nil && !apierrors.IsNotFound(classErr) {
		return classErr
	}
	delay := class != nil && class.VolumeBindingMode != nil && *class.VolumeBindingMode == storagev1.VolumeBindingWaitForFirstConsumer
	volumes, err := b.pvLister.List(labels.Everything())
	if err != nil {
		return err
	}
	pv, err := volume.FindMatchingVolume(claim, volumes, nil, nil, delay, false)
	if err != nil {
		return err
	}
	if pv != nil {
		return b.bind(ctx, pv, claim)
	}
	switch {
	case delay && !volume.IsDelayBindingProvisioning(claim):
		b.recorder.Event(claim, v1.EventTypeNormal, reasonWaitForFirstConsumer, msgWaitForFirstConsumer)
	case volume.GetPersistentVolumeClaimClass(claim) == "":
		b.recorder.Event(claim, v1.EventTypeNormal, reasonFailedBinding, msgNoVolumeNoClass)
	case classErr != nil:
		b.recorder.Event(claim, v1.EventTypeWarning, reasonProvisioningFailed, classErr.Error())
	case class.Provisioner == volume.NotSupportedProvisioner:
		// Only a volume an administrator makes can bind it.
	default:
		return b.provision(ctx, claim, class)
	}
	return nil
}

// checkVolumeSatisfyClaim is upstream's check of a volume a claim names in
// spec.volumeName.
func checkVolumeSatisfyClaim(pv *v1.PersistentVolume, claim *v1.PersistentVolumeClaim) error {
	if pv.DeletionTimestamp != nil {
		return fmt.Errorf("the volume is marked for deletion %q", pv.Name)
	}
	requested := claim.Spec.Resources.Requests[v1.ResourceStorage]
	capacity := pv.Spec.Capacity[v1.ResourceStorage]
	if capacity.Value() < requested.Value() {
		return fmt.Errorf("requested PV is too small")
	}
	if volume.GetPersistentVolumeClass(pv) != volume.GetPersistentVolumeClaimClass(claim) {
		return fmt.Errorf("storageClassName does not match")
	}
	if volume.CheckVolumeModeMismatches(&claim.Spec, &pv.Spec) {
		return fmt.Errorf("incompatible volumeMode")
	}
	if !volume.CheckAccessModes(claim, pv) {
		return fmt.Errorf("incompatible accessMode")
	}
	return nil
}

func (b *Binder) syncBoundClaim(ctx context.Context, claim *v1.PersistentVolumeClaim) error {
	pv, err := b.pvLister.Get(claim.Spec.VolumeName)
	if apierrors.IsNotFound(err) {
		if claim.Status.Phase != v1.ClaimLost {
			b.recorder.Event(claim, v1.EventTypeWarning, reasonClaimLost, "Bound claim has lost its PersistentVolume. Data on the volume is lost!")
			return b.setClaimPhase(ctx, claim, v1.ClaimLost, nil)
		}
		return nil
	}
	if err != nil {
		return err
	}
	switch {
	case pv.Spec.ClaimRef == nil:
		if err := checkVolumeSatisfyClaim(pv, claim); err != nil {
			b.recorder.Event(claim, v1.EventTypeWarning, reasonVolumeMismatch, fmt.Sprintf("Cannot bind to requested volume %q: %v", pv.Name, err))
			return b.setClaimPhase(ctx, claim, v1.ClaimPending, nil)
		}
		return b.bind(ctx, pv, claim)
	case volume.IsVolumeBoundToClaim(pv, claim):
		return b.bind(ctx, pv, claim)
	default:
		if claim.Status.Phase != v1.ClaimLost {
			b.recorder.Event(claim, v1.EventTypeWarning, reasonClaimMisbound, "Two claims are bound to the same volume, this one is bound incorrectly")
			return b.setClaimPhase(ctx, claim, v1.ClaimLost, nil)
		}
		return nil
	}
}

// bind binds pv and claim to each other, as the upstream controller's
// bind: the volume's claimRef, then its phase, then the claim's volumeName
// and annotations, then its phase, capacity and access modes. Each step
// is skipped when already done, so a retry resumes where it failed.
func (b *Binder) bind(ctx context.Context, pv *v1.PersistentVolume, claim *v1.PersistentVolumeClaim) error {
	next, dirty, err := volume.GetBindVolumeToClaim(pv, claim)
	if err != nil {
		return err
	}
	if dirty {
		if next, err = b.client.CoreV1().PersistentVolumes().Update(ctx, next, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("failed to bind volume %q to claim %s/%s: %w", pv.Name, claim.Namespace, claim.Name, err)
		}
	}
	if next.Status.Phase != v1.VolumeBound {
		if next, err = b.setVolumePhase(ctx, next, v1.VolumeBound, ""); err != nil {
			return err
		}
	}
	cl := claim.DeepCopy()
	changed := false
	if cl.Spec.VolumeName != next.Name {
		cl.Spec.VolumeName = next.Name
		metav1.SetMetaDataAnnotation(&cl.ObjectMeta, volume.AnnBoundByController, "yes")
		changed = true
	}
	if !metav1.HasAnnotation(cl.ObjectMeta, volume.AnnBindCompleted) {
		metav1.SetMetaDataAnnotation(&cl.ObjectMeta, volume.AnnBindCompleted, "yes")
		changed = true
	}
	if changed {
		if cl, err = b.client.CoreV1().PersistentVolumeClaims(cl.Namespace).Update(ctx, cl, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("failed to bind claim %s/%s to volume %q: %w", claim.Namespace, claim.Name, next.Name, err)
		}
	}
	if cl.Status.Phase != v1.ClaimBound || !equality.Semantic.DeepEqual(cl.Status.Capacity, next.Spec.Capacity) ||
		!equality.Semantic.DeepEqual(cl.Status.AccessModes, next.Spec.AccessModes) {
		if err := b.setClaimPhase(ctx, cl, v1.ClaimBound, next); err != nil {
			return err
		}
		b.log.Info("bound claim", "claim", cl.Namespace+"/"+cl.Name, "volume", next.Name)
	}
	return nil
}

// setClaimPhase writes a claim's phase; a bound claim also gets its
// volume's capacity and access modes.
func (b *Binder) setClaimPhase(ctx context.Context, claim *v1.PersistentVolumeClaim, phase v1.PersistentVolumeClaimPhase, pv *v1.PersistentVolume) error {
	cl := claim.DeepCopy()
	cl.Status.Phase = phase
	if pv != nil {
		cl.Status.Capacity = pv.Spec.Capacity.DeepCopy()
		cl.Status.AccessModes = append([]v1.PersistentVolumeAccessMode(nil), pv.Spec.AccessModes...)
	}
	if equality.Semantic.DeepEqual(cl.Status, claim.Status) {
		return nil
	}
	if _, err := b.client.CoreV1().PersistentVolumeClaims(cl.Namespace).UpdateStatus(ctx, cl, metav1.UpdateOptions{}); err != nil {
		return fmt.Errorf("failed to set claim %s/%s %s: %w", cl.Namespace, cl.Name, phase, err)
	}
	return nil
}

// setVolumePhase writes a volume's phase and message, and the time of the
// transition.
func (b *Binder) setVolumePhase(ctx context.Context, pv *v1.PersistentVolume, phase v1.PersistentVolumePhase, message string) (*v1.PersistentVolume, error) {
	if pv.Status.Phase == phase && pv.Status.Message == message {
		return pv, nil
	}
	next := pv.DeepCopy()
	if next.Status.Phase != phase {
		now := metav1.Now()
		next.Status.LastPhaseTransitionTime = &now
	}
	next.Status.Phase = phase
	next.Status.Message = message
	out, err := b.client.CoreV1().PersistentVolumes().UpdateStatus(ctx, next, metav1.UpdateOptions{})
	if err != nil {
		return nil, fmt.Errorf("failed to set volume %q %s: %w", pv.Name, phase, err)
	}
	return out, nil
}

func (b *Binder) syncVolume(ctx context.Context, name string) error {
	pv, err := b.pvLister.Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	ref := pv.Spec.ClaimRef
	if ref == nil || ref.UID == "" {
		// Unbound, or pre-bound by the user to a claim not bound yet.
		_, err := b.setVolumePhase(ctx, pv, v1.VolumeAvailable, "")
		return err
	}
	claim, err := b.pvcLister.PersistentVolumeClaims(ref.Namespace).Get(ref.Name)
	if err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	if claim == nil || claim.UID != ref.UID {
		// The claim is gone: the volume is released and reclaimed.
		if pv.Status.Phase != v1.VolumeReleased && pv.Status.Phase != v1.VolumeFailed {
			if pv, err = b.setVolumePhase(ctx, pv, v1.VolumeReleased, ""); err != nil {
				return err
			}
		}
		return b.reclaim(ctx, pv)
	}
	switch claim.Spec.VolumeName {
	case "":
		// The claim sync finishes the binding.
		b.claims.Add(claim.Namespace + "/" + claim.Name)
		return nil
	case pv.Name:
		_, err := b.setVolumePhase(ctx, pv, v1.VolumeBound, "")
		return err
	}
	// The claim is bound to another volume.
	if metav1.HasAnnotation(pv.ObjectMeta, volume.AnnBoundByController) && !metav1.HasAnnotation(pv.ObjectMeta, volume.AnnDynamicallyProvisioned) {
		next := pv.DeepCopy()
		next.Spec.ClaimRef = nil
		delete(next.Annotations, volume.AnnBoundByController)
		if _, err := b.client.CoreV1().PersistentVolumes().Update(ctx, next, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("failed to unbind volume %q: %w", pv.Name, err)
		}
		return nil
	}
	if pv.Status.Phase != v1.VolumeReleased && pv.Status.Phase != v1.VolumeFailed {
		if pv, err = b.setVolumePhase(ctx, pv, v1.VolumeReleased, ""); err != nil {
			return err
		}
	}
	return b.reclaim(ctx, pv)
}

// reclaim applies a released volume's reclaim policy: Retain keeps it,
// Delete deletes a local-path volume (its node removes the directory
// before the cleanup finalizer lets the object go) and fails for volumes no
// deleter here knows, Recycle fails (no recycler).
func (b *Binder) reclaim(ctx context.Context, pv *v1.PersistentVolume) error {
	if pv.Status.Phase != v1.VolumeReleased {
		return nil
	}
	switch pv.Spec.PersistentVolumeReclaimPolicy {
	case v1.PersistentVolumeReclaimDelete:
		if localpath.IsLocalPath(pv) {
			if pv.DeletionTimestamp != nil {
				return nil
			}
			err := b.client.CoreV1().PersistentVolumes().Delete(ctx, pv.Name, metav1.DeleteOptions{})
			if err != nil && !apierrors.IsNotFound(err) {
				return fmt.Errorf("failed to delete volume %q: %w", pv.Name, err)
			}
			b.log.Info("deleted released volume", "volume", pv.Name)
			return nil
		}
		if metav1.HasAnnotation(pv.ObjectMeta, volume.AnnDynamicallyProvisioned) {
			// Its external provisioner deletes it.
			return nil
		}
		msg := fmt.Sprintf("error getting deleter volume plugin for volume %q: no deletable volume plugin matched", pv.Name)
		b.recorder.Event(pv, v1.EventTypeWarning, reasonVolumeFailedDelete, msg)
		_, err := b.setVolumePhase(ctx, pv, v1.VolumeFailed, msg)
		return err
	case v1.PersistentVolumeReclaimRecycle:
		msg := "No recycler plugin found for the volume!"
		b.recorder.Event(pv, v1.EventTypeWarning, reasonVolumeFailedRecycle, msg)
		_, err := b.setVolumePhase(ctx, pv, v1.VolumeFailed, msg)
		return err
	}
	return nil
}
