// Package imagelocality is the ImageLocality plugin: it prefers nodes that
// already hold the pod's container images (node.status.images), weighing
// each image by its size and by how widely it is spread over the cluster,
// with kube-scheduler's thresholds. It reads the pod, each NodeInfo's
// images by name (whatever the node agents report in status.images) and
// how many nodes hold each name, which the snapshot counts as nodes change,
// as kube-scheduler's keeps each image's NumNodes; the pod's image names
// get ":latest" when untagged, the nodes' names are matched as reported, as
// in kube-scheduler.
package imagelocality
