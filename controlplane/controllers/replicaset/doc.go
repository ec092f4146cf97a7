// Package replicaset is the ReplicaSet controller: it keeps spec.replicas
// active pods matching each ReplicaSet's selector, adopting matching
// orphans and releasing pods that stop matching, creating in slow-start
// batches and deleting the least valuable pods first, with expectations so
// a slow watch never makes it over-create. It reports SuccessfulCreate and
// SuccessfulDelete events and the ReplicaSet's status. It reads pods and
// ReplicaSets through informers and writes pods, ReplicaSet status and
// events through the API.
package replicaset
