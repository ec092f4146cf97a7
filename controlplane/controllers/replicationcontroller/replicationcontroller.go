package replicationcontroller

import (
	"log/slog"

	corev1 "k8s.io/api/core/v1"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/record"

	"github.com/glassplane/glassplane/controlplane/controllers/replicaset"
)

// controllerKind is the kind of the owners this controller manages.
var controllerKind = corev1.SchemeGroupVersion.WithKind("ReplicationController")

// New builds the ReplicationController controller: the ReplicaSet
// controller over adapters that convert RCs to RSs and back. Nothing runs
// until Run.
func New(log *slog.Logger, client kubernetes.Interface, recorder record.EventRecorder, rcInformer coreinformers.ReplicationControllerInformer, podInformer coreinformers.PodInformer) (*replicaset.Controller, error) {
	return replicaset.NewBase(log, clientsetAdapter{client}, recorderAdapter{recorder}, informerAdapter{rcInformer}, podInformer, controllerKind, "replicationcontroller")
}
