// Package garbagecollector is the garbage collector: it keeps a graph of
// ownerReferences over every resource the API serves (metadata informers,
// so it holds only object metadata), and when an owner goes it deletes
// the dependents (background), deletes them first while the owner waits
// behind its foregroundDeletion finalizer (foreground, honouring
// blockOwnerDeletion), or removes the owner from its dependents behind the
// orphan finalizer (orphan), as `kubectl delete --cascade=...` asks. It
// reads through informers and discovery, and writes only deletes and
// metadata patches through the API. Discovery is read again every 30 s (and
// soon after an owner of a kind it did not list appears), so a CRD made
// after start gets its resources watched; an owner of a kind not (yet)
// discovered is neither present nor gone, and its dependent is retried,
// never deleted for it, as in kube-controller-manager. An owner known only
// from a dependent's reference is looked at until its watch shows it, so
// one that goes before its watch lists still has its dependents collected.
package garbagecollector
