// Package rbac is Kubernetes' RBAC authorizer for Glassplane: it matches a
// request's attributes against the rules of the Roles and ClusterRoles bound
// to the user (verbs, API groups, resources with subresources, resource
// names and non-resource URLs, with "*" wildcards), explains an allow in
// Kubernetes' words (`RBAC: allowed by ClusterRoleBinding "x" of ClusterRole
// "y" to Group "z"`), resolves every rule a user holds (for
// SelfSubjectRulesReview and the escalation check), refuses role and binding
// writes that would grant more than the writer holds, and defines the
// bootstrap policy (cluster-admin, admin, edit, view, the system: roles of the
// scheduler, controller manager, nodes and dashboard). Roles and bindings are
// read from a Cache the API server keeps current from the storage watch; this
// package never touches storage itself.
package rbac
