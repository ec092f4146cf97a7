package apiserver

import (
	"context"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"

	certificatesv1 "k8s.io/api/certificates/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/glassplane/glassplane/controlplane/apiserver/admission"
)

// podCertificateRequestResource is certificates.k8s.io/v1
// PodCertificateRequest: a node's request, for one of its pods, that a
// signer issue a certificate for the key of the stub PKCS#10 request. The
// spec is immutable; the signer answers through /status (Issued, Denied
// or Failed, then no more changes). The node agent requests them for its
// pods' podCertificate projections (NodeRestriction checks the pod, node
// and service account named); Glassplane runs no signer of its own, so a
// request waits for the signer its signerName names.
func podCertificateRequestResource() *resource {
	return &resource{
		GVK: certificatesv1.SchemeGroupVersion.WithKind("PodCertificateRequest"), Resource: "podcertificaterequests", Singular: "podcertificaterequest",
		Namespaced: true, Verbs: verbsAll, StorageResource: "podcertificaterequests", HasStatus: true,
		Subresources: []*subresource{statusSubresource()},
		PrepareCreate: func(_ context.Context, obj runtime.Object) {
			r := obj.(*certificatesv1.PodCertificateRequest)
			r.Status = certificatesv1.PodCertificateRequestStatus{}
			if r.Spec.MaxExpirationSeconds == nil {
				secs := int32(admission.MaxKubernetesPodCertificateSecs)
				r.Spec.MaxExpirationSeconds = &secs
			}
		},
		Validate: validatePodCertificateRequest,
		// Signers watch the requests of their signerName, as upstream's.
		FieldLabels: func(obj runtime.Object) fields.Set {
			s := obj.(*certificatesv1.PodCertificateRequest).Spec
			return fields.Set{"spec.signerName": s.SignerName, "spec.podName": s.PodName, "spec.nodeName": string(s.NodeName)}
		},
	}
}

func validatePodCertificateRequest(_ context.Context, sub string, obj, old runtime.Object) field.ErrorList {
	r := obj.(*certificatesv1.PodCertificateRequest)
	prev, updating := old.(*certificatesv1.PodCertificateRequest)
	if !updating {
		errs := apimachineryvalidation.ValidateObjectMeta(&r.ObjectMeta, true, apimachineryvalidation.NameIsDNSSubdomain, field.NewPath("metadata"))
		return append(errs, validatePodCertificateRequestSpec(&r.Spec, field.NewPath("spec"))...)
	}
	errs := apimachineryvalidation.ValidateObjectMetaUpdate(&r.ObjectMeta, &prev.ObjectMeta, field.NewPath("metadata"))
	if sub == "status" {
		return append(errs, validatePodCertificateRequestStatus(r, prev)...)
	}
	if !apiequality.Semantic.DeepEqual(r.Spec, prev.Spec) {
		errs = append(errs, field.Invalid(field.NewPath("spec"), "", "field is immutable"))
	}
	return errs
}

// validatePodCertificateRequestSpec checks who the request is for, the
// lifetime, and that the stub request is a signed PKCS#10 request for a
// key of a supported type (its signature proves the node holds the key).
func validatePodCertificateRequestSpec(s *certificatesv1.PodCertificateRequestSpec, p *field.Path) field.ErrorList {
	var errs field.ErrorList
	if s.SignerName == "" {
		errs = append(errs, field.Required(p.Child("signerName"), ""))
	} else {
		for _, msg := range validation.IsQualifiedName(s.SignerName) {
			errs = append(errs, field.Invalid(p.Child("signerName"), s.SignerName, msg))
		}
	}
	for _, f := range []struct{ name, value string }{
		{"podName", s.PodName}, {"podUID", string(s.PodUID)}, {"serviceAccountName", s.ServiceAccountName},
		{"serviceAccountUID", string(s.ServiceAccountUID)}, {"nodeName", string(s.NodeName)}, {"nodeUID", string(s.NodeUID)},
	} {
		if f.value == "" {
			errs = append(errs, field.Required(p.Child(f.name), ""))
		}
	}
	errs = append(errs, admission.ValidatePodCertificateLifetime(s.SignerName, s.MaxExpirationSeconds, p.Child("maxExpirationSeconds"))...)
	stub := p.Child("stubPKCS10Request")
	csr, err := x509.ParseCertificateRequest(s.StubPKCS10Request)
	switch {
	case len(s.StubPKCS10Request) == 0:
		errs = append(errs, field.Required(stub, ""))
	case err != nil:
		errs = append(errs, field.Invalid(stub, "", "must be a DER-encoded PKCS#10 certificate request: "+err.Error()))
	case csr.CheckSignature() != nil:
		errs = append(errs, field.Invalid(stub, "", "the request's signature does not verify with its public key"))
	case !supportedPodCertificateKey(csr.PublicKey):
		errs = append(errs, field.Invalid(stub, "", "unsupported public key type: use RSA (3072 or 4096 bits), ECDSA (P-256, P-384 or P-521) or Ed25519"))
	}
	return errs
}

func supportedPodCertificateKey(key any) bool {
	switch k := key.(type) {
	case *rsa.PublicKey:
		return k.N.BitLen() == 3072 || k.N.BitLen() == 4096
	case *ecdsa.PublicKey:
		return k.Curve == elliptic.P256() || k.Curve == elliptic.P384() || k.Curve == elliptic.P521()
	case ed25519.PublicKey:
		return true
	}
	return false
}

// validatePodCertificateRequestStatus: conditions well formed, at most one
// of Issued, Denied and Failed, no change once one is set; an issued
// request has a PEM certificate chain whose leaf's validity the
// notBefore and notAfter fields repeat, with beginRefreshAt between them.
func validatePodCertificateRequestStatus(r, prev *certificatesv1.PodCertificateRequest) field.ErrorList {
	p := field.NewPath("status")
	errs := metav1validation.ValidateConditions(r.Status.Conditions, p.Child("conditions"))
	terminal := func(o *certificatesv1.PodCertificateRequest) int {
		n := 0
		for _, t := range []string{certificatesv1.PodCertificateRequestConditionTypeIssued, certificatesv1.PodCertificateRequestConditionTypeDenied, certificatesv1.PodCertificateRequestConditionTypeFailed} {
			if meta.FindStatusCondition(o.Status.Conditions, t) != nil {
				n++
			}
		}
		return n
	}
	if terminal(r) > 1 {
		errs = append(errs, field.Invalid(p.Child("conditions"), "", "at most one of Issued, Denied and Failed may be set"))
	}
	if terminal(prev) > 0 && !apiequality.Semantic.DeepEqual(r.Status, prev.Status) {
		errs = append(errs, field.Forbidden(p, "immutable after the request was issued, denied or failed"))
	}
	issued := meta.IsStatusConditionTrue(r.Status.Conditions, certificatesv1.PodCertificateRequestConditionTypeIssued)
	if !issued {
		if r.Status.CertificateChain != "" {
			errs = append(errs, field.Invalid(p.Child("certificateChain"), "", "only set when the Issued condition is true"))
		}
		return errs
	}
	var leaf *x509.Certificate
	rest := []byte(r.Status.CertificateChain)
	for {
		var block *pem.Block
		block, rest = pem.Decode(rest)
		if block == nil {
			break
		}
		cert, err := x509.ParseCertificate(block.Bytes)
		if block.Type != "CERTIFICATE" || err != nil {
			errs = append(errs, field.Invalid(p.Child("certificateChain"), "", "must hold only PEM CERTIFICATE blocks"))
			leaf = nil
			break
		}
		if leaf == nil {
			leaf = cert
		}
	}
	if leaf == nil {
		return append(errs, field.Required(p.Child("certificateChain"), "an issued request has its certificate chain"))
	}
	for _, f := range []struct {
		name string
		set  bool
	}{{"notBefore", r.Status.NotBefore != nil}, {"notAfter", r.Status.NotAfter != nil}, {"beginRefreshAt", r.Status.BeginRefreshAt != nil}} {
		if !f.set {
			errs = append(errs, field.Required(p.Child(f.name), "an issued request has it"))
		}
	}
	if len(errs) > 0 {
		return errs
	}
	if !r.Status.NotBefore.Time.Equal(leaf.NotBefore) {
		errs = append(errs, field.Invalid(p.Child("notBefore"), r.Status.NotBefore, "must match the leaf certificate's NotBefore"))
	}
	if !r.Status.NotAfter.Time.Equal(leaf.NotAfter) {
		errs = append(errs, field.Invalid(p.Child("notAfter"), r.Status.NotAfter, "must match the leaf certificate's NotAfter"))
	}
	if b := r.Status.BeginRefreshAt.Time; b.Before(leaf.NotBefore) || b.After(leaf.NotAfter) {
		errs = append(errs, field.Invalid(p.Child("beginRefreshAt"), r.Status.BeginRefreshAt, "must be between notBefore and notAfter"))
	}
	return errs
}
