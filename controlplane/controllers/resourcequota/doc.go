// Package resourcequota is the ResourceQuota controller: it keeps each
// quota's status as kube-controller-manager's resourcequota controller
// does: status.hard is spec.hard, status.used what the namespace holds of
// each tracked resource (pods and their compute requests and limits by
// scope, Services and node ports, claims and storage, and counts of any
// resource as count/<resource>.<group>), computed with the evaluators of
// controlplane/quota. A quota is recomputed when it is created or its
// spec changes, when a pod finishes or an object it counts is deleted in
// its namespace (the replenishment that frees what the quota admission
// plugin charged), and every resync period. It reads through informers
// and lists, and writes only quota status, through the API.
package resourcequota
