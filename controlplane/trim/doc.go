// Package trim holds the transform the control plane's informers apply to
// what they cache: ManagedFields drops metadata.managedFields, as
// kube-controller-manager's and kube-scheduler's informers do. No
// controller reads them; a component that writes back an object from its
// cache sends no managedFields, and the API server then keeps the stored
// ones, as kube-apiserver does.
package trim
