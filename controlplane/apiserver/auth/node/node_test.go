package node

import (
	"context"
	"slices"
	"strings"
	"testing"

	certificatesv1 "k8s.io/api/certificates/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/glassplane/glassplane/controlplane/apiserver/admission"
	"github.com/glassplane/glassplane/controlplane/apiserver/auth"
)

// fakePods is a Graph over a list of pods.
type fakePods []*corev1.Pod

func (f fakePods) Related(_ context.Context, nodeName, namespace, resource, name string) (bool, error) {
	for _, p := range f {
		if p.Spec.NodeName == nodeName && p.Namespace == namespace && slices.Contains(References(p, resource), name) {
			return true, nil
		}
	}
	return false, nil
}

func TestIdentity(t *testing.T) {
	tests := []struct {
		user     *auth.User
		wantName string
		wantNode bool
	}{
		{&auth.User{Name: "system:node:n1", Groups: []string{GroupNodes}}, "n1", true},
		{&auth.User{Name: "kubelet", Groups: []string{GroupNodes}}, "", true},
		{&auth.User{Name: "system:node:n1"}, "", false},
		{nil, "", false},
	}
	for _, tc := range tests {
		name, isNode := Identity(tc.user)
		if name != tc.wantName || isNode != tc.wantNode {
			t.Errorf("Identity(%+v) = %q, %v", tc.user, name, isNode)
		}
	}
}

func TestAuthorizer(t *testing.T) {
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"}, Spec: corev1.PodSpec{
		NodeName: "n1",
		Volumes:  []corev1.Volume{{Name: "v", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cm"}}}}},
		Containers: []corev1.Container{{Name: "c", Env: []corev1.EnvVar{{Name: "E", ValueFrom: &corev1.EnvVarSource{
			SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "s"}, Key: "k"}}}}}},
	}}
	a := NewAuthorizer(fakePods{pod})
	n1 := &auth.User{Name: "system:node:n1", Groups: []string{GroupNodes, auth.GroupAuthenticated}}
	n2 := &auth.User{Name: "system:node:n2", Groups: []string{GroupNodes, auth.GroupAuthenticated}}
	res := func(u *auth.User, verb, group, resource, sub, ns, name string) auth.Attributes {
		return auth.Attributes{User: u, Verb: verb, ResourceRequest: true, APIGroup: group, Resource: resource, Subresource: sub, Namespace: ns, Name: name}
	}
	tests := []struct {
		name       string
		attrs      auth.Attributes
		want       bool
		wantReason string
	}{
		{"secret its pod uses", res(n1, "get", "", "secrets", "", "ns", "s"), true, ""},
		{"configmap its pod uses", res(n1, "watch", "", "configmaps", "", "ns", "cm"), true, ""},
		{"another node's secret", res(n2, "get", "", "secrets", "", "ns", "s"), false, "no relationship found between node 'n2' and this object"},
		{"listing secrets", res(n1, "list", "", "secrets", "", "ns", ""), false, "No Object name found"},
		{"writing secrets", res(n1, "update", "", "secrets", "", "ns", "s"), false, "can only read resources of this type"},
		{"own lease", res(n1, "update", "coordination.k8s.io", "leases", "", "kube-node-lease", "n1"), true, ""},
		{"another lease", res(n1, "update", "coordination.k8s.io", "leases", "", "kube-node-lease", "n2"), false, "can only access node lease with the same name as the requesting node"},
		{"lease elsewhere", res(n1, "get", "coordination.k8s.io", "leases", "", "default", "n1"), false, `can only access leases in the "kube-node-lease" system namespace`},
		{"pod status", res(n1, "patch", "", "pods", "status", "ns", "p"), true, ""},
		{"watch pods", res(n1, "watch", "", "pods", "", "", ""), true, ""},
		{"register a node", res(n1, "create", "", "nodes", "", "", ""), true, ""},
		{"events", res(n1, "create", "", "events", "", "ns", ""), true, ""},
		{"no deployments", res(n1, "list", "apps", "deployments", "", "ns", ""), false, ""},
		{"not a node", res(&auth.User{Name: "alice"}, "get", "", "pods", "", "ns", "p"), false, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d, reason, err := a.Authorize(context.Background(), tc.attrs)
			if err != nil {
				t.Fatal(err)
			}
			if (d == auth.DecisionAllow) != tc.want || reason != tc.wantReason {
				t.Errorf("decision %v reason %q, want allowed=%v reason %q", d, reason, tc.want, tc.wantReason)
			}
		})
	}
}

// TestRestrictionOfNodes covers what a node may change on its own Node:
// not its taints once registered, and no label in the kubernetes.io and
// k8s.io domains beyond the kubelet's own, nor in node-restriction.kubernetes.io.
func TestRestrictionOfNodes(t *testing.T) {
	labelled := func(labels ...string) *corev1.Node {
		n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1", Labels: map[string]string{}}}
		for i := 0; i+1 < len(labels); i += 2 {
			n.Labels[labels[i]] = labels[i+1]
		}
		return n
	}
	tainted := func(taints ...corev1.Taint) *corev1.Node {
		n := labelled()
		n.Spec.Taints = taints
		return n
	}
	kubelet := labelled("kubernetes.io/hostname", "n1", "kubernetes.io/os", "linux", "kubernetes.io/arch", "amd64",
		"beta.kubernetes.io/os", "linux", "beta.kubernetes.io/arch", "amd64", "node.glassplane.io/runtime", "simulated")
	noSchedule := corev1.Taint{Key: "dedicated", Value: "gpu", Effect: corev1.TaintEffectNoSchedule}
	nodes := corev1.SchemeGroupVersion.WithResource("nodes")
	create := func(n *corev1.Node) admission.Attributes {
		return admission.Attributes{Operation: admission.Create, Resource: nodes, Name: "n1", Object: n}
	}
	update := func(old, n *corev1.Node) admission.Attributes {
		return admission.Attributes{Operation: admission.Update, Resource: nodes, Name: "n1", Object: n, OldObject: old}
	}
	status := func(old, n *corev1.Node) admission.Attributes {
		a := update(old, n)
		a.Subresource = "status"
		return a
	}
	tests := []struct {
		name    string
		attrs   admission.Attributes
		wantErr string
	}{
		{"register with the kubelet's labels", create(kubelet), ""},
		{"register with taints", create(tainted(noSchedule)), ""},
		{"register with kubelet and node domains", create(labelled("kubelet.kubernetes.io/x", "1", "a.node.kubernetes.io/y", "2", "topology.kubernetes.io/zone", "z")), ""},
		{"register with a node-restriction label", create(labelled("node-restriction.kubernetes.io/foo", "bar")),
			`nodes "n1" is forbidden: node "n1" is not allowed to set the following labels: node-restriction.kubernetes.io/foo`},
		{"register with restricted labels, listed sorted", create(labelled("node-role.kubernetes.io/control-plane", "", "a.node-restriction.kubernetes.io/x", "y", "example.k8s.io/z", "1")),
			`nodes "n1" is forbidden: node "n1" is not allowed to set the following labels: a.node-restriction.kubernetes.io/x, example.k8s.io/z, node-role.kubernetes.io/control-plane`},
		{"status update leaving all as it was", status(kubelet, kubelet), ""},
		{"add a label of its own domain", update(labelled(), labelled("example.com/foo", "bar")), ""},
		{"add a kubelet label", update(labelled(), labelled("kubernetes.io/hostname", "n1")), ""},
		{"add a node-restriction label", update(labelled(), labelled("node-restriction.kubernetes.io/foo", "bar")),
			`nodes "n1" is forbidden: is not allowed to modify labels: node-restriction.kubernetes.io/foo`},
		{"add the control-plane role", update(labelled(), labelled("node-role.kubernetes.io/control-plane", "")),
			`nodes "n1" is forbidden: is not allowed to modify labels: node-role.kubernetes.io/control-plane`},
		{"remove a restricted label an admin set", update(labelled("node-role.kubernetes.io/worker", ""), labelled()),
			`nodes "n1" is forbidden: is not allowed to modify labels: node-role.kubernetes.io/worker`},
		{"keep a restricted label an admin set", update(labelled("node-role.kubernetes.io/worker", ""), labelled("node-role.kubernetes.io/worker", "", "example.com/a", "b")), ""},
		{"change a restricted label through status", status(labelled("k8s.io/x", "1"), labelled("k8s.io/x", "2")),
			`nodes "n1" is forbidden: is not allowed to modify labels: k8s.io/x`},
		{"add a taint", update(tainted(), tainted(noSchedule)), `nodes "n1" is forbidden: node "n1" is not allowed to modify taints`},
		{"remove a taint", update(tainted(noSchedule), tainted()), `nodes "n1" is forbidden: node "n1" is not allowed to modify taints`},
		{"keep its taints", update(tainted(noSchedule), tainted(noSchedule)), ""},
		{"update without the old node", admission.Attributes{Operation: admission.Update, Resource: nodes, Name: "n1", Object: labelled()},
			`nodes "n1" is forbidden: unexpected type *v1.Node`},
		{"delete itself", admission.Attributes{Operation: admission.Delete, Resource: nodes, Name: "n1", OldObject: kubelet}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.attrs.UserName, tc.attrs.UserGroups = "system:node:n1", []string{GroupNodes}
			err := NewRestriction(nil).Validate(context.Background(), &tc.attrs)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.wantErr != "" && (!apierrors.IsForbidden(err) || err.Error() != tc.wantErr):
				t.Fatalf("err = %v, want %s", err, tc.wantErr)
			}
		})
	}
}

func TestRestriction(t *testing.T) {
	bound := func(node string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", Labels: map[string]string{"a": "b"}}, Spec: corev1.PodSpec{NodeName: node}}
	}
	relabelled := bound("n1")
	relabelled.Labels = map[string]string{"a": "c"}
	pods := corev1.SchemeGroupVersion.WithResource("pods")
	nodes := corev1.SchemeGroupVersion.WithResource("nodes")
	leases := coordinationv1.SchemeGroupVersion.WithResource("leases")
	tests := []struct {
		name    string
		attrs   admission.Attributes
		wantErr string
	}{
		{"own pod status", admission.Attributes{Operation: admission.Update, Resource: pods, Subresource: "status", Name: "p", Object: bound("n1"), OldObject: bound("n1")}, ""},
		{"another node's pod status", admission.Attributes{Operation: admission.Update, Resource: pods, Subresource: "status", Name: "p", Object: bound("n2"), OldObject: bound("n2")},
			`pods "p" is forbidden: node "n1" can only update pod status for pods with spec.nodeName set to itself`},
		{"labels through status", admission.Attributes{Operation: admission.Update, Resource: pods, Subresource: "status", Name: "p", Object: relabelled, OldObject: bound("n1")},
			`pods "p" is forbidden: node "n1" cannot update labels through pod status`},
		{"delete own pod", admission.Attributes{Operation: admission.Delete, Resource: pods, Name: "p", OldObject: bound("n1")}, ""},
		{"delete another node's pod", admission.Attributes{Operation: admission.Delete, Resource: pods, Name: "p", OldObject: bound("n2")},
			`pods "p" is forbidden: node "n1" can only delete pods with spec.nodeName set to itself`},
		{"update a pod", admission.Attributes{Operation: admission.Update, Resource: pods, Name: "p", Object: bound("n1"), OldObject: bound("n1")},
			`pods "p" is forbidden: unexpected operation "UPDATE", node "n1" can only create and delete mirror pods`},
		{"create a pod", admission.Attributes{Operation: admission.Create, Resource: pods, Name: "p", Object: bound("n1")},
			`pods "p" is forbidden: pod does not have "kubernetes.io/config.mirror" annotation, node "n1" can only create mirror pods`},
		{"own node", admission.Attributes{Operation: admission.Update, Resource: nodes, Name: "n1", Object: &corev1.Node{}, OldObject: &corev1.Node{}}, ""},
		{"another node", admission.Attributes{Operation: admission.Update, Resource: nodes, Subresource: "status", Name: "n2", Object: &corev1.Node{}},
			`nodes "n2" is forbidden: node "n1" is not allowed to modify node "n2"`},
		{"own lease", admission.Attributes{Operation: admission.Create, Resource: leases, Namespace: "kube-node-lease", Name: "n1"}, ""},
		{"another lease", admission.Attributes{Operation: admission.Create, Resource: leases, Namespace: "kube-node-lease", Name: "n2"},
			`leases.coordination.k8s.io "n2" is forbidden: can only access node lease with the same name as the requesting node`},
		{"configmaps pass", admission.Attributes{Operation: admission.Create, Resource: corev1.SchemeGroupVersion.WithResource("configmaps"), Name: "c"}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.attrs.UserName, tc.attrs.UserGroups = "system:node:n1", []string{GroupNodes}
			err := NewRestriction(nil).Validate(context.Background(), &tc.attrs)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.wantErr != "" && (!apierrors.IsForbidden(err) || err.Error() != tc.wantErr):
				t.Fatalf("err = %v, want %s", err, tc.wantErr)
			}
		})
	}
	t.Run("other users pass", func(t *testing.T) {
		a := admission.Attributes{Operation: admission.Update, Resource: nodes, Name: "n2", UserName: "alice"}
		if err := NewRestriction(nil).Validate(context.Background(), &a); err != nil {
			t.Error(err)
		}
	})
}

// fakeObjects is Objects over fixed objects.
type fakeObjects struct {
	nodes map[string]*corev1.Node
	pods  map[string]*corev1.Pod
	sas   map[string]*corev1.ServiceAccount
}

func notFound(resource, name string) error {
	return apierrors.NewNotFound(corev1.Resource(resource), name)
}

func (f fakeObjects) Node(_ context.Context, name string) (*corev1.Node, error) {
	if n, ok := f.nodes[name]; ok {
		return n, nil
	}
	return nil, notFound("nodes", name)
}

func (f fakeObjects) Pod(_ context.Context, namespace, name string) (*corev1.Pod, error) {
	if p, ok := f.pods[namespace+"/"+name]; ok {
		return p, nil
	}
	return nil, notFound("pods", name)
}

func (f fakeObjects) ServiceAccount(_ context.Context, namespace, name string) (*corev1.ServiceAccount, error) {
	if sa, ok := f.sas[namespace+"/"+name]; ok {
		return sa, nil
	}
	return nil, notFound("serviceaccounts", name)
}

// TestRestrictionPodCertificateRequests: a node may create a
// PodCertificateRequest only in its own name and node UID, for a pod bound
// to it (not a mirror pod) under the pod's service account, UIDs matching;
// a UID a cache could lag on is refused without Forbidden (the node tries
// again), the rest is Forbidden; a request is never updated by a node.
func TestRestrictionPodCertificateRequests(t *testing.T) {
	objects := fakeObjects{
		nodes: map[string]*corev1.Node{"n1": {ObjectMeta: metav1.ObjectMeta{Name: "n1", UID: "node-uid"}}},
		pods: map[string]*corev1.Pod{
			"ns/web":    {ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", UID: "pod-uid"}, Spec: corev1.PodSpec{NodeName: "n1", ServiceAccountName: "app"}},
			"ns/other":  {ObjectMeta: metav1.ObjectMeta{Name: "other", Namespace: "ns", UID: "other-uid"}, Spec: corev1.PodSpec{NodeName: "n2", ServiceAccountName: "app"}},
			"ns/mirror": {ObjectMeta: metav1.ObjectMeta{Name: "mirror", Namespace: "ns", UID: "mirror-uid", Annotations: map[string]string{mirrorPodAnnotation: "x"}}, Spec: corev1.PodSpec{NodeName: "n1"}},
		},
		sas: map[string]*corev1.ServiceAccount{"ns/app": {ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: "ns", UID: "sa-uid"}}},
	}
	pcrs := certificatesv1.SchemeGroupVersion.WithResource("podcertificaterequests")
	req := func(mutate func(*certificatesv1.PodCertificateRequestSpec)) *certificatesv1.PodCertificateRequest {
		r := &certificatesv1.PodCertificateRequest{ObjectMeta: metav1.ObjectMeta{Namespace: "ns"}, Spec: certificatesv1.PodCertificateRequestSpec{
			SignerName: "example.com/s", PodName: "web", PodUID: "pod-uid", ServiceAccountName: "app", ServiceAccountUID: "sa-uid", NodeName: "n1", NodeUID: "node-uid",
		}}
		if mutate != nil {
			mutate(&r.Spec)
		}
		return r
	}
	tests := []struct {
		name      string
		op        admission.Operation
		obj       *certificatesv1.PodCertificateRequest
		wantErr   string
		forbidden bool
	}{
		{"for its own pod", admission.Create, req(nil), "", false},
		{"in another node's name", admission.Create, req(func(s *certificatesv1.PodCertificateRequestSpec) { s.NodeName = "n2" }),
			`PodCertificateRequest.Spec.NodeName="n2", which is not the requesting node "n1"`, true},
		{"with another node UID", admission.Create, req(func(s *certificatesv1.PodCertificateRequestSpec) { s.NodeUID = "stale" }),
			`PodCertificateRequest for pod "ns/web" names node UID "stale", inconsistent with the running node ("node-uid")`, false},
		{"for a pod on another node", admission.Create, req(func(s *certificatesv1.PodCertificateRequestSpec) { s.PodName, s.PodUID = "other", "other-uid" }),
			`pod "ns/other" is not running on node "n1" named in the PodCertificateRequest`, true},
		{"for a missing pod", admission.Create, req(func(s *certificatesv1.PodCertificateRequestSpec) { s.PodName = "gone" }),
			`while retrieving pod "ns/gone" named in the PodCertificateRequest`, false},
		{"for a mirror pod", admission.Create, req(func(s *certificatesv1.PodCertificateRequestSpec) {
			s.PodName, s.PodUID, s.ServiceAccountName = "mirror", "mirror-uid", ""
		}),
			`pod "ns/mirror" is a mirror pod`, true},
		{"under another service account", admission.Create, req(func(s *certificatesv1.PodCertificateRequestSpec) { s.ServiceAccountName = "admin" }),
			`contains serviceAccountName ("admin") that differs from running pod ("app")`, true},
		{"with a stale service account UID", admission.Create, req(func(s *certificatesv1.PodCertificateRequestSpec) { s.ServiceAccountUID = "old" }),
			`contains serviceAccountUID ("old") that differs from the service account ("sa-uid")`, false},
		{"an update", admission.Update, req(nil), "unexpected operation UPDATE", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := admission.Attributes{Operation: tc.op, Resource: pcrs, Namespace: "ns", Object: tc.obj, UserName: "system:node:n1", UserGroups: []string{GroupNodes}}
			err := NewRestriction(objects).Validate(context.Background(), &a)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.wantErr == "":
			case err == nil || !strings.Contains(err.Error(), tc.wantErr):
				t.Fatalf("err = %v, want %q", err, tc.wantErr)
			case apierrors.IsForbidden(err) != tc.forbidden:
				t.Fatalf("err = %v: forbidden %v, want %v", err, apierrors.IsForbidden(err), tc.forbidden)
			}
		})
	}
}
