package node

import (
	"bytes"
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"log/slog"
	"math/big"
	"strings"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// TestPodCertificateProjection: a podCertificate source makes one
// PodCertificateRequest (owned by the pod, for its service account and the
// node, with a stub PKCS#10 request of the key type asked), waits without
// asking again until a signer issues it, and then gives the key and the
// chain; a denied request is said and the next sync asks anew.
func TestPodCertificateProjection(t *testing.T) {
	ctx := context.Background()
	client := fake.NewClientset(
		&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: testNode, UID: "node-uid"}},
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: "default", UID: "sa-uid"}},
	)
	// The API server names objects created with generateName; the fake
	// tracker does not.
	n := 0
	client.PrependReactor("create", "podcertificaterequests", func(action k8stesting.Action) (bool, kruntime.Object, error) {
		obj := action.(k8stesting.CreateAction).GetObject().(*certificatesv1.PodCertificateRequest)
		if obj.Name == "" {
			n++
			obj.Name = fmt.Sprintf("%s%d", obj.GenerateName, n)
		}
		return false, nil, nil
	})
	a, err := New(Config{NodeName: testNode, Runtime: simRuntime(), Simulated: true, Logger: slog.New(slog.DiscardHandler)}, client)
	if err != nil {
		t.Fatal(err)
	}
	pod := newPod("web", corev1.RestartPolicyAlways, "nginx")
	pod.Spec.ServiceAccountName = "app"
	w := newPodWorker(pod)
	src := &corev1.PodCertificateProjection{SignerName: "example.com/spiffe", KeyType: "ECDSAP256", CredentialBundlePath: "bundle.pem", KeyPath: "key.pem", CertificateChainPath: "chain.pem",
		UserAnnotations: map[string]string{"example.com/path": "/x"}}

	if _, err := a.podCertificateFiles(ctx, w, pod, "tls", 0, src, 0o644); err == nil || !strings.Contains(err.Error(), "is not issued yet") {
		t.Fatalf("before the signer answered: %v, want not issued yet", err)
	}
	if _, err := a.podCertificateFiles(ctx, w, pod, "tls", 0, src, 0o644); err == nil {
		t.Fatal("the second sync before the signer answered gave files")
	}
	list, err := client.CertificatesV1().PodCertificateRequests("default").List(ctx, metav1.ListOptions{})
	if err != nil || len(list.Items) != 1 {
		t.Fatalf("requests after two syncs: %v %v, want one", list, err)
	}
	req := list.Items[0]
	s := req.Spec
	if s.SignerName != src.SignerName || s.PodName != "web" || s.PodUID != pod.UID || s.ServiceAccountName != "app" || s.ServiceAccountUID != "sa-uid" ||
		s.NodeName != testNode || s.NodeUID != "node-uid" || s.UnverifiedUserAnnotations["example.com/path"] != "/x" ||
		len(req.OwnerReferences) != 1 || req.OwnerReferences[0].UID != pod.UID || req.GenerateName != "req-" {
		t.Fatalf("request %+v", req)
	}
	csr, err := x509.ParseCertificateRequest(s.StubPKCS10Request)
	if err != nil || csr.CheckSignature() != nil || csr.PublicKeyAlgorithm != x509.ECDSA {
		t.Fatalf("stub request: %v, %v", csr, err)
	}

	// The signer issues a certificate for the requested key.
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test-signer"}, NotBefore: time.Now(), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, caTmpl, caTmpl, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	caCert, err := x509.ParseCertificate(caDER)
	if err != nil {
		t.Fatal(err)
	}
	leaf := &x509.Certificate{SerialNumber: big.NewInt(2), NotBefore: time.Now(), NotAfter: time.Now().Add(time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, leaf, caCert, csr.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	chain := "junk\n" + string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der, Headers: map[string]string{"h": "v"}}))
	req.Status.Conditions = []metav1.Condition{{Type: certificatesv1.PodCertificateRequestConditionTypeIssued, Status: metav1.ConditionTrue, Reason: "Issued", LastTransitionTime: metav1.Now()}}
	req.Status.CertificateChain = chain
	req.Status.BeginRefreshAt = &metav1.Time{Time: time.Now().Add(30 * time.Minute)}
	if _, err := client.CertificatesV1().PodCertificateRequests("default").UpdateStatus(ctx, &req, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	files, err := a.podCertificateFiles(ctx, w, pod, "tls", 0, src, 0o644)
	if err != nil || len(files) != 3 {
		t.Fatalf("after issuance: %v %v", files, err)
	}
	byPath := map[string][]byte{}
	for _, f := range files {
		byPath[f.path] = f.data
	}
	wantChain := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
	if !bytes.Equal(byPath["chain.pem"], wantChain) || !bytes.Equal(byPath["bundle.pem"], append(append([]byte{}, byPath["key.pem"]...), wantChain...)) {
		t.Fatalf("files %q", byPath)
	}
	block, _ := pem.Decode(byPath["key.pem"])
	key, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	signer, ok := key.(crypto.Signer)
	if err != nil || !ok || !signer.Public().(interface{ Equal(crypto.PublicKey) bool }).Equal(csr.PublicKey) {
		t.Fatalf("the key file does not hold the requested key: %v", err)
	}

	// A denied request is said; the next sync asks again.
	w2 := newPodWorker(pod)
	if _, err := a.podCertificateFiles(ctx, w2, pod, "tls", 0, src, 0o644); err == nil {
		t.Fatal("files before issuance")
	}
	denied, _ := client.CertificatesV1().PodCertificateRequests("default").Get(ctx, w2.podCerts["tls/0"].pendingRequest, metav1.GetOptions{})
	denied.Status.Conditions = []metav1.Condition{{Type: certificatesv1.PodCertificateRequestConditionTypeDenied, Status: metav1.ConditionTrue, Reason: "UnsupportedKeyType", Message: "use RSA", LastTransitionTime: metav1.Now()}}
	if _, err := client.CertificatesV1().PodCertificateRequests("default").UpdateStatus(ctx, denied, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := a.podCertificateFiles(ctx, w2, pod, "tls", 0, src, 0o644); err == nil || !strings.Contains(err.Error(), "was Denied: UnsupportedKeyType: use RSA") {
		t.Fatalf("after denial: %v", err)
	}
	if _, err := a.podCertificateFiles(ctx, w2, pod, "tls", 0, src, 0o644); err == nil || !strings.Contains(err.Error(), "is not issued yet") {
		t.Fatalf("the sync after a denial: %v, want a new request waiting", err)
	}
}
