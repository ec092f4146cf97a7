// Package admission is the API server's admission room: it fills in
// Kubernetes' defaults (the behaviour of kube-apiserver's defaults.go,
// registry strategies and default-on plugins such as Priority and
// DefaultTolerationSeconds), validates objects with Kubernetes' own rules,
// field paths and error texts, enforces namespace lifecycle, and runs
// Kubernetes' ServiceAccount plugin (the default service account, which must
// exist, and the projected kube-api-access token volume), LimitRanger,
// DefaultIngressClass, PersistentVolumeClaimResize and ResourceQuota (which charges quotas through the
// QuotaStore it is given, with a compare-and-swap). A Chain runs
// mutating plugins then validating ones and records, per plugin, the RFC 6902
// JSON patch of what it changed so the audit log and the dashboard can show
// each step. It works only on the typed k8s.io/api objects it is handed and a
// NamespaceLister, ServiceAccountLister, LimitRangeLister,
// IngressClassLister, StorageClassLister and QuotaStore it is given; it never touches storage
// or the network itself. The admission webhooks and policies are the
// dynamic subpackage's plugins, which the API server adds to its chain.
package admission
