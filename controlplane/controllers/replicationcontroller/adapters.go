package replicationcontroller

import (
	"context"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	appsv1client "k8s.io/client-go/kubernetes/typed/apps/v1"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	appslisters "k8s.io/client-go/listers/apps/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
)

// informerAdapter is a ReplicaSetInformer over an RC informer.
type informerAdapter struct {
	rc coreinformers.ReplicationControllerInformer
}

func (i informerAdapter) Informer() toolscache.SharedIndexInformer {
	return conversionInformer{i.rc.Informer()}
}

func (i informerAdapter) Lister() appslisters.ReplicaSetLister {
	return conversionLister{i.rc.Lister()}
}

// conversionInformer hands its handlers ReplicaSet views of RCs.
type conversionInformer struct {
	toolscache.SharedIndexInformer
}

func (i conversionInformer) AddEventHandler(h toolscache.ResourceEventHandler) (toolscache.ResourceEventHandlerRegistration, error) {
	return i.SharedIndexInformer.AddEventHandler(conversionHandler{h})
}

type conversionHandler struct {
	inner toolscache.ResourceEventHandler
}

func (h conversionHandler) OnAdd(obj any, isInInitialList bool) {
	h.inner.OnAdd(toRS(obj), isInInitialList)
}

func (h conversionHandler) OnUpdate(oldObj, newObj any) {
	h.inner.OnUpdate(toRS(oldObj), toRS(newObj))
}

func (h conversionHandler) OnDelete(obj any) {
	if tomb, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
		h.inner.OnDelete(toolscache.DeletedFinalStateUnknown{Key: tomb.Key, Obj: toRS(tomb.Obj)})
		return
	}
	h.inner.OnDelete(toRS(obj))
}

func toRS(obj any) any {
	if rc, ok := obj.(*corev1.ReplicationController); ok {
		return rcToRS(rc)
	}
	return obj
}

// conversionLister is a ReplicaSetLister over an RC lister.
type conversionLister struct {
	rc corelisters.ReplicationControllerLister
}

func (l conversionLister) List(selector labels.Selector) ([]*appsv1.ReplicaSet, error) {
	rcs, err := l.rc.List(selector)
	return convertList(rcs), err
}

func (l conversionLister) ReplicaSets(namespace string) appslisters.ReplicaSetNamespaceLister {
	return conversionNamespaceLister{l.rc.ReplicationControllers(namespace)}
}

func (l conversionLister) GetPodReplicaSets(pod *corev1.Pod) ([]*appsv1.ReplicaSet, error) {
	rcs, err := l.rc.GetPodControllers(pod)
	return convertList(rcs), err
}

type conversionNamespaceLister struct {
	rc corelisters.ReplicationControllerNamespaceLister
}

func (l conversionNamespaceLister) List(selector labels.Selector) ([]*appsv1.ReplicaSet, error) {
	rcs, err := l.rc.List(selector)
	return convertList(rcs), err
}

func (l conversionNamespaceLister) Get(name string) (*appsv1.ReplicaSet, error) {
	rc, err := l.rc.Get(name)
	if err != nil {
		return nil, err
	}
	return rcToRS(rc), nil
}

func convertList(rcs []*corev1.ReplicationController) []*appsv1.ReplicaSet {
	out := make([]*appsv1.ReplicaSet, 0, len(rcs))
	for _, rc := range rcs {
		out = append(out, rcToRS(rc))
	}
	return out
}

// clientsetAdapter is the API client with AppsV1().ReplicaSets reading and
// writing ReplicationControllers; everything else passes through.
type clientsetAdapter struct {
	kubernetes.Interface
}

func (c clientsetAdapter) AppsV1() appsv1client.AppsV1Interface {
	return appsAdapter{AppsV1Interface: c.Interface.AppsV1(), core: c.Interface.CoreV1()}
}

type appsAdapter struct {
	appsv1client.AppsV1Interface
	core corev1client.CoreV1Interface
}

func (a appsAdapter) ReplicaSets(namespace string) appsv1client.ReplicaSetInterface {
	return rsAdapter{rcs: a.core.ReplicationControllers(namespace)}
}

// rsAdapter serves the ReplicaSet calls the ReplicaSet controller makes
// (Get, Update, UpdateStatus) on ReplicationControllers. The embedded
// interface is nil: the controller makes no other calls.
type rsAdapter struct {
	appsv1client.ReplicaSetInterface
	rcs corev1client.ReplicationControllerInterface
}

func (r rsAdapter) Get(ctx context.Context, name string, opts metav1.GetOptions) (*appsv1.ReplicaSet, error) {
	rc, err := r.rcs.Get(ctx, name, opts)
	if err != nil {
		return nil, err
	}
	return rcToRS(rc), nil
}

func (r rsAdapter) Update(ctx context.Context, rs *appsv1.ReplicaSet, opts metav1.UpdateOptions) (*appsv1.ReplicaSet, error) {
	return r.write(ctx, rs, opts, r.rcs.Update)
}

func (r rsAdapter) UpdateStatus(ctx context.Context, rs *appsv1.ReplicaSet, opts metav1.UpdateOptions) (*appsv1.ReplicaSet, error) {
	return r.write(ctx, rs, opts, r.rcs.UpdateStatus)
}

func (r rsAdapter) write(ctx context.Context, rs *appsv1.ReplicaSet, opts metav1.UpdateOptions,
	fn func(context.Context, *corev1.ReplicationController, metav1.UpdateOptions) (*corev1.ReplicationController, error)) (*appsv1.ReplicaSet, error) {
	rc, err := rsToRC(rs)
	if err != nil {
		return nil, err
	}
	out, err := fn(ctx, rc, opts)
	if err != nil {
		return nil, err
	}
	return rcToRS(out), nil
}

// recorderAdapter reports events about a ReplicaSet view on the
// ReplicationController it stands for.
type recorderAdapter struct {
	inner record.EventRecorder
}

func (r recorderAdapter) Event(obj runtime.Object, eventtype, reason, message string) {
	r.inner.Event(toRC(obj), eventtype, reason, message)
}

func (r recorderAdapter) Eventf(obj runtime.Object, eventtype, reason, messageFmt string, args ...any) {
	r.inner.Eventf(toRC(obj), eventtype, reason, messageFmt, args...)
}

func (r recorderAdapter) AnnotatedEventf(obj runtime.Object, annotations map[string]string, eventtype, reason, messageFmt string, args ...any) {
	r.inner.AnnotatedEventf(toRC(obj), annotations, eventtype, reason, messageFmt, args...)
}

func toRC(obj runtime.Object) runtime.Object {
	if rs, ok := obj.(*appsv1.ReplicaSet); ok {
		if rc, err := rsToRC(rs); err == nil {
			return rc
		}
	}
	return obj
}
