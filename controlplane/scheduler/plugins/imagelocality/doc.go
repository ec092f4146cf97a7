// Package imagelocality is the ImageLocality plugin: it prefers nodes that
// already hold the pod's container images (node.status.images), weighing
// each image by its size and by how widely it is spread over the cluster,
// with kube-scheduler's thresholds. It reads only the pod and the Node
// objects in the snapshot's NodeInfos (whatever the node agents report in
// status.images), once per cycle in PreScore; the pod's image names get
// ":latest" when untagged, the nodes' names are matched as reported, as in
// kube-scheduler.
package imagelocality
