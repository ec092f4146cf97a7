// Package serviceaccount is the ServiceAccount controller: it keeps a
// "default" ServiceAccount and the "kube-root-ca.crt" ConfigMap (the cluster
// CA as ca.crt) in every active namespace, as Kubernetes' serviceaccount and
// root-ca-cert-publisher controllers do. It is an API client only (client-go
// informers and a rate-limited workqueue of namespace names), acting as
// system:kube-controller-manager; it never touches storage.
package serviceaccount
