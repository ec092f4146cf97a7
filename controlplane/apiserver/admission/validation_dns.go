package admission

import (
	"fmt"
	"regexp"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Kubernetes' limits on a pod's dnsConfig (MaxDNSNameservers,
// MaxDNSSearchPaths, MaxDNSSearchListChars).
const (
	maxDNSNameservers     = 3
	maxDNSSearchPaths     = 32
	maxDNSSearchListChars = 2048
)

// A search domain may hold underscores (RelaxedDNSSearchValidation, on in
// Kubernetes since v1.34).
const (
	dns1123LabelFmtWithUnderscore          = "_?[a-z0-9]([-_a-z0-9]*[a-z0-9])?"
	dns1123SubdomainFmtWithUnderscore      = dns1123LabelFmtWithUnderscore + "(\\." + dns1123LabelFmtWithUnderscore + ")*"
	dns1123SubdomainErrorMsgWithUnderscore = "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character"
)

var dns1123SubdomainWithUnderscore = regexp.MustCompile("^" + dns1123SubdomainFmtWithUnderscore + "$")

// validatePodDNSConfig is validatePodDNSConfig: dnsPolicy None needs a
// dnsConfig with a nameserver; nameservers are at most 3 IPs, searches at
// most 32 domains and 2048 characters, options have names.
func validatePodDNSConfig(dc *corev1.PodDNSConfig, policy corev1.DNSPolicy, fld *field.Path) field.ErrorList {
	if policy == corev1.DNSNone {
		if dc == nil {
			return field.ErrorList{field.Required(fld, fmt.Sprintf("must provide `dnsConfig` when `dnsPolicy` is %s", corev1.DNSNone))}
		}
		if len(dc.Nameservers) == 0 {
			return field.ErrorList{field.Required(fld.Child("nameservers"), fmt.Sprintf("must provide at least one DNS nameserver when `dnsPolicy` is %s", corev1.DNSNone))}
		}
	}
	if dc == nil {
		return nil
	}
	var errs field.ErrorList
	if len(dc.Nameservers) > maxDNSNameservers {
		errs = append(errs, field.Invalid(fld.Child("nameservers"), dc.Nameservers, fmt.Sprintf("must not have more than %v nameservers", maxDNSNameservers)))
	}
	for i, ns := range dc.Nameservers {
		errs = append(errs, validation.IsValidIP(fld.Child("nameservers").Index(i), ns)...)
	}
	if len(dc.Searches) > maxDNSSearchPaths {
		errs = append(errs, field.Invalid(fld.Child("searches"), dc.Searches, fmt.Sprintf("must not have more than %v search paths", maxDNSSearchPaths)))
	}
	if len(strings.Join(dc.Searches, " ")) > maxDNSSearchListChars {
		errs = append(errs, field.Invalid(fld.Child("searches"), dc.Searches, fmt.Sprintf("must not have more than %v characters (including spaces) in the search list", maxDNSSearchListChars)))
	}
	for i, search := range dc.Searches {
		if search == "." {
			continue
		}
		// A trailing dot is fine.
		search = strings.TrimSuffix(search, ".")
		if len(search) > validation.DNS1123SubdomainMaxLength {
			errs = append(errs, field.TooLong(fld.Child("searches").Index(i), search, validation.DNS1123SubdomainMaxLength))
		}
		if !dns1123SubdomainWithUnderscore.MatchString(search) {
			errs = append(errs, field.Invalid(fld.Child("searches").Index(i), search,
				validation.RegexError(dns1123SubdomainErrorMsgWithUnderscore, dns1123SubdomainFmtWithUnderscore, "example.com")))
		}
	}
	for i, op := range dc.Options {
		if op.Name == "" {
			errs = append(errs, field.Required(fld.Child("options").Index(i), "must not be empty"))
		}
	}
	return errs
}
