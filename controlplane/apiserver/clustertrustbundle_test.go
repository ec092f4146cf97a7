package apiserver_test

import (
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
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func testCAPEM(t *testing.T, cn string, isCA bool) string {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: cn}, NotBefore: time.Now(), NotAfter: time.Now().Add(time.Hour),
		IsCA: isCA, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
}

// TestClusterTrustBundleValidation: kube-apiserver's rules for
// ClusterTrustBundles (a signer's bundles are named after it, "test.test:
// signer-one:0" is valid) and the spec.signerName field selector the
// kubelet lists them by.
func TestClusterTrustBundleValidation(t *testing.T) {
	ctx := ctxT(t)
	ctbs := shared.client.CertificatesV1().ClusterTrustBundles()
	ca, other := testCAPEM(t, "one", true), testCAPEM(t, "two", true)
	bundle := func(name, signer, pemText string) *certificatesv1.ClusterTrustBundle {
		return &certificatesv1.ClusterTrustBundle{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: certificatesv1.ClusterTrustBundleSpec{SignerName: signer, TrustBundle: pemText}}
	}
	for _, b := range []*certificatesv1.ClusterTrustBundle{
		bundle("test.test:signer-one:0", "test.test/signer-one", ca),
		bundle("test.test:signer-one:1", "test.test/signer-one", ca+other),
		bundle("no-signer-ctb", "", ca),
	} {
		if _, err := ctbs.Create(ctx, b, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create %s: %v", b.Name, err)
		}
		t.Cleanup(func() { ctbs.Delete(ctx, b.Name, metav1.DeleteOptions{}) })
	}
	list, err := ctbs.List(ctx, metav1.ListOptions{FieldSelector: "spec.signerName=test.test/signer-one"})
	if err != nil || len(list.Items) != 2 {
		t.Fatalf("list by signerName: %v, %d items", err, len(list.Items))
	}

	for _, tc := range []struct {
		name string
		b    *certificatesv1.ClusterTrustBundle
		want string
	}{
		{"no signer, a colon", bundle("a:b", "", ca), `metadata.name: Invalid value: "a:b": ClusterTrustBundle without signer name must not have ":" in its name`},
		{"signer, wrong prefix", bundle("other:0", "test.test/signer-one", ca), `ClusterTrustBundle for signerName test.test/signer-one must be named with prefix test.test:signer-one:`},
		{"signer not a domain and path", bundle("nodomain:0", "nodomain", ca), `spec.signerName: Invalid value: "nodomain": must be a fully qualified domain and path of the form 'example.com/signer-name'`},
		{"empty bundle", bundle("empty", "", ""), `spec.trustBundle: Invalid value: "<value omitted>": at least one trust anchor must be provided`},
		{"not a CA", bundle("leaf", "", testCAPEM(t, "leaf", false)), "entry 0 does not have the CA bit set"},
		{"a key, not a certificate", bundle("key", "", "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n"), "entry 0 has bad block type: PRIVATE KEY"},
		{"the same anchor twice", bundle("twice", "", ca+ca), "duplicate trust anchor (indices [0 1])"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ctbs.Create(ctx, tc.b, metav1.CreateOptions{})
			if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("create: %v, want a 422 with %q", err, tc.want)
			}
		})
	}

	cur, err := ctbs.Get(ctx, "no-signer-ctb", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cur.Spec.SignerName = "test.test/signer-one"
	if _, err := ctbs.Update(ctx, cur, metav1.UpdateOptions{}); !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec.signerName: Invalid value: \"test.test/signer-one\": field is immutable") {
		t.Errorf("changing the signer: %v, want 422 field is immutable", err)
	}
}
