package admission

import (
	"encoding/json"
	"fmt"
	"net"
	"reflect"
	"strings"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// maxSecretSize is core.MaxSecretSize, the limit on a Secret's or
// ConfigMap's data (1 MiB).
const maxSecretSize = 1 * 1024 * 1024

// maxClientIPServiceAffinitySeconds is core.MaxClientIPServiceAffinitySeconds (one day).
const maxClientIPServiceAffinitySeconds = 86400

var supportedServiceTypes = []corev1.ServiceType{corev1.ServiceTypeClusterIP, corev1.ServiceTypeExternalName, corev1.ServiceTypeLoadBalancer, corev1.ServiceTypeNodePort}

func isHeadlessService(s *corev1.Service) bool {
	return len(s.Spec.ClusterIPs) == 1 && s.Spec.ClusterIPs[0] == corev1.ClusterIPNone
}

// validateService is ValidateService, with the update rules of
// ValidateServiceUpdate when old is set.
func validateService(s, old *corev1.Service) field.ErrorList {
	var oldObj runtime.Object
	if old != nil {
		oldObj = old
	}
	errs := validateMeta(&s.ObjectMeta, oldObj, true, apimachineryvalidation.NameIsDNS1035Label)
	specPath := field.NewPath("spec")
	if old != nil {
		errs = append(errs, validateClusterIPsUpdate(old, s)...)
	}
	if len(s.Spec.Ports) == 0 && !isHeadlessService(s) && s.Spec.Type != corev1.ServiceTypeExternalName {
		errs = append(errs, field.Required(specPath.Child("ports"), ""))
	}
	switch s.Spec.Type {
	case corev1.ServiceTypeLoadBalancer, corev1.ServiceTypeNodePort:
		if isHeadlessService(s) {
			errs = append(errs, field.Invalid(specPath.Child("clusterIPs").Index(0), s.Spec.ClusterIPs[0], fmt.Sprintf("may not be set to 'None' for %s services", s.Spec.Type)))
		}
	case corev1.ServiceTypeExternalName:
		if len(s.Spec.ClusterIPs) > 0 {
			errs = append(errs, field.Forbidden(specPath.Child("clusterIPs"), "may not be set for ExternalName services"))
		}
		if len(s.Spec.IPFamilies) > 0 {
			errs = append(errs, field.Forbidden(specPath.Child("ipFamilies"), "may not be set for ExternalName services"))
		}
		if s.Spec.IPFamilyPolicy != nil {
			errs = append(errs, field.Forbidden(specPath.Child("ipFamilyPolicy"), "may not be set for ExternalName services"))
		}
		if cname := strings.TrimSuffix(s.Spec.ExternalName, "."); cname != "" {
			errs = append(errs, validateDNS1123Subdomain(cname, specPath.Child("externalName"))...)
		} else {
			errs = append(errs, field.Required(specPath.Child("externalName"), ""))
		}
	}
	portNames := sets.New[string]()
	portsPath := specPath.Child("ports")
	for i := range s.Spec.Ports {
		errs = append(errs, validateServicePort(&s.Spec.Ports[i], len(s.Spec.Ports) > 1, portNames, portsPath.Index(i))...)
	}
	if s.Spec.Selector != nil {
		errs = append(errs, metav1validation.ValidateLabels(s.Spec.Selector, specPath.Child("selector"))...)
	}
	switch s.Spec.SessionAffinity {
	case "":
		errs = append(errs, field.Required(specPath.Child("sessionAffinity"), ""))
	case corev1.ServiceAffinityClientIP:
		c := s.Spec.SessionAffinityConfig
		cfgPath := specPath.Child("sessionAffinityConfig")
		when := fmt.Sprintf("when session affinity type is %s", corev1.ServiceAffinityClientIP)
		switch {
		case c == nil:
			errs = append(errs, field.Required(cfgPath, when))
		case c.ClientIP == nil:
			errs = append(errs, field.Required(cfgPath.Child("clientIP"), when))
		case c.ClientIP.TimeoutSeconds == nil:
			errs = append(errs, field.Required(cfgPath.Child("clientIP", "timeoutSeconds"), when))
		case *c.ClientIP.TimeoutSeconds <= 0 || *c.ClientIP.TimeoutSeconds > maxClientIPServiceAffinitySeconds:
			errs = append(errs, field.Invalid(cfgPath.Child("clientIP", "timeoutSeconds"), c.ClientIP.TimeoutSeconds,
				fmt.Sprintf("must be greater than 0 and less than %d", maxClientIPServiceAffinitySeconds)))
		}
	case corev1.ServiceAffinityNone:
		if s.Spec.SessionAffinityConfig != nil {
			errs = append(errs, field.Forbidden(specPath.Child("sessionAffinityConfig"), fmt.Sprintf("must not be set when session affinity is %s", corev1.ServiceAffinityNone)))
		}
	default:
		errs = append(errs, field.NotSupported(specPath.Child("sessionAffinity"), s.Spec.SessionAffinity, []corev1.ServiceAffinity{corev1.ServiceAffinityClientIP, corev1.ServiceAffinityNone}))
	}
	errs = append(errs, validateClusterIPs(s)...)
	for i, ip := range s.Spec.ExternalIPs {
		errs = append(errs, validation.IsValidIP(specPath.Child("externalIPs").Index(i), ip)...)
	}
	switch s.Spec.Type {
	case "":
		errs = append(errs, field.Required(specPath.Child("type"), ""))
	case corev1.ServiceTypeClusterIP, corev1.ServiceTypeNodePort, corev1.ServiceTypeLoadBalancer, corev1.ServiceTypeExternalName:
	default:
		errs = append(errs, field.NotSupported(specPath.Child("type"), s.Spec.Type, supportedServiceTypes))
	}
	if s.Spec.Type == corev1.ServiceTypeClusterIP {
		for i, p := range s.Spec.Ports {
			if p.NodePort != 0 {
				errs = append(errs, field.Forbidden(portsPath.Index(i).Child("nodePort"), "may not be used when `type` is 'ClusterIP'"))
			}
		}
	}
	nodePorts := map[corev1.ServicePort]bool{}
	for i, p := range s.Spec.Ports {
		if p.NodePort == 0 {
			continue
		}
		key := corev1.ServicePort{Protocol: p.Protocol, NodePort: p.NodePort}
		if nodePorts[key] {
			errs = append(errs, field.Duplicate(portsPath.Index(i).Child("nodePort"), p.NodePort))
		}
		nodePorts[key] = true
	}
	ports := map[corev1.ServicePort]bool{}
	for i, p := range s.Spec.Ports {
		key := corev1.ServicePort{Protocol: p.Protocol, Port: p.Port}
		if ports[key] {
			errs = append(errs, field.Duplicate(portsPath.Index(i), key))
		}
		ports[key] = true
	}
	if s.Spec.AllocateLoadBalancerNodePorts != nil && s.Spec.Type != corev1.ServiceTypeLoadBalancer {
		errs = append(errs, field.Forbidden(specPath.Child("allocateLoadBalancerNodePorts"), "may only be used when `type` is 'LoadBalancer'"))
	}
	if serviceExternallyAccessible(s) {
		switch s.Spec.ExternalTrafficPolicy {
		case "":
			errs = append(errs, field.Required(specPath.Child("externalTrafficPolicy"), ""))
		case corev1.ServiceExternalTrafficPolicyCluster, corev1.ServiceExternalTrafficPolicyLocal:
		default:
			errs = append(errs, field.NotSupported(specPath.Child("externalTrafficPolicy"), s.Spec.ExternalTrafficPolicy,
				[]corev1.ServiceExternalTrafficPolicy{corev1.ServiceExternalTrafficPolicyCluster, corev1.ServiceExternalTrafficPolicyLocal}))
		}
	} else if s.Spec.ExternalTrafficPolicy != "" {
		errs = append(errs, field.Invalid(specPath.Child("externalTrafficPolicy"), s.Spec.ExternalTrafficPolicy, "may only be set for externally-accessible services"))
	}
	if s.Spec.InternalTrafficPolicy == nil {
		switch s.Spec.Type {
		case corev1.ServiceTypeNodePort, corev1.ServiceTypeLoadBalancer, corev1.ServiceTypeClusterIP:
			errs = append(errs, field.Required(specPath.Child("internalTrafficPolicy"), ""))
		}
	} else if p := *s.Spec.InternalTrafficPolicy; p != corev1.ServiceInternalTrafficPolicyCluster && p != corev1.ServiceInternalTrafficPolicyLocal {
		errs = append(errs, field.NotSupported(specPath.Child("internalTrafficPolicy"), p,
			[]corev1.ServiceInternalTrafficPolicy{corev1.ServiceInternalTrafficPolicyCluster, corev1.ServiceInternalTrafficPolicyLocal}))
	}
	return errs
}

func validateServicePort(sp *corev1.ServicePort, requireName bool, names sets.Set[string], fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	if requireName && sp.Name == "" {
		errs = append(errs, field.Required(fld.Child("name"), ""))
	} else if sp.Name != "" {
		errs = append(errs, validateDNS1123Label(sp.Name, fld.Child("name"))...)
		if names.Has(sp.Name) {
			errs = append(errs, field.Duplicate(fld.Child("name"), sp.Name))
		} else {
			names.Insert(sp.Name)
		}
	}
	for _, msg := range validation.IsValidPortNum(int(sp.Port)) {
		errs = append(errs, field.Invalid(fld.Child("port"), sp.Port, msg))
	}
	if sp.Protocol == "" {
		errs = append(errs, field.Required(fld.Child("protocol"), ""))
	} else if !validProtocol(sp.Protocol) {
		errs = append(errs, field.NotSupported(fld.Child("protocol"), sp.Protocol, supportedPortProtocols))
	}
	errs = append(errs, validatePortNumOrName(sp.TargetPort, fld.Child("targetPort"))...)
	if sp.AppProtocol != nil {
		errs = append(errs, validateQualifiedName(*sp.AppProtocol, fld.Child("appProtocol"))...)
	}
	return errs
}

// validateClusterIPs is the part of ValidateServiceClusterIPsRelatedFields
// a single-stack cluster needs.
func validateClusterIPs(s *corev1.Service) field.ErrorList {
	if s.Spec.Type == corev1.ServiceTypeExternalName {
		return nil
	}
	var errs field.ErrorList
	fld := field.NewPath("spec", "clusterIPs")
	if s.Spec.ClusterIP != "" {
		if len(s.Spec.ClusterIPs) == 0 {
			errs = append(errs, field.Required(fld, ""))
		} else if s.Spec.ClusterIPs[0] != s.Spec.ClusterIP {
			errs = append(errs, field.Invalid(fld, s.Spec.ClusterIPs, "first value must match `clusterIP`"))
		}
	} else if len(s.Spec.ClusterIPs) != 0 {
		errs = append(errs, field.Invalid(fld, s.Spec.ClusterIPs, "must be empty when `clusterIP` is not specified"))
	}
	for i, f := range s.Spec.IPFamilies {
		if f != corev1.IPv4Protocol && f != corev1.IPv6Protocol {
			errs = append(errs, field.NotSupported(field.NewPath("spec", "ipFamilies").Index(i), f, []corev1.IPFamily{corev1.IPv4Protocol, corev1.IPv6Protocol}))
		}
	}
	if p := s.Spec.IPFamilyPolicy; p != nil {
		switch *p {
		case corev1.IPFamilyPolicySingleStack, corev1.IPFamilyPolicyPreferDualStack, corev1.IPFamilyPolicyRequireDualStack:
		default:
			errs = append(errs, field.NotSupported(field.NewPath("spec", "ipFamilyPolicy"), p,
				[]corev1.IPFamilyPolicy{corev1.IPFamilyPolicyPreferDualStack, corev1.IPFamilyPolicyRequireDualStack, corev1.IPFamilyPolicySingleStack}))
		}
	}
	for i, ip := range s.Spec.ClusterIPs {
		if i == 0 && ip == corev1.ClusterIPNone {
			if len(s.Spec.ClusterIPs) > 1 {
				errs = append(errs, field.Invalid(fld, s.Spec.ClusterIPs, "'None' must be the first and only value"))
			}
			continue
		}
		errs = append(errs, validation.IsValidIP(fld.Index(i), ip)...)
	}
	if len(s.Spec.ClusterIPs) > 2 {
		errs = append(errs, field.Invalid(fld, s.Spec.ClusterIPs, "may only hold up to 2 values"))
	}
	return errs
}

// validateClusterIPsUpdate: a primary cluster IP may not change once set.
func validateClusterIPsUpdate(old, s *corev1.Service) field.ErrorList {
	if s.Spec.Type == corev1.ServiceTypeExternalName || old.Spec.Type == corev1.ServiceTypeExternalName {
		return nil
	}
	if isHeadlessService(old) && isHeadlessService(s) {
		return nil
	}
	fld := field.NewPath("spec", "clusterIPs")
	switch {
	case len(old.Spec.ClusterIPs) == len(s.Spec.ClusterIPs):
		var errs field.ErrorList
		for i, ip := range old.Spec.ClusterIPs {
			if ip != s.Spec.ClusterIPs[i] {
				errs = append(errs, field.Invalid(fld.Index(i), s.Spec.ClusterIPs, "may not change once set"))
			}
		}
		return errs
	case len(s.Spec.ClusterIPs) == 0:
		return field.ErrorList{field.Invalid(fld.Index(0), s.Spec.ClusterIPs, "primary clusterIP can not be unset")}
	case len(old.Spec.ClusterIPs) > 0 && s.Spec.ClusterIPs[0] != old.Spec.ClusterIPs[0]:
		return field.ErrorList{field.Invalid(fld.Index(0), s.Spec.ClusterIPs, "may not change once set")}
	}
	return nil
}

// validateConfigMap is ValidateConfigMap, with ValidateConfigMapUpdate's
// immutability rules when old is set.
func validateConfigMap(cm, old *corev1.ConfigMap) field.ErrorList {
	var oldObj runtime.Object
	if old != nil {
		oldObj = old
	}
	errs := validateMeta(&cm.ObjectMeta, oldObj, true, apimachineryvalidation.NameIsDNSSubdomain)
	if old != nil && old.Immutable != nil && *old.Immutable {
		if cm.Immutable == nil || !*cm.Immutable {
			errs = append(errs, field.Forbidden(field.NewPath("immutable"), "field is immutable when `immutable` is set"))
		}
		if !reflect.DeepEqual(cm.Data, old.Data) {
			errs = append(errs, field.Forbidden(field.NewPath("data"), "field is immutable when `immutable` is set"))
		}
		if !reflect.DeepEqual(cm.BinaryData, old.BinaryData) {
			errs = append(errs, field.Forbidden(field.NewPath("binaryData"), "field is immutable when `immutable` is set"))
		}
	}
	total := 0
	for key, value := range cm.Data {
		for _, msg := range validation.IsConfigMapKey(key) {
			errs = append(errs, field.Invalid(field.NewPath("data").Key(key), key, msg))
		}
		if _, dup := cm.BinaryData[key]; dup {
			errs = append(errs, field.Invalid(field.NewPath("data").Key(key), key, "duplicate of key present in binaryData"))
		}
		total += len(value)
	}
	for key, value := range cm.BinaryData {
		for _, msg := range validation.IsConfigMapKey(key) {
			errs = append(errs, field.Invalid(field.NewPath("binaryData").Key(key), key, msg))
		}
		total += len(value)
	}
	if total > maxSecretSize {
		errs = append(errs, field.TooLong(field.NewPath(""), "", maxSecretSize))
	}
	return errs
}

// validateSecret is ValidateSecret, with ValidateSecretUpdate's rules when
// old is set.
func validateSecret(s, old *corev1.Secret) field.ErrorList {
	var oldObj runtime.Object
	if old != nil {
		oldObj = old
	}
	errs := validateMeta(&s.ObjectMeta, oldObj, true, apimachineryvalidation.NameIsDNSSubdomain)
	if old != nil {
		errs = append(errs, apimachineryvalidation.ValidateImmutableField(s.Type, old.Type, field.NewPath("type"))...)
		if old.Immutable != nil && *old.Immutable {
			if s.Immutable == nil || !*s.Immutable {
				errs = append(errs, field.Forbidden(field.NewPath("immutable"), "field is immutable when `immutable` is set"))
			}
			if !reflect.DeepEqual(s.Data, old.Data) {
				errs = append(errs, field.Forbidden(field.NewPath("data"), "field is immutable when `immutable` is set"))
			}
		}
	}
	dataPath := field.NewPath("data")
	total := 0
	for key, value := range s.Data {
		for _, msg := range validation.IsConfigMapKey(key) {
			errs = append(errs, field.Invalid(dataPath.Key(key), key, msg))
		}
		total += len(value)
	}
	if total > maxSecretSize {
		errs = append(errs, field.TooLong(dataPath, "", maxSecretSize))
	}
	required := func(key string) {
		if _, ok := s.Data[key]; !ok {
			errs = append(errs, field.Required(dataPath.Key(key), ""))
		}
	}
	switch s.Type {
	case corev1.SecretTypeServiceAccountToken:
		if s.Annotations[corev1.ServiceAccountNameKey] == "" {
			errs = append(errs, field.Required(field.NewPath("metadata", "annotations").Key(corev1.ServiceAccountNameKey), ""))
		}
	case corev1.SecretTypeDockercfg, corev1.SecretTypeDockerConfigJson:
		key := corev1.DockerConfigKey
		if s.Type == corev1.SecretTypeDockerConfigJson {
			key = corev1.DockerConfigJsonKey
		}
		b, ok := s.Data[key]
		if !ok {
			errs = append(errs, field.Required(dataPath.Key(key), ""))
			break
		}
		if err := json.Unmarshal(b, &map[string]any{}); err != nil {
			errs = append(errs, field.Invalid(dataPath.Key(key), "<secret contents redacted>", err.Error()))
		}
	case corev1.SecretTypeBasicAuth:
		_, u := s.Data[corev1.BasicAuthUsernameKey]
		_, p := s.Data[corev1.BasicAuthPasswordKey]
		if !u && !p {
			required(corev1.BasicAuthUsernameKey)
			required(corev1.BasicAuthPasswordKey)
		}
	case corev1.SecretTypeSSHAuth:
		if len(s.Data[corev1.SSHAuthPrivateKey]) == 0 {
			errs = append(errs, field.Required(dataPath.Key(corev1.SSHAuthPrivateKey), ""))
		}
	case corev1.SecretTypeTLS:
		required(corev1.TLSCertKey)
		required(corev1.TLSPrivateKeyKey)
	}
	return errs
}

// validateNamespace is ValidateNamespace; on update ValidateNamespaceUpdate.
func validateNamespace(ns *corev1.Namespace, old runtime.Object) field.ErrorList {
	if old != nil {
		return validateMetaUpdateOnly(ns, old)
	}
	errs := validateMeta(&ns.ObjectMeta, nil, false, apimachineryvalidation.ValidateNamespaceName)
	for i, f := range ns.Spec.Finalizers {
		p := field.NewPath("spec", "finalizers").Index(i)
		errs = append(errs, apimachineryvalidation.ValidateFinalizerName(string(f), p)...)
		errs = append(errs, validateKubeFinalizerName(string(f), p)...)
	}
	return errs
}

// validateNamespaceStatusUpdate is ValidateNamespaceStatusUpdate.
func validateNamespaceStatusUpdate(ns, old *corev1.Namespace) field.ErrorList {
	errs := apimachineryvalidation.ValidateObjectMetaUpdate(&ns.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))
	if ns.DeletionTimestamp.IsZero() {
		if ns.Status.Phase != corev1.NamespaceActive {
			errs = append(errs, field.Invalid(field.NewPath("status", "Phase"), ns.Status.Phase, "may only be 'Active' if `deletionTimestamp` is empty"))
		}
	} else if ns.Status.Phase != corev1.NamespaceTerminating {
		errs = append(errs, field.Invalid(field.NewPath("status", "Phase"), ns.Status.Phase, "may only be 'Terminating' if `deletionTimestamp` is not empty"))
	}
	return errs
}

// validateNode is ValidateNode, and ValidateNodeUpdate when old is set.
func validateNode(n, old *corev1.Node) field.ErrorList {
	metaPath := field.NewPath("metadata")
	var errs field.ErrorList
	if old != nil {
		errs = apimachineryvalidation.ValidateObjectMetaUpdate(&n.ObjectMeta, &old.ObjectMeta, metaPath)
	} else {
		errs = validateMeta(&n.ObjectMeta, nil, false, apimachineryvalidation.NameIsDNSSubdomain)
	}
	errs = append(errs, validateNodeTaints(n.Spec.Taints, metaPath.Child("taints"))...)
	for k, v := range n.Status.Capacity {
		errs = append(errs, validateResourceQuantity(k, v, field.NewPath("status", "capacity", string(k)))...)
	}
	for k, v := range n.Status.Allocatable {
		errs = append(errs, validateResourceQuantity(k, v, field.NewPath("status", "allocatable", string(k)))...)
	}
	for i, cidr := range n.Spec.PodCIDRs {
		errs = append(errs, validation.IsValidCIDR(field.NewPath("spec", "podCIDRs").Index(i), cidr)...)
	}
	if old == nil {
		return errs
	}
	addresses := map[corev1.NodeAddress]bool{}
	for i, a := range n.Status.Addresses {
		if addresses[a] {
			errs = append(errs, field.Duplicate(field.NewPath("status", "addresses").Index(i), a))
		}
		addresses[a] = true
	}
	if len(old.Spec.PodCIDRs) > 0 && !reflect.DeepEqual(old.Spec.PodCIDRs, n.Spec.PodCIDRs) {
		errs = append(errs, field.Forbidden(field.NewPath("spec", "podCIDRs"), "node updates may not change podCIDR except from \"\" to valid"))
	}
	if old.Spec.ProviderID != "" && old.Spec.ProviderID != n.Spec.ProviderID {
		errs = append(errs, field.Forbidden(field.NewPath("spec", "providerID"), "node updates may not change providerID except from \"\" to valid"))
	}
	if n.Spec.DoNotUseExternalID != old.Spec.DoNotUseExternalID {
		errs = append(errs, field.Forbidden(field.NewPath("spec", "externalID"), "may not be updated"))
	}
	return errs
}

func validateNodeTaints(taints []corev1.Taint, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	unique := map[corev1.TaintEffect]sets.Set[string]{}
	for i, t := range taints {
		p := fld.Index(i)
		errs = append(errs, metav1validation.ValidateLabelName(t.Key, p.Child("key"))...)
		if msgs := validation.IsValidLabelValue(t.Value); len(msgs) != 0 {
			errs = append(errs, field.Invalid(p.Child("value"), t.Value, strings.Join(msgs, ";")))
		}
		errs = append(errs, validateTaintEffect(t.Effect, p.Child("effect"))...)
		if unique[t.Effect].Has(t.Key) {
			dup := field.Duplicate(p, t)
			dup.Detail = "taints must be unique by key and effect pair"
			errs = append(errs, dup)
			continue
		}
		if unique[t.Effect] == nil {
			unique[t.Effect] = sets.New[string]()
		}
		unique[t.Effect].Insert(t.Key)
	}
	return errs
}

func validateEndpointSubsets(subsets []corev1.EndpointSubset, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i := range subsets {
		ss := &subsets[i]
		p := fld.Index(i)
		if len(ss.Addresses) == 0 && len(ss.NotReadyAddresses) == 0 {
			errs = append(errs, field.Required(p, "must specify `addresses` or `notReadyAddresses`"))
		}
		for j := range ss.Addresses {
			errs = append(errs, validateEndpointAddress(&ss.Addresses[j], p.Child("addresses").Index(j))...)
		}
		for j := range ss.NotReadyAddresses {
			errs = append(errs, validateEndpointAddress(&ss.NotReadyAddresses[j], p.Child("notReadyAddresses").Index(j))...)
		}
		for j := range ss.Ports {
			errs = append(errs, validateEndpointPort(&ss.Ports[j], len(ss.Ports) > 1, p.Child("ports").Index(j))...)
		}
	}
	return errs
}

func validateEndpointAddress(a *corev1.EndpointAddress, fld *field.Path) field.ErrorList {
	errs := validation.IsValidIP(fld.Child("ip"), a.IP)
	if a.Hostname != "" {
		errs = append(errs, validateDNS1123Label(a.Hostname, fld.Child("hostname"))...)
	}
	if a.NodeName != nil {
		errs = append(errs, validateNameWith(apimachineryvalidation.NameIsDNSSubdomain, *a.NodeName, fld.Child("nodeName"))...)
	}
	return append(errs, validateNonSpecialIP(a.IP, fld.Child("ip"))...)
}

// validateNonSpecialIP is ValidateNonSpecialIP: endpoint addresses may not be
// unspecified, loopback or link-local.
func validateNonSpecialIP(addr string, fld *field.Path) field.ErrorList {
	ip := net.ParseIP(addr)
	if ip == nil {
		return field.ErrorList{field.Invalid(fld, addr, "must be a valid IP address")}
	}
	var errs field.ErrorList
	if ip.IsUnspecified() {
		errs = append(errs, field.Invalid(fld, addr, fmt.Sprintf("may not be unspecified (%v)", addr)))
	}
	if ip.IsLoopback() {
		errs = append(errs, field.Invalid(fld, addr, "may not be in the loopback range (127.0.0.0/8, ::1/128)"))
	}
	if ip.IsLinkLocalUnicast() {
		errs = append(errs, field.Invalid(fld, addr, "may not be in the link-local range (169.254.0.0/16, fe80::/10)"))
	}
	if ip.IsLinkLocalMulticast() {
		errs = append(errs, field.Invalid(fld, addr, "may not be in the link-local multicast range (224.0.0.0/24, ff02::/10)"))
	}
	return errs
}

func validateEndpointPort(port *corev1.EndpointPort, requireName bool, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	if requireName && port.Name == "" {
		errs = append(errs, field.Required(fld.Child("name"), ""))
	} else if port.Name != "" {
		errs = append(errs, validateDNS1123Label(port.Name, fld.Child("name"))...)
	}
	for _, msg := range validation.IsValidPortNum(int(port.Port)) {
		errs = append(errs, field.Invalid(fld.Child("port"), port.Port, msg))
	}
	if port.Protocol == "" {
		errs = append(errs, field.Required(fld.Child("protocol"), ""))
	} else if !validProtocol(port.Protocol) {
		errs = append(errs, field.NotSupported(fld.Child("protocol"), port.Protocol, supportedPortProtocols))
	}
	if port.AppProtocol != nil {
		errs = append(errs, validateQualifiedName(*port.AppProtocol, fld.Child("appProtocol"))...)
	}
	return errs
}

// Event field limits from pkg/apis/core/validation/events.go.
const (
	reportingInstanceLengthLimit = 128
	actionLengthLimit            = 128
	reasonLengthLimit            = 128
	noteLengthLimit              = 1024
)

// validateEvent is the legacy (core/v1) event validation kube-apiserver
// applies: the involved object's namespace must match the event's, and
// events with an eventTime must name their reporter, action and reason.
func validateEvent(e *corev1.Event, old runtime.Object) field.ErrorList {
	var errs field.ErrorList
	if old != nil {
		errs = append(errs, validateMetaUpdateOnly(e, old)...)
	}
	mismatch := field.Invalid(field.NewPath("involvedObject", "namespace"), e.InvolvedObject.Namespace, "does not match event.namespace")
	if e.EventTime.Time.Equal(time.Time{}) {
		if e.InvolvedObject.Namespace == "" {
			if e.Namespace != metav1.NamespaceNone && e.Namespace != metav1.NamespaceDefault {
				errs = append(errs, mismatch)
			}
		} else if e.Namespace != e.InvolvedObject.Namespace {
			errs = append(errs, mismatch)
		}
	} else {
		if e.InvolvedObject.Namespace == "" && e.Namespace != metav1.NamespaceDefault && e.Namespace != metav1.NamespaceSystem {
			errs = append(errs, mismatch)
		}
		if e.ReportingController == "" {
			errs = append(errs, field.Required(field.NewPath("reportingComponent"), ""))
		}
		errs = append(errs, validateQualifiedName(e.ReportingController, field.NewPath("reportingComponent"))...)
		if e.ReportingInstance == "" {
			errs = append(errs, field.Required(field.NewPath("reportingInstance"), ""))
		}
		if len(e.ReportingInstance) > reportingInstanceLengthLimit {
			errs = append(errs, field.Invalid(field.NewPath("reportingInstance"), "", fmt.Sprintf("can have at most %v characters", reportingInstanceLengthLimit)))
		}
		if e.Action == "" {
			errs = append(errs, field.Required(field.NewPath("action"), ""))
		}
		if len(e.Action) > actionLengthLimit {
			errs = append(errs, field.Invalid(field.NewPath("action"), "", fmt.Sprintf("can have at most %v characters", actionLengthLimit)))
		}
		if e.Reason == "" {
			errs = append(errs, field.Required(field.NewPath("reason"), ""))
		}
		if len(e.Reason) > reasonLengthLimit {
			errs = append(errs, field.Invalid(field.NewPath("reason"), "", fmt.Sprintf("can have at most %v characters", reasonLengthLimit)))
		}
		if len(e.Message) > noteLengthLimit {
			errs = append(errs, field.Invalid(field.NewPath("message"), "", fmt.Sprintf("can have at most %v characters", noteLengthLimit)))
		}
	}
	for _, msg := range validation.IsDNS1123Subdomain(e.Namespace) {
		errs = append(errs, field.Invalid(field.NewPath("namespace"), e.Namespace, msg))
	}
	return errs
}

// validateLeaseSpec is ValidateLeaseSpec.
func validateLeaseSpec(spec *coordinationv1.LeaseSpec, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	if spec.LeaseDurationSeconds != nil && *spec.LeaseDurationSeconds <= 0 {
		errs = append(errs, field.Invalid(fld.Child("leaseDurationSeconds"), spec.LeaseDurationSeconds, "must be greater than 0"))
	}
	if spec.LeaseTransitions != nil && *spec.LeaseTransitions < 0 {
		errs = append(errs, field.Invalid(fld.Child("leaseTransitions"), spec.LeaseTransitions, "must be greater than or equal to 0"))
	}
	return errs
}
