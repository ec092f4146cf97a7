// Package storageversionmigration is kube-controller-manager's
// storage-version-migrator controller: for each StorageVersionMigration
// (storagemigration.k8s.io/v1) it lists the named resource through the
// API, records the list's resourceVersion and Running, rewrites every
// object with an empty merge patch conditioned on the listed
// resourceVersion, and records Succeeded, or Failed when the resource is
// still not served a minute after the migration's creation (as upstream's:
// discovery may not have caught up with a new CRD). The API server writes an object again only when its
// re-encoded bytes differ from the stored ones (a custom resource stored
// in an older version of its CRD), so a rewrite of an object already in
// its storage version costs a read and changes nothing; an object written
// since the list is already current, so a conflict is success.
package storageversionmigration
