package rbac

import (
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Well-known identities the bootstrap policy binds.
const (
	UserKubeScheduler         = "system:kube-scheduler"
	UserKubeControllerManager = "system:kube-controller-manager"
	UserDashboard             = "system:glassplane-dashboard"
	GroupNodes                = "system:nodes"
	GroupUnauthenticated      = "system:unauthenticated"
	// ControllerRolePrefix starts the name of each controller's role.
	ControllerRolePrefix = "system:controller:"
	// AnnotationAutoupdate is Kubernetes' annotation that lets the API server
	// reconcile a bootstrap role at start; "false" leaves it as edited.
	AnnotationAutoupdate = "rbac.authorization.kubernetes.io/autoupdate"
	// AnnotationDescription explains a Glassplane-specific role.
	AnnotationDescription = "glassplane.io/description"
	// NamespaceGlassplaneSystem is Glassplane's own namespace, created at
	// bootstrap and never deleted, like kube-system, for what Glassplane
	// keeps out of the users' namespaces.
	NamespaceGlassplaneSystem = "glassplane-system"
)

// The cluster DNS server's identity (controlplane/dns) and the ClusterRole
// CoreDNS's manifests ship for its kubernetes plugin, bound to it.
const (
	UserDNS     = "system:glassplane-dns"
	RoleCoreDNS = "system:coredns"
)

// UserKubeProxy is the node's service proxy (controlplane/proxy),
// kube-proxy's identity, bound to system:node-proxier.
const UserKubeProxy = "system:kube-proxy"

const (
	legacyGroup         = ""
	appsGroup           = "apps"
	batchGroup          = "batch"
	autoscalingGroup    = "autoscaling"
	policyGroup         = "policy"
	networkingGroup     = "networking.k8s.io"
	discoveryGroup      = "discovery.k8s.io"
	eventsGroup         = "events.k8s.io"
	coordinationGroup   = "coordination.k8s.io"
	storageGroup        = "storage.k8s.io"
	authenticationGroup = "authentication.k8s.io"
	authorizationGroup  = "authorization.k8s.io"
	rbacGroup           = rbacv1.GroupName
	metricsGroup        = "metrics.k8s.io"
	glassplaneGroup     = "glassplane.io"
)

var (
	read      = []string{"get", "list", "watch"}
	write     = []string{"create", "delete", "deletecollection", "patch", "update"}
	readWrite = append(append([]string{}, read...), write...)
)

// rule builds a resource rule.
func rule(verbs []string, groups []string, resources ...string) rbacv1.PolicyRule {
	return rbacv1.PolicyRule{Verbs: verbs, APIGroups: groups, Resources: resources}
}

// urls builds a non-resource rule.
func urls(verbs []string, paths ...string) rbacv1.PolicyRule {
	return rbacv1.PolicyRule{Verbs: verbs, NonResourceURLs: paths}
}

func g(groups ...string) []string { return groups }

func v(verbs ...string) []string { return verbs }

func eventsRule() rbacv1.PolicyRule {
	return rule(v("create", "update", "patch"), g(legacyGroup, eventsGroup), "events")
}

func meta(name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{
		Name:        name,
		Labels:      map[string]string{"kubernetes.io/bootstrapping": "rbac-defaults"},
		Annotations: map[string]string{AnnotationAutoupdate: "true"},
	}
}

// viewRules are what "view" grants: reading everything in a namespace but
// secrets and RBAC.
func viewRules() []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{
		rule(read, g(legacyGroup), "pods", "replicationcontrollers", "replicationcontrollers/scale", "serviceaccounts",
			"services", "services/status", "endpoints", "persistentvolumeclaims", "persistentvolumeclaims/status", "configmaps"),
		rule(read, g(legacyGroup), "limitranges", "resourcequotas", "bindings", "events",
			"pods/status", "resourcequotas/status", "namespaces/status", "replicationcontrollers/status", "pods/log"),
		rule(read, g(legacyGroup), "namespaces"),
		rule(read, g(discoveryGroup), "endpointslices"),
		rule(read, g(appsGroup), "controllerrevisions", "statefulsets", "statefulsets/scale", "statefulsets/status",
			"daemonsets", "daemonsets/status", "deployments", "deployments/scale", "deployments/status",
			"replicasets", "replicasets/scale", "replicasets/status"),
		rule(read, g(autoscalingGroup), "horizontalpodautoscalers", "horizontalpodautoscalers/status"),
		rule(read, g(batchGroup), "cronjobs", "cronjobs/status", "jobs", "jobs/status"),
		rule(read, g(policyGroup), "poddisruptionbudgets", "poddisruptionbudgets/status"),
		rule(read, g(networkingGroup), "ingresses", "ingresses/status", "networkpolicies"),
		// metrics-server's system:aggregated-metrics-reader, aggregated into
		// view, edit and admin.
		rule(read, g(metricsGroup), "pods", "nodes"),
		// Why the scheduler put the namespace's pods where it did.
		rule(read, g(glassplaneGroup), "schedulingdecisions"),
	}
}

// editRules are what "edit" adds to "view": writing workloads, services,
// config and secrets, but not roles or bindings.
func editRules() []rbacv1.PolicyRule {
	return append(viewRules(),
		rule(v("impersonate"), g(legacyGroup), "serviceaccounts"),
		rule(write, g(legacyGroup), "pods", "pods/attach", "pods/proxy", "pods/exec", "pods/portforward"),
		rule(v("create"), g(legacyGroup), "pods/eviction"),
		rule(write, g(legacyGroup), "replicationcontrollers", "replicationcontrollers/scale", "serviceaccounts",
			"services", "services/proxy", "persistentvolumeclaims", "configmaps", "secrets", "events"),
		rule(v("create"), g(legacyGroup), "serviceaccounts/token"),
		rule(read, g(legacyGroup), "pods/attach", "pods/exec", "pods/portforward", "pods/proxy", "secrets", "services/proxy"),
		rule(write, g(appsGroup), "statefulsets", "statefulsets/scale", "daemonsets", "deployments", "deployments/scale",
			"deployments/rollback", "replicasets", "replicasets/scale"),
		rule(write, g(autoscalingGroup), "horizontalpodautoscalers"),
		rule(write, g(batchGroup), "cronjobs", "jobs"),
		rule(write, g(policyGroup), "poddisruptionbudgets"),
		rule(write, g(networkingGroup), "ingresses", "networkpolicies"),
		rule(write, g(discoveryGroup), "endpointslices"),
		rule(write, g(coordinationGroup), "leases"),
		rule(read, g(coordinationGroup), "leases"),
	)
}

// NodeRules are what every node may do, as Kubernetes' NodeRules; the Node
// authorizer narrows secrets, configmaps and leases to the node's own, and
// NodeRestriction narrows writes to the node's own Node and pods.
func NodeRules() []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{
		rule(v("create"), g(authenticationGroup), "tokenreviews"),
		rule(v("create"), g(authorizationGroup), "subjectaccessreviews", "localsubjectaccessreviews"),
		rule(read, g(legacyGroup), "services"),
		rule(v("create", "get", "list", "watch"), g(legacyGroup), "nodes"),
		rule(v("update", "patch"), g(legacyGroup), "nodes/status"),
		rule(v("update", "patch"), g(legacyGroup), "nodes"),
		rule(v("create", "update", "patch"), g(legacyGroup), "events"),
		rule(read, g(legacyGroup), "pods"),
		rule(v("create", "delete"), g(legacyGroup), "pods"),
		rule(v("update", "patch"), g(legacyGroup), "pods/status"),
		rule(v("create"), g(legacyGroup), "pods/eviction"),
		rule(read, g(legacyGroup), "configmaps", "secrets"),
		rule(v("get"), g(legacyGroup), "persistentvolumeclaims", "persistentvolumes"),
		rule(v("update", "patch"), g(legacyGroup), "persistentvolumeclaims/status"),
		rule(v("create"), g(legacyGroup), "serviceaccounts/token"),
		rule(v("get", "create", "update", "patch", "delete"), g(coordinationGroup), "leases"),
		rule(read, g(storageGroup), "csidrivers", "csinodes", "volumeattachments"),
		rule(read, g("node.k8s.io"), "runtimeclasses"),
		// Projected clusterTrustBundle volumes, as upstream's NodeRules
		// with ClusterTrustBundleProjection.
		rule(read, g("certificates.k8s.io"), "clustertrustbundles"),
		// Projected podCertificate volumes (PodCertificateRequest).
		rule(v("get", "list", "watch", "create"), g("certificates.k8s.io"), "podcertificaterequests"),
	}
}

// ClusterRoles returns the bootstrap cluster roles, as kube-apiserver's
// bootstrap policy names them, plus system:glassplane-dashboard.
func ClusterRoles() []*rbacv1.ClusterRole {
	admin := append(editRules(),
		rule(v("create"), g(authorizationGroup), "localsubjectaccessreviews"),
		rule(readWrite, g(rbacGroup), "roles", "rolebindings"),
	)
	roles := []*rbacv1.ClusterRole{
		{ObjectMeta: meta("cluster-admin"), Rules: []rbacv1.PolicyRule{
			rule(v("*"), g("*"), "*"),
			urls(v("*"), "*"),
		}},
		{ObjectMeta: meta("admin"), Rules: admin},
		{ObjectMeta: meta("edit"), Rules: editRules()},
		{ObjectMeta: meta("view"), Rules: viewRules()},
		{ObjectMeta: meta("system:discovery"), Rules: []rbacv1.PolicyRule{
			urls(v("get"), "/api", "/api/*", "/apis", "/apis/*", "/healthz", "/livez", "/openapi", "/openapi/*", "/readyz", "/version", "/version/"),
		}},
		{ObjectMeta: meta("system:basic-user"), Rules: []rbacv1.PolicyRule{
			rule(v("create"), g(authenticationGroup), "selfsubjectreviews"),
			rule(v("create"), g(authorizationGroup), "selfsubjectaccessreviews", "selfsubjectrulesreviews"),
		}},
		{ObjectMeta: meta("system:auth-delegator"), Rules: []rbacv1.PolicyRule{
			rule(v("create"), g(authenticationGroup), "tokenreviews"),
			rule(v("create"), g(authorizationGroup), "subjectaccessreviews"),
		}},
		{ObjectMeta: meta("system:public-info-viewer"), Rules: []rbacv1.PolicyRule{
			urls(v("get"), "/healthz", "/livez", "/readyz", "/version", "/version/"),
		}},
		{ObjectMeta: meta("system:service-account-issuer-discovery"), Rules: []rbacv1.PolicyRule{
			urls(v("get"), "/.well-known/openid-configuration", "/.well-known/openid-configuration/", "/openid/v1/jwks", "/openid/v1/jwks/"),
		}},
		{ObjectMeta: meta("system:node"), Rules: NodeRules()},
		{ObjectMeta: meta("system:node-proxier"), Rules: []rbacv1.PolicyRule{
			rule(v("list", "watch"), g(legacyGroup), "services", "endpoints"),
			rule(read, g(legacyGroup), "nodes"),
			eventsRule(),
			rule(v("list", "watch"), g(discoveryGroup), "endpointslices"),
			rule(v("list", "watch"), g(networkingGroup), "servicecidrs"),
		}},
		{ObjectMeta: meta("system:kube-scheduler"), Rules: []rbacv1.PolicyRule{
			eventsRule(),
			rule(v("create"), g(coordinationGroup), "leases"),
			{Verbs: v("get", "update"), APIGroups: g(coordinationGroup), Resources: []string{"leases"}, ResourceNames: []string{"kube-scheduler"}},
			rule(v("create"), g(legacyGroup), "endpoints"),
			{Verbs: v("get", "update"), APIGroups: g(legacyGroup), Resources: []string{"endpoints"}, ResourceNames: []string{"kube-scheduler"}},
			rule(read, g(legacyGroup), "nodes"),
			rule(v("get", "list", "watch", "delete"), g(legacyGroup), "pods"),
			rule(v("create"), g(legacyGroup), "bindings", "pods/binding"),
			rule(v("patch", "update"), g(legacyGroup), "pods/status"),
			rule(read, g(legacyGroup), "replicationcontrollers", "services"),
			rule(read, g(appsGroup), "replicasets", "statefulsets"),
			rule(read, g(policyGroup), "poddisruptionbudgets"),
			rule(v("get", "list", "watch", "update"), g(legacyGroup), "persistentvolumeclaims", "persistentvolumes"),
			rule(v("create"), g(authenticationGroup), "tokenreviews"),
			rule(v("create"), g(authorizationGroup), "subjectaccessreviews"),
			rule(read, g(storageGroup), "csinodes", "csidrivers", "csistoragecapacities", "storageclasses"),
			rule(read, g(legacyGroup), "namespaces"),
			// Each pod's decision record, which Kubernetes' scheduler does
			// not keep.
			rule(v("create", "get", "update", "patch"), g(glassplaneGroup), "schedulingdecisions"),
		}},
		{ObjectMeta: meta("system:volume-scheduler"), Rules: []rbacv1.PolicyRule{
			rule(v("get", "list", "patch", "update", "watch"), g(legacyGroup), "persistentvolumes"),
			rule(read, g(storageGroup), "storageclasses"),
			rule(v("get", "list", "patch", "update", "watch"), g(legacyGroup), "persistentvolumeclaims"),
		}},
		{ObjectMeta: meta("system:kube-controller-manager"), Rules: []rbacv1.PolicyRule{
			eventsRule(),
			rule(v("create"), g(coordinationGroup), "leases"),
			{Verbs: v("get", "update"), APIGroups: g(coordinationGroup), Resources: []string{"leases"}, ResourceNames: []string{"kube-controller-manager"}},
			rule(v("create"), g(legacyGroup), "endpoints"),
			{Verbs: v("get", "update"), APIGroups: g(legacyGroup), Resources: []string{"endpoints"}, ResourceNames: []string{"kube-controller-manager"}},
			rule(v("create"), g(legacyGroup), "secrets", "serviceaccounts"),
			rule(v("delete"), g(legacyGroup), "secrets"),
			rule(v("get"), g(legacyGroup), "configmaps", "namespaces", "secrets", "serviceaccounts"),
			rule(v("update"), g(legacyGroup), "secrets", "serviceaccounts"),
			rule(v("create"), g(authenticationGroup), "tokenreviews"),
			rule(v("create"), g(authorizationGroup), "subjectaccessreviews"),
			rule(v("list", "watch"), g("*"), "*"),
			rule(v("create"), g(legacyGroup), "serviceaccounts/token"),
		}},
		{ObjectMeta: dashboardMeta(), Rules: []rbacv1.PolicyRule{
			rule(read, g("*"), "*"),
			rule(v("create"), g(authorizationGroup), "subjectaccessreviews"),
			rule(v("impersonate"), g(legacyGroup), "users", "groups", "serviceaccounts"),
			urls(v("get"), "*"),
		}},
		{ObjectMeta: tempoMeta(), Rules: []rbacv1.PolicyRule{
			{Verbs: v("get", "watch", "update", "patch"), APIGroups: g(legacyGroup), Resources: []string{"configmaps"}, ResourceNames: []string{TempoConfigMap}},
		}},
		{ObjectMeta: meta(RoleLocalPathNode), Rules: []rbacv1.PolicyRule{
			rule(v("get", "list", "watch", "update"), g(legacyGroup), "persistentvolumes"),
		}},
		{ObjectMeta: meta(RoleCoreDNS), Rules: []rbacv1.PolicyRule{
			rule(v("list", "watch"), g(legacyGroup), "endpoints", "services", "pods", "namespaces"),
			rule(v("list", "watch"), g(discoveryGroup), "endpointslices"),
		}},
	}
	return append(roles, controllerRoles()...)
}

func dashboardMeta() metav1.ObjectMeta {
	m := meta(UserDashboard)
	m.Annotations[AnnotationDescription] = "The Glassplane dashboard reads every object to draw the cluster and asks " +
		"(SubjectAccessReview) what a logged-in user may read; it changes nothing as itself: its apply form, delete " +
		"buttons, tempo control and demos act for the logged-in user by impersonating that user and groups, so RBAC " +
		"decides as for them. It holds no create, update, patch, delete, escalate or bind rights."
	return m
}

// TempoConfigMap names the classroom tempo ConfigMap in kube-system that the
// scheduler, the controllers and the node agents watch and claim steps on.
const TempoConfigMap = "glassplane-tempo"

// RoleLocalPathNode lets the node agents watch the PersistentVolumes of the
// built-in local-path provisioner and remove their cleanup finalizer once
// the node has removed a deleted volume's directory.
const RoleLocalPathNode = "system:glassplane:local-path-node"

// RoleTempo may read and claim steps on the classroom tempo.
const RoleTempo = "system:glassplane:tempo"

func tempoMeta() metav1.ObjectMeta {
	m := meta(RoleTempo)
	m.Annotations[AnnotationDescription] = "The scheduler, the controller manager and the node agents watch the classroom tempo " +
		"(ConfigMap kube-system/" + TempoConfigMap + ") and update it to claim a released step and to show what they wait for."
	return m
}

// controllerRoles are the per-controller roles of kube-controller-manager
// that Glassplane runs, named as in Kubernetes' controller policy.
func controllerRoles() []*rbacv1.ClusterRole {
	c := func(name string, rules ...rbacv1.PolicyRule) *rbacv1.ClusterRole {
		return &rbacv1.ClusterRole{ObjectMeta: meta(ControllerRolePrefix + name), Rules: rules}
	}
	return []*rbacv1.ClusterRole{
		c("cronjob-controller",
			rule(v("get", "list", "watch", "update"), g(batchGroup), "cronjobs"),
			rule(v("get", "list", "watch", "create", "update", "delete", "patch"), g(batchGroup), "jobs"),
			rule(v("update"), g(batchGroup), "cronjobs/status"),
			rule(v("update"), g(batchGroup), "cronjobs/finalizers"),
			rule(v("list", "delete"), g(legacyGroup), "pods"),
			eventsRule()),
		c("daemon-set-controller",
			rule(read, g("extensions", appsGroup), "daemonsets"),
			rule(v("update"), g("extensions", appsGroup), "daemonsets/status"),
			rule(v("update"), g("extensions", appsGroup), "daemonsets/finalizers"),
			rule(v("list", "watch"), g(legacyGroup), "nodes"),
			rule(v("list", "watch", "create", "delete", "patch"), g(legacyGroup), "pods"),
			rule(v("create"), g(legacyGroup), "pods/binding"),
			rule(v("get", "list", "watch", "create", "delete", "update", "patch"), g(appsGroup), "controllerrevisions"),
			eventsRule()),
		c("deployment-controller",
			rule(v("get", "list", "watch", "update"), g("extensions", appsGroup), "deployments"),
			rule(v("update"), g("extensions", appsGroup), "deployments/status"),
			rule(v("update"), g("extensions", appsGroup), "deployments/finalizers"),
			rule(v("get", "list", "watch", "create", "update", "patch", "delete"), g(appsGroup, "extensions"), "replicasets"),
			rule(v("get", "list", "watch", "update"), g(legacyGroup), "pods"),
			eventsRule()),
		c("disruption-controller",
			rule(read, g("extensions", appsGroup), "deployments"),
			rule(read, g(appsGroup, "extensions"), "replicasets"),
			rule(read, g(legacyGroup), "replicationcontrollers"),
			rule(read, g(policyGroup), "poddisruptionbudgets"),
			rule(read, g(appsGroup), "statefulsets"),
			rule(v("update"), g(policyGroup), "poddisruptionbudgets/status"),
			rule(v("get"), g("*"), "*/scale"),
			rule(v("patch", "update"), g(legacyGroup), "pods/status"),
			eventsRule()),
		c("endpoint-controller",
			rule(read, g(legacyGroup), "services", "pods"),
			rule(v("get", "list", "watch", "create", "update", "delete"), g(legacyGroup), "endpoints"),
			rule(v("create"), g(legacyGroup), "endpoints/restricted"),
			eventsRule()),
		c("endpointslice-controller",
			rule(read, g(legacyGroup), "services", "pods", "nodes"),
			rule(v("update"), g(legacyGroup), "services/finalizers"),
			rule(v("get", "list", "watch", "create", "update", "delete"), g(discoveryGroup), "endpointslices"),
			eventsRule()),
		c("endpointslicemirroring-controller",
			rule(read, g(legacyGroup), "services", "endpoints"),
			rule(v("update"), g(legacyGroup), "services/finalizers"),
			rule(v("update"), g(legacyGroup), "endpoints/finalizers"),
			rule(v("get", "list", "watch", "create", "update", "delete"), g(discoveryGroup), "endpointslices"),
			eventsRule()),
		c("generic-garbage-collector",
			rule(v("get", "list", "watch", "patch", "update", "delete"), g("*"), "*"),
			eventsRule()),
		c("storage-version-migrator-controller",
			rule(v("list", "patch"), g("*"), "*"),
			rule(v("update"), g("storagemigration.k8s.io"), "storageversionmigrations/status")),
		c("horizontal-pod-autoscaler",
			rule(read, g(autoscalingGroup), "horizontalpodautoscalers"),
			rule(v("update"), g(autoscalingGroup), "horizontalpodautoscalers/status"),
			rule(v("get", "update"), g("*"), "*/scale"),
			rule(v("list"), g(legacyGroup), "pods"),
			rule(v("list"), g(metricsGroup), "pods"),
			rule(v("get", "list"), g("custom.metrics.k8s.io"), "*"),
			rule(v("get", "list"), g("external.metrics.k8s.io"), "*"),
			eventsRule()),
		c("job-controller",
			rule(v("get", "list", "watch", "update", "patch"), g(batchGroup), "jobs"),
			rule(v("update"), g(batchGroup), "jobs/status"),
			rule(v("update"), g(batchGroup), "jobs/finalizers"),
			rule(v("list", "watch", "create", "delete", "patch"), g(legacyGroup), "pods"),
			eventsRule()),
		c("namespace-controller",
			rule(v("get", "list", "watch", "delete"), g(legacyGroup), "namespaces"),
			rule(v("update"), g(legacyGroup), "namespaces/finalize", "namespaces/status"),
			rule(v("get", "list", "watch", "delete", "deletecollection"), g("*"), "*")),
		c("node-controller",
			rule(v("get", "list", "watch", "update", "delete", "patch"), g(legacyGroup), "nodes"),
			rule(v("patch", "update"), g(legacyGroup), "nodes/status"),
			rule(v("patch", "update"), g(legacyGroup), "pods/status"),
			rule(v("list", "watch", "get", "delete"), g(legacyGroup), "pods"),
			eventsRule()),
		c("persistent-volume-binder",
			rule(v("get", "list", "watch", "update", "create", "delete"), g(legacyGroup), "persistentvolumes"),
			rule(v("update"), g(legacyGroup), "persistentvolumes/status"),
			rule(v("get", "list", "watch", "update"), g(legacyGroup), "persistentvolumeclaims"),
			rule(v("update"), g(legacyGroup), "persistentvolumeclaims/status"),
			rule(v("list", "watch", "get", "create", "delete"), g(legacyGroup), "pods"),
			rule(read, g(storageGroup), "storageclasses"),
			rule(v("get", "list"), g(legacyGroup), "nodes"),
			rule(v("watch"), g(legacyGroup), "events"),
			eventsRule()),
		c("pod-garbage-collector",
			rule(v("list", "watch", "delete"), g(legacyGroup), "pods"),
			rule(read, g(legacyGroup), "nodes"),
			rule(v("patch"), g(legacyGroup), "pods/status")),
		c("pv-protection-controller",
			rule(v("get", "list", "watch", "update"), g(legacyGroup), "persistentvolumes"),
			eventsRule()),
		c("pvc-protection-controller",
			rule(v("get", "list", "watch", "update"), g(legacyGroup), "persistentvolumeclaims"),
			rule(v("list", "watch", "get"), g(legacyGroup), "pods"),
			eventsRule()),
		c("replicaset-controller",
			rule(v("get", "list", "watch", "update"), g(appsGroup, "extensions"), "replicasets"),
			rule(v("update"), g(appsGroup, "extensions"), "replicasets/status"),
			rule(v("update"), g(appsGroup, "extensions"), "replicasets/finalizers"),
			rule(v("list", "watch", "patch", "create", "delete"), g(legacyGroup), "pods"),
			eventsRule()),
		c("replication-controller",
			rule(v("get", "list", "watch", "update"), g(legacyGroup), "replicationcontrollers"),
			rule(v("update"), g(legacyGroup), "replicationcontrollers/status"),
			rule(v("update"), g(legacyGroup), "replicationcontrollers/finalizers"),
			rule(v("list", "watch", "patch", "create", "delete"), g(legacyGroup), "pods"),
			eventsRule()),
		c("resourcequota-controller",
			rule(v("list", "watch"), g("*"), "*"),
			rule(v("update"), g(legacyGroup), "resourcequotas/status"),
			eventsRule()),
		c("root-ca-cert-publisher",
			rule(v("create", "update"), g(legacyGroup), "configmaps"),
			eventsRule()),
		c("service-account-controller",
			rule(v("create"), g(legacyGroup), "serviceaccounts"),
			eventsRule()),
		c("validatingadmissionpolicy-status-controller",
			rule(read, g("admissionregistration.k8s.io"), "validatingadmissionpolicies"),
			rule(v("get", "patch", "update"), g("admissionregistration.k8s.io"), "validatingadmissionpolicies/status"),
			eventsRule()),
		c("statefulset-controller",
			rule(v("list", "watch"), g(legacyGroup), "pods"),
			rule(read, g(appsGroup), "statefulsets"),
			rule(v("update"), g(appsGroup), "statefulsets/status"),
			rule(v("update"), g(appsGroup), "statefulsets/finalizers"),
			rule(v("get", "create", "delete", "update", "patch"), g(legacyGroup), "pods"),
			rule(v("get", "create", "delete", "update", "patch", "list", "watch"), g(appsGroup), "controllerrevisions"),
			rule(v("get", "create"), g(legacyGroup), "persistentvolumeclaims"),
			rule(v("update", "delete"), g(legacyGroup), "persistentvolumeclaims"),
			eventsRule()),
		c("ttl-after-finished-controller",
			rule(v("get", "list", "watch", "delete"), g(batchGroup), "jobs"),
			eventsRule()),
	}
}

// ExtensionAPIServerAuthentication is the ConfigMap in kube-system that
// tells extension API servers how to authenticate the API server's proxied
// requests and their clients' certificates, and
// RoleExtensionAPIServerAuthenticationReader the Role in kube-system that
// may read it, as kube-apiserver names both.
const (
	ExtensionAPIServerAuthentication           = "extension-apiserver-authentication"
	RoleExtensionAPIServerAuthenticationReader = "extension-apiserver-authentication-reader"
)

// Roles returns the bootstrap roles of kube-system: the one that reads
// ExtensionAPIServerAuthentication, which extension API servers are bound
// to.
func Roles() []*rbacv1.Role {
	reader := meta(RoleExtensionAPIServerAuthenticationReader)
	reader.Namespace = metav1.NamespaceSystem
	return []*rbacv1.Role{{ObjectMeta: reader, Rules: []rbacv1.PolicyRule{
		{Verbs: v("get", "list", "watch"), APIGroups: g(legacyGroup), Resources: []string{"configmaps"}, ResourceNames: []string{ExtensionAPIServerAuthentication}},
	}}}
}

// ClusterRoleBindings returns the bootstrap cluster role bindings. Each
// controller role is bound, as in Kubernetes, to the controller's service
// account in kube-system, and also to system:kube-controller-manager:
// Glassplane runs its controllers with the controller manager's own
// credentials (Kubernetes' --use-service-account-credentials=false), so that
// identity must hold every controller's rights.
func ClusterRoleBindings() []*rbacv1.ClusterRoleBinding {
	bind := func(name string, subjects ...rbacv1.Subject) *rbacv1.ClusterRoleBinding {
		return &rbacv1.ClusterRoleBinding{
			ObjectMeta: meta(name),
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacGroup, Kind: "ClusterRole", Name: name},
			Subjects:   subjects,
		}
	}
	group := func(name string) rbacv1.Subject {
		return rbacv1.Subject{Kind: rbacv1.GroupKind, APIGroup: rbacGroup, Name: name}
	}
	user := func(name string) rbacv1.Subject {
		return rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacGroup, Name: name}
	}
	bindings := []*rbacv1.ClusterRoleBinding{
		bind("cluster-admin", group("system:masters")),
		bind("system:discovery", group("system:authenticated")),
		bind("system:basic-user", group("system:authenticated")),
		bind("system:public-info-viewer", group("system:authenticated"), group(GroupUnauthenticated)),
		bind("system:service-account-issuer-discovery", group("system:serviceaccounts")),
		bind("system:node"),
		bind("system:node-proxier", user(UserKubeProxy)),
		bind("system:kube-scheduler", user(UserKubeScheduler)),
		bind("system:volume-scheduler", user(UserKubeScheduler)),
		bind("system:kube-controller-manager", user(UserKubeControllerManager)),
		bind(UserDashboard, user(UserDashboard)),
		bind(RoleTempo, user(UserKubeScheduler), user(UserKubeControllerManager), group(GroupNodes)),
		bind(RoleLocalPathNode, group(GroupNodes)),
		bind(RoleCoreDNS, user(UserDNS)),
	}
	for _, r := range controllerRoles() {
		b := bind(r.Name,
			rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Namespace: "kube-system", Name: r.Name[len(ControllerRolePrefix):]},
			user(UserKubeControllerManager))
		bindings = append(bindings, b)
	}
	return bindings
}
