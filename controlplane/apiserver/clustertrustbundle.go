package apiserver

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"strings"

	certificatesv1 "k8s.io/api/certificates/v1"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// maxTrustBundleSize is the most a ClusterTrustBundle's trustBundle may
// hold, as upstream's validation allows.
const maxTrustBundleSize = 1 << 20

// validateClusterTrustBundle is kube-apiserver's validation of a
// ClusterTrustBundle: a bundle with a signerName is named
// <signerName with / as :>:<suffix>, one without has no ":" in its name;
// the signerName is a domain and a path and may not change; the bundle is
// one or more distinct PEM CA certificates without headers.
func validateClusterTrustBundle(_ context.Context, _ string, obj, old runtime.Object) field.ErrorList {
	b := obj.(*certificatesv1.ClusterTrustBundle)
	meta := field.NewPath("metadata")
	var errs field.ErrorList
	if prev, ok := old.(*certificatesv1.ClusterTrustBundle); ok {
		errs = apimachineryvalidation.ValidateObjectMetaUpdate(&b.ObjectMeta, &prev.ObjectMeta, meta)
		errs = append(errs, apimachineryvalidation.ValidateImmutableField(b.Spec.SignerName, prev.Spec.SignerName, field.NewPath("spec", "signerName"))...)
	} else {
		errs = apimachineryvalidation.ValidateObjectMeta(&b.ObjectMeta, false, clusterTrustBundleName(b.Spec.SignerName), meta)
	}
	if b.Spec.SignerName != "" {
		errs = append(errs, validateSignerName(field.NewPath("spec", "signerName"), b.Spec.SignerName)...)
	}
	return append(errs, validateTrustBundle(field.NewPath("spec", "trustBundle"), b.Spec.TrustBundle)...)
}

// clusterTrustBundleName checks a bundle's name against its signerName.
func clusterTrustBundleName(signerName string) apimachineryvalidation.ValidateNameFunc {
	return func(name string, prefix bool) []string {
		if signerName == "" {
			if strings.Contains(name, ":") {
				return []string{`ClusterTrustBundle without signer name must not have ":" in its name`}
			}
			return apimachineryvalidation.NameIsDNSSubdomain(name, prefix)
		}
		required := strings.ReplaceAll(signerName, "/", ":") + ":"
		if !strings.HasPrefix(name, required) {
			return []string{fmt.Sprintf("ClusterTrustBundle for signerName %s must be named with prefix %s", signerName, required)}
		}
		return apimachineryvalidation.NameIsDNSSubdomain(strings.TrimPrefix(name, required), prefix)
	}
}

// validateSignerName checks a signer name is a domain of at least two
// labels, a "/", and a path of DNS labels, as certificates.k8s.io's.
func validateSignerName(fld *field.Path, signerName string) field.ErrorList {
	segments := strings.Split(signerName, "/")
	if len(segments) != 2 {
		return field.ErrorList{field.Invalid(fld, signerName, "must be a fully qualified domain and path of the form 'example.com/signer-name'")}
	}
	var errs field.ErrorList
	if len(segments[0]) > validation.DNS1123SubdomainMaxLength {
		errs = append(errs, field.TooLong(fld, segments[0], validation.DNS1123SubdomainMaxLength))
	}
	domain := strings.Split(segments[0], ".")
	for _, label := range domain {
		if msgs := validation.IsDNS1123Label(label); len(msgs) > 0 {
			for _, msg := range msgs {
				errs = append(errs, field.Invalid(fld, segments[0], fmt.Sprintf("validating label %q: %s", label, msg)))
			}
			break
		}
	}
	if len(domain) < 2 {
		errs = append(errs, field.Invalid(fld, segments[0], "should be a domain with at least two segments separated by dots"))
	}
	for _, label := range strings.Split(segments[1], ".") {
		if msgs := validation.IsDNS1123Label(label); len(msgs) > 0 {
			for _, msg := range msgs {
				errs = append(errs, field.Invalid(fld, segments[1], fmt.Sprintf("validating label %q: %s", label, msg)))
			}
			break
		}
	}
	return errs
}

// validateTrustBundle checks a PEM bundle of CA certificates.
func validateTrustBundle(fld *field.Path, in string) field.ErrorList {
	if len(in) > maxTrustBundleSize {
		return field.ErrorList{field.TooLong(fld, "", maxTrustBundleSize)}
	}
	var errs field.ErrorList
	seen := map[string][]int{}
	rest := []byte(in)
	i := -1
	for {
		var b *pem.Block
		if b, rest = pem.Decode(rest); b == nil {
			break
		}
		i++
		switch {
		case b.Type != "CERTIFICATE":
			errs = append(errs, field.Invalid(fld, "<value omitted>", fmt.Sprintf("entry %d has bad block type: %v", i, b.Type)))
			continue
		case len(b.Headers) != 0:
			errs = append(errs, field.Invalid(fld, "<value omitted>", fmt.Sprintf("entry %d has PEM block headers", i)))
			continue
		}
		cert, err := x509.ParseCertificate(b.Bytes)
		switch {
		case err != nil:
			errs = append(errs, field.Invalid(fld, "<value omitted>", fmt.Sprintf("entry %d does not parse as X.509", i)))
			continue
		case !cert.IsCA:
			errs = append(errs, field.Invalid(fld, "<value omitted>", fmt.Sprintf("entry %d does not have the CA bit set", i)))
			continue
		case !cert.BasicConstraintsValid:
			errs = append(errs, field.Invalid(fld, "<value omitted>", fmt.Sprintf("entry %d has invalid basic constraints", i)))
			continue
		}
		seen[string(b.Bytes)] = append(seen[string(b.Bytes)], i)
	}
	if len(errs) > 0 {
		return errs
	}
	if i == -1 {
		return field.ErrorList{field.Invalid(fld, "<value omitted>", "at least one trust anchor must be provided")}
	}
	for _, indices := range seen {
		if len(indices) > 1 {
			errs = append(errs, field.Invalid(fld, "<value omitted>", fmt.Sprintf("duplicate trust anchor (indices %v)", indices)))
		}
	}
	return errs
}
