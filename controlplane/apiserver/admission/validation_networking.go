package admission

import (
	"fmt"
	"net/netip"
	"strings"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// annotationIngressClass is the deprecated annotation naming an Ingress's
// class.
const annotationIngressClass = "kubernetes.io/ingress.class"

var (
	invalidPathSequences = []string{"//", "/./", "/../", "%2f", "%2F"}
	invalidPathSuffixes  = []string{"/..", "/."}
	ingressPathTypes     = []string{string(networkingv1.PathTypeExact), string(networkingv1.PathTypeImplementationSpecific), string(networkingv1.PathTypePrefix)}
)

// defaultPolicyKinds fills in what SetDefaults_* of core/v1 and
// networking/v1 do: a LimitRange's Container defaults, a NetworkPolicy's
// policyTypes and port protocols, an IngressClass's parameters scope.
func defaultPolicyKinds(obj runtime.Object) {
	switch o := obj.(type) {
	case *corev1.LimitRange:
		for i := range o.Spec.Limits {
			defaultLimitRangeItem(&o.Spec.Limits[i])
		}
	case *networkingv1.NetworkPolicy:
		if len(o.Spec.PolicyTypes) == 0 {
			o.Spec.PolicyTypes = []networkingv1.PolicyType{networkingv1.PolicyTypeIngress}
			if len(o.Spec.Egress) != 0 {
				o.Spec.PolicyTypes = append(o.Spec.PolicyTypes, networkingv1.PolicyTypeEgress)
			}
		}
		defaultPorts := func(ports []networkingv1.NetworkPolicyPort) {
			for i := range ports {
				if ports[i].Protocol == nil {
					ports[i].Protocol = ptrTo(corev1.ProtocolTCP)
				}
			}
		}
		for i := range o.Spec.Ingress {
			defaultPorts(o.Spec.Ingress[i].Ports)
		}
		for i := range o.Spec.Egress {
			defaultPorts(o.Spec.Egress[i].Ports)
		}
	case *networkingv1.IngressClass:
		if p := o.Spec.Parameters; p != nil && p.Scope == nil {
			p.Scope = ptrTo(networkingv1.IngressClassParametersReferenceScopeCluster)
		}
	}
}

// validateIngress is ValidateIngressCreate and ValidateIngressUpdate.
func validateIngress(ing, old *networkingv1.Ingress) field.ErrorList {
	var oldObj runtime.Object
	if old != nil {
		oldObj = old
	}
	errs := validateMeta(&ing.ObjectMeta, oldObj, true, apimachineryvalidation.NameIsDNSSubdomain)
	spec := field.NewPath("spec")
	if len(ing.Spec.Rules) == 0 && ing.Spec.DefaultBackend == nil {
		errs = append(errs, field.Invalid(spec, ing.Spec.Rules, "either `defaultBackend` or `rules` must be specified"))
	}
	if ing.Spec.DefaultBackend != nil {
		errs = append(errs, validateIngressBackend(ing.Spec.DefaultBackend, spec.Child("defaultBackend"))...)
	}
	for i, r := range ing.Spec.Rules {
		p := spec.Child("rules").Index(i)
		if r.Host != "" {
			errs = append(errs, validateIngressHost(r.Host, p.Child("host"))...)
		}
		if r.HTTP != nil {
			hp := p.Child("http")
			if len(r.HTTP.Paths) == 0 {
				errs = append(errs, field.Required(hp.Child("paths"), ""))
			}
			for j := range r.HTTP.Paths {
				errs = append(errs, validateHTTPIngressPath(&r.HTTP.Paths[j], hp.Child("paths").Index(j))...)
			}
		}
	}
	for i, tls := range ing.Spec.TLS {
		for j, host := range tls.Hosts {
			hp := spec.Child("tls").Index(i).Child("hosts").Index(j)
			if strings.Contains(host, "*") {
				for _, msg := range validation.IsWildcardDNS1123Subdomain(host) {
					errs = append(errs, field.Invalid(hp, host, msg))
				}
				continue
			}
			for _, msg := range validation.IsDNS1123Subdomain(host) {
				errs = append(errs, field.Invalid(hp, host, msg))
			}
		}
	}
	if c := ing.Spec.IngressClassName; c != nil {
		for _, msg := range apimachineryvalidation.NameIsDNSSubdomain(*c, false) {
			errs = append(errs, field.Invalid(spec.Child("ingressClassName"), *c, msg))
		}
		if v, ok := ing.Annotations[annotationIngressClass]; ok && old == nil && v != *c {
			errs = append(errs, field.Invalid(field.NewPath("annotations").Child(annotationIngressClass), v, "must match `ingressClassName` when both are specified"))
		}
	}
	return errs
}

func validateIngressHost(host string, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	if _, err := netip.ParseAddr(host); err == nil {
		errs = append(errs, field.Invalid(fld, host, "must be a DNS name, not an IP address"))
	}
	if strings.Contains(host, "*") {
		for _, msg := range validation.IsWildcardDNS1123Subdomain(host) {
			errs = append(errs, field.Invalid(fld, host, msg))
		}
		return errs
	}
	for _, msg := range validation.IsDNS1123Subdomain(host) {
		errs = append(errs, field.Invalid(fld, host, msg))
	}
	return errs
}

// validateHTTPIngressPath is validateHTTPIngressPath.
func validateHTTPIngressPath(path *networkingv1.HTTPIngressPath, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	if path.PathType == nil {
		return append(errs, field.Required(fld.Child("pathType"), "pathType must be specified"))
	}
	switch *path.PathType {
	case networkingv1.PathTypeExact, networkingv1.PathTypePrefix:
		if !strings.HasPrefix(path.Path, "/") {
			errs = append(errs, field.Invalid(fld.Child("path"), path.Path, "must be an absolute path"))
		}
		if len(path.Path) > 0 {
			for _, seq := range invalidPathSequences {
				if strings.Contains(path.Path, seq) {
					errs = append(errs, field.Invalid(fld.Child("path"), path.Path, fmt.Sprintf("must not contain '%s'", seq)))
				}
			}
			for _, suffix := range invalidPathSuffixes {
				if strings.HasSuffix(path.Path, suffix) {
					errs = append(errs, field.Invalid(fld.Child("path"), path.Path, fmt.Sprintf("cannot end with '%s'", suffix)))
				}
			}
		}
	case networkingv1.PathTypeImplementationSpecific:
		if len(path.Path) > 0 && !strings.HasPrefix(path.Path, "/") {
			errs = append(errs, field.Invalid(fld.Child("path"), path.Path, "must be an absolute path"))
		}
	default:
		errs = append(errs, field.NotSupported(fld.Child("pathType"), *path.PathType, ingressPathTypes))
	}
	return append(errs, validateIngressBackend(&path.Backend, fld.Child("backend"))...)
}

// validateIngressBackend is validateIngressBackend.
func validateIngressBackend(b *networkingv1.IngressBackend, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	switch {
	case b.Resource != nil && b.Service != nil:
		errs = append(errs, field.Invalid(fld, "", "cannot set both resource and service backends"))
	case b.Resource != nil:
		rp := fld.Child("resource")
		if b.Resource.Kind == "" {
			errs = append(errs, field.Required(rp.Child("kind"), "kind is required"))
		}
		if b.Resource.Name == "" {
			errs = append(errs, field.Required(rp.Child("name"), "name is required"))
		}
		if b.Resource.APIGroup == nil {
			errs = append(errs, field.Required(rp.Child("apiGroup"), "apiGroup is required"))
		}
	case b.Service != nil:
		sp := fld.Child("service")
		if b.Service.Name == "" {
			errs = append(errs, field.Required(sp.Child("name"), ""))
		} else {
			for _, msg := range apimachineryvalidation.NameIsDNS1035Label(b.Service.Name, false) {
				errs = append(errs, field.Invalid(sp.Child("name"), b.Service.Name, msg))
			}
		}
		hasName, hasNumber := b.Service.Port.Name != "", b.Service.Port.Number != 0
		switch {
		case hasName && hasNumber:
			errs = append(errs, field.Invalid(fld, "", "cannot set both port name & port number"))
		case hasName:
			for _, msg := range validation.IsValidPortName(b.Service.Port.Name) {
				errs = append(errs, field.Invalid(sp.Child("port", "name"), b.Service.Port.Name, msg))
			}
		case hasNumber:
			for _, msg := range validation.IsValidPortNum(int(b.Service.Port.Number)) {
				errs = append(errs, field.Invalid(sp.Child("port", "number"), b.Service.Port.Number, msg))
			}
		default:
			errs = append(errs, field.Required(fld, "port name or number is required"))
		}
	default:
		errs = append(errs, field.Invalid(fld, "", "resource or service backend is required"))
	}
	return errs
}

// validateIngressStatusUpdate checks the load balancer addresses.
func validateIngressStatusUpdate(ing, old *networkingv1.Ingress) field.ErrorList {
	errs := validateMetaUpdateOnly(ing, old)
	fld := field.NewPath("status", "loadBalancer", "ingress")
	for i, lb := range ing.Status.LoadBalancer.Ingress {
		if lb.IP != "" {
			errs = append(errs, validation.IsValidIP(fld.Index(i).Child("ip"), lb.IP)...)
		}
		if lb.Hostname != "" {
			for _, msg := range validation.IsDNS1123Subdomain(lb.Hostname) {
				errs = append(errs, field.Invalid(fld.Index(i).Child("hostname"), lb.Hostname, msg))
			}
		}
	}
	return errs
}

// validateIngressClass is ValidateIngressClass and ValidateIngressClassUpdate.
func validateIngressClass(c, old *networkingv1.IngressClass) field.ErrorList {
	var oldObj runtime.Object
	if old != nil {
		oldObj = old
	}
	errs := validateMeta(&c.ObjectMeta, oldObj, false, apimachineryvalidation.NameIsDNSSubdomain)
	fld := field.NewPath("spec")
	if len(c.Spec.Controller) > 250 {
		errs = append(errs, field.TooLong(fld.Child("controller"), c.Spec.Controller, 250))
	}
	errs = append(errs, validation.IsDomainPrefixedPath(fld.Child("controller"), c.Spec.Controller)...)
	if p := c.Spec.Parameters; p != nil {
		pp := fld.Child("parameters")
		if p.Kind == "" {
			errs = append(errs, field.Required(pp.Child("kind"), "kind is required"))
		}
		if p.Name == "" {
			errs = append(errs, field.Required(pp.Child("name"), "name is required"))
		}
		switch {
		case p.Scope == nil:
			errs = append(errs, field.Required(pp.Child("scope"), ""))
		case *p.Scope == networkingv1.IngressClassParametersReferenceScopeNamespace:
			if p.Namespace == nil {
				errs = append(errs, field.Required(pp.Child("namespace"), "`parameters.scope` is set to 'Namespace'"))
			} else {
				for _, msg := range apimachineryvalidation.ValidateNamespaceName(*p.Namespace, false) {
					errs = append(errs, field.Invalid(pp.Child("namespace"), *p.Namespace, msg))
				}
			}
		case *p.Scope == networkingv1.IngressClassParametersReferenceScopeCluster:
			if p.Namespace != nil {
				errs = append(errs, field.Forbidden(pp.Child("namespace"), "`parameters.scope` is set to 'Cluster'"))
			}
		default:
			errs = append(errs, field.NotSupported(pp.Child("scope"), *p.Scope, []string{networkingv1.IngressClassParametersReferenceScopeCluster, networkingv1.IngressClassParametersReferenceScopeNamespace}))
		}
	}
	if old != nil && c.Spec.Controller != old.Spec.Controller {
		errs = append(errs, field.Invalid(fld.Child("controller"), c.Spec.Controller, "field is immutable"))
	}
	return errs
}

// validateNetworkPolicy is ValidateNetworkPolicy (and its update, whose
// rules are the same plus metadata's).
func validateNetworkPolicy(np *networkingv1.NetworkPolicy, old runtime.Object) field.ErrorList {
	errs := validateMeta(&np.ObjectMeta, old, true, apimachineryvalidation.NameIsDNSSubdomain)
	spec := field.NewPath("spec")
	opts := metav1validation.LabelSelectorValidationOptions{}
	errs = append(errs, metav1validation.ValidateLabelSelector(&np.Spec.PodSelector, opts, spec.Child("podSelector"))...)
	for i, rule := range np.Spec.Ingress {
		p := spec.Child("ingress").Index(i)
		for j := range rule.Ports {
			errs = append(errs, validateNetworkPolicyPort(&rule.Ports[j], p.Child("ports").Index(j))...)
		}
		for j := range rule.From {
			errs = append(errs, validateNetworkPolicyPeer(&rule.From[j], opts, p.Child("from").Index(j))...)
		}
	}
	for i, rule := range np.Spec.Egress {
		p := spec.Child("egress").Index(i)
		for j := range rule.Ports {
			errs = append(errs, validateNetworkPolicyPort(&rule.Ports[j], p.Child("ports").Index(j))...)
		}
		for j := range rule.To {
			errs = append(errs, validateNetworkPolicyPeer(&rule.To[j], opts, p.Child("to").Index(j))...)
		}
	}
	if len(np.Spec.PolicyTypes) > 2 {
		errs = append(errs, field.Invalid(spec.Child("policyTypes"), &np.Spec.PolicyTypes, "may not specify more than two policyTypes"))
	}
	for i, t := range np.Spec.PolicyTypes {
		if t != networkingv1.PolicyTypeIngress && t != networkingv1.PolicyTypeEgress {
			errs = append(errs, field.NotSupported(spec.Child("policyTypes").Index(i), t, []string{string(networkingv1.PolicyTypeIngress), string(networkingv1.PolicyTypeEgress)}))
		}
	}
	return errs
}

func validateNetworkPolicyPort(port *networkingv1.NetworkPolicyPort, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	if port.Protocol != nil && *port.Protocol != corev1.ProtocolTCP && *port.Protocol != corev1.ProtocolUDP && *port.Protocol != corev1.ProtocolSCTP {
		errs = append(errs, field.NotSupported(fld.Child("protocol"), *port.Protocol, []string{string(corev1.ProtocolTCP), string(corev1.ProtocolUDP), string(corev1.ProtocolSCTP)}))
	}
	switch {
	case port.Port == nil:
		if port.EndPort != nil {
			errs = append(errs, field.Invalid(fld.Child("endPort"), *port.EndPort, "may not be specified when `port` is not specified"))
		}
	case port.Port.Type == intstr.Int:
		for _, msg := range validation.IsValidPortNum(int(port.Port.IntVal)) {
			errs = append(errs, field.Invalid(fld.Child("port"), port.Port.IntVal, msg))
		}
		if port.EndPort != nil {
			if *port.EndPort < port.Port.IntVal {
				errs = append(errs, field.Invalid(fld.Child("endPort"), port.Port.IntVal, "must be greater than or equal to `port`"))
			}
			for _, msg := range validation.IsValidPortNum(int(*port.EndPort)) {
				errs = append(errs, field.Invalid(fld.Child("endPort"), *port.EndPort, msg))
			}
		}
	default:
		if port.EndPort != nil {
			errs = append(errs, field.Invalid(fld.Child("endPort"), *port.EndPort, "may not be specified when `port` is non-numeric"))
		}
		for _, msg := range validation.IsValidPortName(port.Port.StrVal) {
			errs = append(errs, field.Invalid(fld.Child("port"), port.Port.StrVal, msg))
		}
	}
	return errs
}

func validateNetworkPolicyPeer(peer *networkingv1.NetworkPolicyPeer, opts metav1validation.LabelSelectorValidationOptions, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	n := 0
	if peer.PodSelector != nil {
		n++
		errs = append(errs, metav1validation.ValidateLabelSelector(peer.PodSelector, opts, fld.Child("podSelector"))...)
	}
	if peer.NamespaceSelector != nil {
		n++
		errs = append(errs, metav1validation.ValidateLabelSelector(peer.NamespaceSelector, opts, fld.Child("namespaceSelector"))...)
	}
	if peer.IPBlock != nil {
		n++
		errs = append(errs, validateIPBlock(peer.IPBlock, fld.Child("ipBlock"))...)
	}
	if n == 0 {
		errs = append(errs, field.Required(fld, "must specify a peer"))
	} else if n > 1 && peer.IPBlock != nil {
		errs = append(errs, field.Forbidden(fld, "may not specify both ipBlock and another peer"))
	}
	return errs
}

// validateIPBlock is ValidateIPBlock: except must lie strictly inside cidr.
func validateIPBlock(b *networkingv1.IPBlock, fld *field.Path) field.ErrorList {
	if b.CIDR == "" {
		return field.ErrorList{field.Required(fld.Child("cidr"), "")}
	}
	errs := validation.IsValidCIDR(fld.Child("cidr"), b.CIDR)
	cidr, err := netip.ParsePrefix(b.CIDR)
	if err != nil {
		return errs
	}
	for i, s := range b.Except {
		p := fld.Child("except").Index(i)
		cidrErrs := validation.IsValidCIDR(p, s)
		errs = append(errs, cidrErrs...)
		except, err := netip.ParsePrefix(s)
		if len(cidrErrs) != 0 || err != nil {
			continue
		}
		if !cidr.Contains(except.Addr()) || cidr.Bits() >= except.Bits() {
			errs = append(errs, field.Invalid(p, s, "must be a strict subset of `cidr`"))
		}
	}
	return errs
}

// defaultLimitRangeItem is SetDefaults_LimitRangeItem: for containers, the
// default limit falls back to max, the default request to the default
// limit, then to min.
func defaultLimitRangeItem(item *corev1.LimitRangeItem) {
	if item.Type != corev1.LimitTypeContainer {
		return
	}
	if item.Default == nil {
		item.Default = corev1.ResourceList{}
	}
	if item.DefaultRequest == nil {
		item.DefaultRequest = corev1.ResourceList{}
	}
	for k, v := range item.Max {
		if _, ok := item.Default[k]; !ok {
			item.Default[k] = v.DeepCopy()
		}
	}
	for k, v := range item.Default {
		if _, ok := item.DefaultRequest[k]; !ok {
			item.DefaultRequest[k] = v.DeepCopy()
		}
	}
	for k, v := range item.Min {
		if _, ok := item.DefaultRequest[k]; !ok {
			item.DefaultRequest[k] = v.DeepCopy()
		}
	}
}
