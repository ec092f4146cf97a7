package apiserver_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"strings"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/glassplane/glassplane/controlplane/apiserver"
)

// TestBoundServiceAccountToken: a TokenRequest bound to a pod gives a
// token that a TokenReview reports with kube-apiserver's extra keys (the
// jti as credential-id, the pod and its node), and that stops working when
// the pod goes; bad bindings get kube-apiserver's 400 and 409; a node asks
// only for tokens bound to its own pods (NodeRestriction).
func TestBoundServiceAccountToken(t *testing.T) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	env := newEnvWith(t, func(c *apiserver.Config) { c.ServiceAccountKey, c.RBAC = key, true })
	ctx := ctxT(t)
	ns := env.namespace(t)
	admin := env.client
	for _, sa := range []string{"robot", "default"} {
		if _, err := admin.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: sa}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	node, err := admin.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "bound-1"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	pods := map[string]*corev1.Pod{}
	for _, p := range []struct{ name, sa, node string }{{"web", "robot", "bound-1"}, {"elsewhere", "robot", "bound-2"}, {"plain", "default", "bound-1"}} {
		pod := testPod(p.name)
		pod.Spec.ServiceAccountName, pod.Spec.NodeName = p.sa, p.node
		if pods[p.name], err = admin.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	request := func(c kubernetes.Interface, sa string, ref *authenticationv1.BoundObjectReference) (string, error) {
		tr, err := c.CoreV1().ServiceAccounts(ns).CreateToken(ctx, sa, &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{BoundObjectRef: ref}}, metav1.CreateOptions{})
		if err != nil {
			return "", err
		}
		return tr.Status.Token, nil
	}
	podRef := func(name string) *authenticationv1.BoundObjectReference {
		return &authenticationv1.BoundObjectReference{APIVersion: "v1", Kind: "Pod", Name: name, UID: pods[name].UID}
	}
	review := func(token string) *authenticationv1.TokenReview {
		t.Helper()
		r, err := admin.AuthenticationV1().TokenReviews().Create(ctx, &authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: token}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return r
	}

	token, err := request(admin, "robot", podRef("web"))
	if err != nil {
		t.Fatal(err)
	}
	r := review(token)
	if !r.Status.Authenticated || r.Status.User.Username != "system:serviceaccount:"+ns+":robot" {
		t.Fatalf("review %+v", r.Status)
	}
	extra := r.Status.User.Extra
	if id := extra["authentication.kubernetes.io/credential-id"]; len(id) != 1 || !strings.HasPrefix(id[0], "JTI=") {
		t.Errorf("credential-id %v", id)
	}
	for k, want := range map[string]string{
		"authentication.kubernetes.io/pod-name": "web", "authentication.kubernetes.io/pod-uid": string(pods["web"].UID),
		"authentication.kubernetes.io/node-name": "bound-1", "authentication.kubernetes.io/node-uid": string(node.UID),
	} {
		if got := extra[k]; len(got) != 1 || got[0] != want {
			t.Errorf("extra %s = %v, want [%s]", k, got, want)
		}
	}

	_, err = request(admin, "robot", &authenticationv1.BoundObjectReference{APIVersion: "v1", Kind: "ConfigMap", Name: "x"})
	if !apierrors.IsBadRequest(err) || !strings.Contains(err.Error(), "cannot bind token to object of type /v1, Kind=ConfigMap") {
		t.Errorf("bound to a ConfigMap: %v", err)
	}
	_, err = request(admin, "robot", &authenticationv1.BoundObjectReference{APIVersion: "v1", Kind: "Pod", Name: "web", UID: "not-its-uid"})
	if !apierrors.IsConflict(err) || !strings.Contains(err.Error(), "the UID in the bound object reference (not-its-uid) does not match the UID in record") {
		t.Errorf("bound with a stale UID: %v", err)
	}
	_, err = request(admin, "robot", podRef("plain"))
	if !apierrors.IsBadRequest(err) || !strings.Contains(err.Error(), `cannot bind token for serviceaccount "robot" to pod running with different serviceaccount name.`) {
		t.Errorf("bound to a pod of another service account: %v", err)
	}
	_, err = request(admin, "robot", &authenticationv1.BoundObjectReference{APIVersion: "v1", Kind: "Pod", Name: "missing"})
	if !apierrors.IsNotFound(err) {
		t.Errorf("bound to a missing pod: %v", err)
	}

	cfg, err := env.ca.RESTConfig(env.url, "system:node:bound-1", "system:nodes")
	if err != nil {
		t.Fatal(err)
	}
	nodeClient := kubernetes.NewForConfigOrDie(cfg)
	eventually(t, "the node to get its pod's token", func() bool {
		_, err := request(nodeClient, "robot", podRef("web"))
		return err == nil
	})
	_, err = request(nodeClient, "robot", nil)
	requireForbidden(t, err, `serviceaccounts "robot" is forbidden: node requested token not bound to a pod`)
	_, err = request(nodeClient, "robot", podRef("elsewhere"))
	requireForbidden(t, err, `serviceaccounts "robot" is forbidden: node requested token bound to a pod scheduled on a different node`)

	// PodCertificateRequests: the node reads its pod's service account
	// (Node authorizer) and asks for a certificate for its own pod
	// (RBAC and NodeRestriction), not for another node's.
	sa, err := nodeClient.CoreV1().ServiceAccounts(ns).Get(ctx, "robot", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the node reading its pod's service account: %v", err)
	}
	if _, err := nodeClient.CoreV1().ServiceAccounts(ns).Get(ctx, "unused", metav1.GetOptions{}); !apierrors.IsForbidden(err) {
		t.Errorf("the node reading a service account none of its pods uses: %v", err)
	}
	stub, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{}, key)
	if err != nil {
		t.Fatal(err)
	}
	pcr := func(pod string) *certificatesv1.PodCertificateRequest {
		return &certificatesv1.PodCertificateRequest{ObjectMeta: metav1.ObjectMeta{GenerateName: "req-"}, Spec: certificatesv1.PodCertificateRequestSpec{
			SignerName: "example.com/spiffe", PodName: pod, PodUID: pods[pod].UID, ServiceAccountName: "robot", ServiceAccountUID: sa.UID,
			NodeName: "bound-1", NodeUID: node.UID, StubPKCS10Request: stub,
		}}
	}
	if _, err := nodeClient.CertificatesV1().PodCertificateRequests(ns).Create(ctx, pcr("web"), metav1.CreateOptions{}); err != nil {
		t.Errorf("the node asking a certificate for its pod: %v", err)
	}
	_, err = nodeClient.CertificatesV1().PodCertificateRequests(ns).Create(ctx, pcr("elsewhere"), metav1.CreateOptions{})
	if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), `is forbidden: pod "`+ns+`/elsewhere" is not running on node "bound-1" named in the PodCertificateRequest`) {
		t.Errorf("the node asking a certificate for another node's pod: %v", err)
	}

	if err := admin.CoreV1().Pods(ns).Delete(ctx, "web", metav1.DeleteOptions{GracePeriodSeconds: new(int64(0))}); err != nil {
		t.Fatal(err)
	}
	if r := review(token); r.Status.Authenticated || !strings.Contains(r.Status.Error, "service account token has been invalidated") {
		t.Errorf("the token of a deleted pod: %+v", r.Status)
	}
}
