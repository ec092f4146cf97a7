package node

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"strings"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"
)

func testCertPEM(t *testing.T, cn string) string {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: cn}, NotBefore: time.Now(), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
}

// TestTrustBundleFile projects ClusterTrustBundles as the kubelet does: by
// name, by signer and labels (deduplicated), optional and not.
func TestTrustBundleFile(t *testing.T) {
	a, b := testCertPEM(t, "a"), testCertPEM(t, "b")
	client := fake.NewSimpleClientset(
		&certificatesv1.ClusterTrustBundle{ObjectMeta: metav1.ObjectMeta{Name: "example.com:signer:one", Labels: map[string]string{"team": "x"}},
			Spec: certificatesv1.ClusterTrustBundleSpec{SignerName: "example.com/signer", TrustBundle: a + b}},
		&certificatesv1.ClusterTrustBundle{ObjectMeta: metav1.ObjectMeta{Name: "example.com:signer:two", Labels: map[string]string{"team": "x"}},
			Spec: certificatesv1.ClusterTrustBundleSpec{SignerName: "example.com/signer", TrustBundle: b}},
		&certificatesv1.ClusterTrustBundle{ObjectMeta: metav1.ObjectMeta{Name: "plain"}, Spec: certificatesv1.ClusterTrustBundleSpec{TrustBundle: a}},
	)
	ag := &Agent{client: client}
	ctx := context.Background()
	count := func(files []volumeFile) int { return strings.Count(string(files[0].data), "BEGIN CERTIFICATE") }

	files, err := ag.trustBundleFile(ctx, &corev1.ClusterTrustBundleProjection{Name: ptr.To("plain"), Path: "ca.pem"}, 0o644)
	if err != nil || len(files) != 1 || files[0].path != "ca.pem" || count(files) != 1 {
		t.Fatalf("by name: %v, %+v", err, files)
	}
	files, err = ag.trustBundleFile(ctx, &corev1.ClusterTrustBundleProjection{SignerName: ptr.To("example.com/signer"),
		LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"team": "x"}}, Path: "s.pem"}, 0o644)
	if err != nil || count(files) != 2 {
		t.Fatalf("by signer: %v, %d certificates, want a and b once each", err, count(files))
	}
	if _, err := ag.trustBundleFile(ctx, &corev1.ClusterTrustBundleProjection{SignerName: ptr.To("example.com/signer"), Path: "s.pem"}, 0o644); err == nil ||
		!strings.Contains(err.Error(), "matched zero ClusterTrustBundles") {
		t.Errorf("a nil selector matches nothing: %v", err)
	}
	files, err = ag.trustBundleFile(ctx, &corev1.ClusterTrustBundleProjection{Name: ptr.To("missing"), Optional: ptr.To(true), Path: "m.pem"}, 0o644)
	if err != nil || len(files) != 1 || len(files[0].data) != 0 {
		t.Errorf("optional and missing: %v, %+v", err, files)
	}
	if _, err := ag.trustBundleFile(ctx, &corev1.ClusterTrustBundleProjection{Name: ptr.To("missing"), Path: "m.pem"}, 0o644); err == nil {
		t.Error("a missing bundle that is not optional was projected")
	}
}
