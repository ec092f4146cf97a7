package disruption

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	appsinformers "k8s.io/client-go/informers/apps/v1"
)

const statefulSetKind = "StatefulSet"

// AddStatefulSets makes StatefulSets a scale source, as Kubernetes'
// getPodStatefulSet finder: a pod controlled by a StatefulSet counts
// against its spec.replicas. Call it before Run.
func (c *Controller) AddStatefulSets(ssInformer appsinformers.StatefulSetInformer) {
	c.ssLister = ssInformer.Lister()
	c.synced = append(c.synced, ssInformer.Informer().HasSynced)
}

// statefulSetScale resolves ref to a StatefulSet in the cache with its uid;
// found is false otherwise (or when StatefulSets are not a scale source).
func (c *Controller) statefulSetScale(namespace string, ref *metav1.OwnerReference) (uid types.UID, replicas int32, found bool, err error) {
	if c.ssLister == nil {
		return "", 0, false, nil
	}
	if ok, err := isAppsKind(ref, statefulSetKind); !ok || err != nil {
		return "", 0, false, err
	}
	ss, err := c.ssLister.StatefulSets(namespace).Get(ref.Name)
	if err != nil || ss.UID != ref.UID {
		return "", 0, false, nil
	}
	return ss.UID, replicasOf(ss.Spec.Replicas), true, nil
}
