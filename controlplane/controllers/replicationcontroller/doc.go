// Package replicationcontroller is the ReplicationController controller.
// As upstream's replication manager, it is the ReplicaSet controller
// (controlplane/controllers/replicaset) run over adapters that show each
// ReplicationController as a ReplicaSet: an informer and lister that
// convert RCs to RSs, a client whose ReplicaSets calls read and write RCs,
// and an event recorder that reports on the RC. It reads pods and RCs
// through informers and writes pods, RC status and events through the API.
package replicationcontroller
