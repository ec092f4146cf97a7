// Package imagelocality is the ImageLocality plugin: it prefers nodes that
// already hold the pod's container images (node.status.images), weighing
// each image by its size and by how widely it is spread over the cluster,
// with kube-scheduler's thresholds. It reads only the pod and the
// snapshot's NodeInfos.
package imagelocality
