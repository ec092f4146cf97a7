package disruption

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	coreinformers "k8s.io/client-go/informers/core/v1"
)

const replicationControllerKind = "ReplicationController"

// AddReplicationControllers makes ReplicationControllers a scale source,
// as Kubernetes' getPodReplicationController finder: a pod controlled by
// an RC counts against its spec.replicas. Call it before Run.
func (c *Controller) AddReplicationControllers(rcInformer coreinformers.ReplicationControllerInformer) {
	c.rcLister = rcInformer.Lister()
	c.synced = append(c.synced, rcInformer.Informer().HasSynced)
}

// replicationControllerScale resolves ref to a core/v1 RC in the cache
// with its uid; found is false otherwise (or when RCs are not a scale
// source).
func (c *Controller) replicationControllerScale(namespace string, ref *metav1.OwnerReference) (uid types.UID, replicas int32, found bool, err error) {
	if c.rcLister == nil || ref.APIVersion != "v1" {
		return "", 0, false, nil
	}
	rc, err := c.rcLister.ReplicationControllers(namespace).Get(ref.Name)
	if err != nil || rc.UID != ref.UID {
		return "", 0, false, nil
	}
	return rc.UID, replicasOf(rc.Spec.Replicas), true, nil
}
