// Package garbagecollector is the garbage collector: it keeps a graph of
// ownerReferences over every resource the API serves (metadata informers,
// so it holds only object metadata), and when an owner goes it deletes
// the dependents (background), deletes them first while the owner waits
// behind its foregroundDeletion finalizer (foreground, honouring
// blockOwnerDeletion), or removes the owner from its dependents behind the
// orphan finalizer (orphan), as `kubectl delete --cascade=...` asks. It
// reads through informers and discovery, and writes only deletes and
// metadata patches through the API.
package garbagecollector
