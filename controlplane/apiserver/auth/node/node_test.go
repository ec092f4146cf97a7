package node

import (
	"context"
	"slices"
	"testing"

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
			err := NewRestriction().Validate(context.Background(), &tc.attrs)
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
			err := NewRestriction().Validate(context.Background(), &tc.attrs)
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
		if err := NewRestriction().Validate(context.Background(), &a); err != nil {
			t.Error(err)
		}
	})
}
