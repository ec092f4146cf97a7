package storage

// Root is the prefix under which every object is stored, as in Kubernetes.
const Root = "/registry/"

// Key returns the etcd key of an object: /registry/<resource>/<namespace>/<name>,
// or /registry/<resource>/<name> for cluster-scoped objects (namespace "").
// The resource is the storage name Kubernetes uses (e.g. "pods", "deployments",
// "services/specs"); callers pass names that were validated already.
func Key(resource, namespace, name string) string {
	if namespace == "" {
		return Root + resource + "/" + name
	}
	return Root + resource + "/" + namespace + "/" + name
}

// Prefix returns the prefix of every object of a resource, narrowed to a
// namespace when namespace is not empty. It ends in "/" so that "pods" does not
// match "podtemplates".
func Prefix(resource, namespace string) string {
	if namespace == "" {
		return Root + resource + "/"
	}
	return Root + resource + "/" + namespace + "/"
}
