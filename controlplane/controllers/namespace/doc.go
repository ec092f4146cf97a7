// Package namespace is the namespace controller: for a namespace that is
// Terminating it deletes everything in it (every namespaced resource that
// discovery lists), its pods first: while a pod remains nothing else is
// deleted and the NamespaceDeletionContentFailure condition says so, as
// upstream's ordered namespace deletion. It reports what remains in the NamespaceContentRemaining
// condition, and once nothing is left removes the "kubernetes" finalizer
// through /finalize, after which the API server removes the namespace. It
// reads namespaces through an informer and discovery, and deletes through
// the metadata client.
package namespace
