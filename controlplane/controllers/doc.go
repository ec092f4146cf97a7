// Package controllers is the controller manager: it builds one shared
// informer factory and starts every controller in the subpackages on it
// (deployment, replicaset, replicationcontroller (the replicaset logic over
// RC adapters), job, cronjob, daemonset, statefulset, disruption, garbage collector,
// namespace, node lifecycle, endpoints, EndpointSlices and EndpointSlice
// mirroring (custom Endpoints of Services without a selector), horizontal pod
// autoscaler, persistentvolume binder and protections, resource quota,
// validatingadmissionpolicy status, storage version migrator), each recording its Events under its
// Kubernetes component name. Config.Controllers selects them as
// kube-controller-manager's --controllers does, by its names
// (KnownControllers); only the selected ones are built, so the others'
// informers never start. It is an API client
// only: everything it reads comes from informers and everything it changes
// goes through the API with the controller manager's identity.
package controllers
