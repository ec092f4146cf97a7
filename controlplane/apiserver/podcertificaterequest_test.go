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

// TestPodCertificateRequest: certificates.k8s.io/v1 PodCertificateRequests
// are served with upstream's rules: a signed stub request for a supported
// key, a default lifetime of a day within [1h, 91d], an immutable spec, and
// a status that a signer sets once, with a chain whose leaf's validity the
// status repeats.
func TestPodCertificateRequest(t *testing.T) {
	ctx := ctxT(t)
	ns := shared.namespace(t)
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	csr, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{Subject: pkix.Name{CommonName: "pod"}}, key)
	if err != nil {
		t.Fatal(err)
	}
	pcrs := shared.client.CertificatesV1().PodCertificateRequests(ns)
	spec := certificatesv1.PodCertificateRequestSpec{
		SignerName: "example.com/spiffe", PodName: "web", PodUID: "pod-uid", ServiceAccountName: "default", ServiceAccountUID: "sa-uid",
		NodeName: "node-1", NodeUID: "node-uid", StubPKCS10Request: csr,
	}
	r, err := pcrs.Create(ctx, &certificatesv1.PodCertificateRequest{ObjectMeta: metav1.ObjectMeta{GenerateName: "web-"}, Spec: spec}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, sel := range []string{"spec.signerName=example.com/spiffe", "spec.podName=web", "spec.nodeName=node-1"} {
		list, err := pcrs.List(ctx, metav1.ListOptions{FieldSelector: sel})
		if err != nil || len(list.Items) != 1 {
			t.Errorf("list by %s: %v %v", sel, list, err)
		}
	}
	if list, err := pcrs.List(ctx, metav1.ListOptions{FieldSelector: "spec.signerName=example.com/other"}); err != nil || len(list.Items) != 0 {
		t.Errorf("list by another signer: %v %v", list, err)
	}
	if r.Spec.MaxExpirationSeconds == nil || *r.Spec.MaxExpirationSeconds != 86400 {
		t.Errorf("default maxExpirationSeconds %v", r.Spec.MaxExpirationSeconds)
	}
	r.Spec.PodName = "other"
	if _, err := pcrs.Update(ctx, r, metav1.UpdateOptions{}); !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec: Invalid value") {
		t.Errorf("changing the spec: %v", err)
	}
	r.Spec.PodName = "web"

	now := time.Now().Truncate(time.Second)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "pod"}, NotBefore: now, NotAfter: now.Add(24 * time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	chain := string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
	notBefore, notAfter, refresh := metav1.NewTime(now), metav1.NewTime(now.Add(24*time.Hour)), metav1.NewTime(now.Add(12*time.Hour))
	r.Status = certificatesv1.PodCertificateRequestStatus{
		CertificateChain: chain, NotBefore: &notBefore, NotAfter: &notAfter, BeginRefreshAt: &refresh,
		Conditions: []metav1.Condition{{Type: certificatesv1.PodCertificateRequestConditionTypeIssued, Status: metav1.ConditionTrue, Reason: "Issued", LastTransitionTime: metav1.Now()}},
	}
	wrong := r.DeepCopy()
	wrongAfter := metav1.NewTime(now.Add(time.Hour))
	wrong.Status.NotAfter = &wrongAfter
	if _, err := pcrs.UpdateStatus(ctx, wrong, metav1.UpdateOptions{}); !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "status.notAfter: Invalid value") {
		t.Errorf("a notAfter that is not the leaf's: %v", err)
	}
	issued, err := pcrs.UpdateStatus(ctx, r, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	issued.Status.Conditions = append(issued.Status.Conditions, metav1.Condition{Type: certificatesv1.PodCertificateRequestConditionTypeDenied, Status: metav1.ConditionTrue, Reason: "Late", LastTransitionTime: metav1.Now()})
	if _, err := pcrs.UpdateStatus(ctx, issued, metav1.UpdateOptions{}); !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "status: Forbidden") {
		t.Errorf("changing an issued request's status: %v", err)
	}

	short := int32(600)
	for _, tc := range []struct {
		edit func(*certificatesv1.PodCertificateRequestSpec)
		want string
	}{
		{func(s *certificatesv1.PodCertificateRequestSpec) { s.StubPKCS10Request = []byte("not a request") }, "spec.stubPKCS10Request: Invalid value"},
		{func(s *certificatesv1.PodCertificateRequestSpec) { s.MaxExpirationSeconds = &short }, "spec.maxExpirationSeconds: Invalid value: 600: if provided, maxExpirationSeconds must be >= 3600"},
		{func(s *certificatesv1.PodCertificateRequestSpec) { s.PodUID = "" }, "spec.podUID: Required value"},
	} {
		bad := spec
		tc.edit(&bad)
		_, err := pcrs.Create(ctx, &certificatesv1.PodCertificateRequest{ObjectMeta: metav1.ObjectMeta{GenerateName: "bad-"}, Spec: bad}, metav1.CreateOptions{})
		if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v, want 422 %q", err, tc.want)
		}
	}
}
