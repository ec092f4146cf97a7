package admission

import (
	"fmt"
	"math"
	"reflect"
	"regexp"
	"slices"
	"strings"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// updatablePodSpecFields are listed, in Kubernetes' words, in the error for
// a forbidden pod update.
var updatablePodSpecFields = []string{
	"`spec.containers[*].image`",
	"`spec.initContainers[*].image`",
	"`spec.activeDeadlineSeconds`",
	"`spec.tolerations` (only additions to existing tolerations)",
	"`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was previously negative)",
}

var standardFinalizers = sets.New(string(corev1.FinalizerKubernetes), "orphan", "foregroundDeletion")

func validateKubeFinalizerName(name string, fld *field.Path) field.ErrorList {
	if !strings.Contains(name, "/") && !standardFinalizers.Has(name) {
		return field.ErrorList{field.Invalid(fld, name, "name is neither a standard finalizer name nor is it fully qualified")}
	}
	return nil
}

func validateDNS1123Label(value string, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range validation.IsDNS1123Label(value) {
		errs = append(errs, field.Invalid(fld, value, msg))
	}
	return errs
}

func validateDNS1123Subdomain(value string, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range validation.IsDNS1123Subdomain(value) {
		errs = append(errs, field.Invalid(fld, value, msg))
	}
	return errs
}

func validateQualifiedName(value string, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range validation.IsQualifiedName(value) {
		errs = append(errs, field.Invalid(fld, value, msg))
	}
	return errs
}

func validateNameWith(fn apimachineryvalidation.ValidateNameFunc, value string, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, msg := range fn(value, false) {
		errs = append(errs, field.Invalid(fld, value, msg))
	}
	return errs
}

// validatePod is ValidatePodCreate.
func validatePod(pod *corev1.Pod) field.ErrorList {
	errs := validatePodMetadataAndSpec(pod, nil)
	specPath := field.NewPath("spec")
	if len(pod.Spec.EphemeralContainers) > 0 {
		errs = append(errs, field.Forbidden(specPath.Child("ephemeralContainers"), "cannot be set on create"))
	}
	if pod.Spec.NodeName != "" && len(pod.Spec.SchedulingGates) != 0 {
		errs = append(errs, field.Forbidden(specPath.Child("nodeName"), "cannot be set until all schedulingGates have been cleared"))
	}
	return errs
}

func validatePodMetadataAndSpec(pod *corev1.Pod, old *corev1.Pod) field.ErrorList {
	specPath := field.NewPath("spec")
	var oldObj runtime.Object
	if old != nil {
		oldObj = old
	}
	errs := validateMeta(&pod.ObjectMeta, oldObj, true, apimachineryvalidation.NameIsDNSSubdomain)
	errs = append(errs, validatePodSpec(&pod.Spec, specPath, true)...)
	if pod.Spec.ServiceAccountName == "" {
		for vi, v := range pod.Spec.Volumes {
			if v.Projected == nil {
				continue
			}
			for si, src := range v.Projected.Sources {
				if src.ServiceAccountToken != nil {
					errs = append(errs, field.Forbidden(specPath.Child("volumes").Index(vi).Child("projected", "sources").Index(si).Child("serviceAccountToken"),
						"must not be specified when serviceAccountName is not set"))
				}
			}
		}
	}
	errs = append(errs, validateImagesHaveNoWhitespace(pod.Spec.Containers, specPath.Child("containers"))...)
	errs = append(errs, validateImagesHaveNoWhitespace(pod.Spec.InitContainers, specPath.Child("initContainers"))...)
	return errs
}

func validateImagesHaveNoWhitespace(containers []corev1.Container, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, c := range containers {
		if len(c.Image) != len(strings.TrimSpace(c.Image)) {
			errs = append(errs, field.Invalid(fld.Index(i).Child("image"), c.Image, "must not have leading or trailing whitespace"))
		}
	}
	return errs
}

// validatePodTemplateSpec is ValidatePodTemplateSpec.
func validatePodTemplateSpec(t *corev1.PodTemplateSpec, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	errs = append(errs, metav1validation.ValidateLabels(t.Labels, fld.Child("labels"))...)
	errs = append(errs, apimachineryvalidation.ValidateAnnotations(t.Annotations, fld.Child("annotations"))...)
	errs = append(errs, validatePodSpec(&t.Spec, fld.Child("spec"), false)...)
	if len(t.Spec.EphemeralContainers) > 0 {
		errs = append(errs, field.Forbidden(fld.Child("spec", "ephemeralContainers"), "ephemeral containers not allowed in pod template"))
	}
	return errs
}

// validatePodSpec is ValidatePodSpec for the fields Glassplane serves.
// isPod is true when the spec belongs to a Pod rather than a template.
func validatePodSpec(spec *corev1.PodSpec, fld *field.Path, isPod bool) field.ErrorList {
	var errs field.ErrorList
	if spec.TerminationGracePeriodSeconds == nil {
		errs = append(errs, field.Required(fld.Child("terminationGracePeriodSeconds"), ""))
	}
	vols, vErrs := validateVolumes(spec.Volumes, fld.Child("volumes"))
	errs = append(errs, vErrs...)
	errs = append(errs, validateContainers(spec.Containers, vols, spec.TerminationGracePeriodSeconds, fld.Child("containers"), spec.RestartPolicy)...)
	errs = append(errs, validateInitContainers(spec.InitContainers, spec.Containers, vols, fld.Child("initContainers"), spec.RestartPolicy)...)
	errs = append(errs, validateEphemeralContainers(spec, vols, fld.Child("ephemeralContainers"))...)
	if sc := spec.SecurityContext; sc != nil {
		errs = append(errs, validateSysctls(sc.Sysctls, fld.Child("securityContext", "sysctls"))...)
	}
	if spec.HostNetwork {
		for i, c := range spec.Containers {
			for j, p := range c.Ports {
				if (isPod || p.HostPort != 0) && p.HostPort != p.ContainerPort {
					errs = append(errs, field.Invalid(fld.Child("containers").Index(i).Child("ports").Index(j).Child("hostPort"), p.HostPort, "must match `containerPort` when `hostNetwork` is true"))
				}
			}
		}
	}
	errs = append(errs, validateRestartPolicy(spec.RestartPolicy, fld.Child("restartPolicy"))...)
	errs = append(errs, validateDNSPolicy(spec.DNSPolicy, fld.Child("dnsPolicy"))...)
	errs = append(errs, metav1validation.ValidateLabels(spec.NodeSelector, fld.Child("nodeSelector"))...)
	for i, s := range spec.ImagePullSecrets {
		if !reflect.DeepEqual(corev1.LocalObjectReference{Name: s.Name}, s) {
			errs = append(errs, field.Invalid(fld.Child("imagePullSecrets").Index(i), s, "only name may be set"))
		}
	}
	errs = append(errs, validateAffinity(spec.Affinity, fld.Child("affinity"))...)
	errs = append(errs, validatePodDNSConfig(spec.DNSConfig, spec.DNSPolicy, fld.Child("dnsConfig"))...)
	for i, g := range spec.ReadinessGates {
		errs = append(errs, validateQualifiedName(string(g.ConditionType), fld.Child("readinessGates").Index(i).Child("conditionType"))...)
	}
	seenGates := sets.New[string]()
	for i, g := range spec.SchedulingGates {
		errs = append(errs, validateQualifiedName(g.Name, fld.Child("schedulingGates").Index(i))...)
		if seenGates.Has(g.Name) {
			errs = append(errs, field.Duplicate(fld.Child("schedulingGates").Index(i), g.Name))
		}
		seenGates.Insert(g.Name)
	}
	if spec.ServiceAccountName != "" {
		errs = append(errs, validateNameWith(apimachineryvalidation.ValidateServiceAccountName, spec.ServiceAccountName, fld.Child("serviceAccountName"))...)
	}
	if spec.NodeName != "" {
		errs = append(errs, validateNameWith(apimachineryvalidation.NameIsDNSSubdomain, spec.NodeName, fld.Child("nodeName"))...)
	}
	if spec.ActiveDeadlineSeconds != nil {
		if v := *spec.ActiveDeadlineSeconds; v < 1 || v > math.MaxInt32 {
			errs = append(errs, field.Invalid(fld.Child("activeDeadlineSeconds"), v, validation.InclusiveRangeError(1, math.MaxInt32)))
		}
	}
	if spec.Hostname != "" {
		errs = append(errs, validateDNS1123Label(spec.Hostname, fld.Child("hostname"))...)
	}
	if spec.Subdomain != "" {
		errs = append(errs, validateDNS1123Label(spec.Subdomain, fld.Child("subdomain"))...)
	}
	if len(spec.Tolerations) > 0 {
		errs = append(errs, validateTolerations(spec.Tolerations, fld.Child("tolerations"))...)
	}
	for i, h := range spec.HostAliases {
		errs = append(errs, validation.IsValidIP(fld.Child("hostAliases").Index(i).Child("ip"), h.IP)...)
		for j, name := range h.Hostnames {
			errs = append(errs, validateDNS1123Subdomain(name, fld.Child("hostAliases").Index(i).Child("hostnames").Index(j))...)
		}
	}
	if spec.PriorityClassName != "" {
		errs = append(errs, validateNameWith(apimachineryvalidation.NameIsDNSSubdomain, spec.PriorityClassName, fld.Child("priorityClassName"))...)
	}
	if spec.RuntimeClassName != nil {
		errs = append(errs, validateNameWith(apimachineryvalidation.NameIsDNSSubdomain, *spec.RuntimeClassName, fld.Child("runtimeClassName"))...)
	}
	if spec.PreemptionPolicy != nil {
		switch *spec.PreemptionPolicy {
		case corev1.PreemptLowerPriority, corev1.PreemptNever:
		case "":
			errs = append(errs, field.Required(fld.Child("preemptionPolicy"), ""))
		default:
			errs = append(errs, field.NotSupported(fld.Child("preemptionPolicy"), spec.PreemptionPolicy, []corev1.PreemptionPolicy{corev1.PreemptLowerPriority, corev1.PreemptNever}))
		}
	}
	if spec.OS != nil {
		if spec.OS.Name == "" {
			errs = append(errs, field.Required(fld.Child("os", "name"), "cannot be empty"))
		} else if spec.OS.Name != corev1.Linux && spec.OS.Name != corev1.Windows {
			errs = append(errs, field.NotSupported(fld.Child("os"), spec.OS.Name, []corev1.OSName{corev1.Linux, corev1.Windows}))
		}
	}
	return errs
}

func validateRestartPolicy(p corev1.RestartPolicy, fld *field.Path) field.ErrorList {
	switch p {
	case corev1.RestartPolicyAlways, corev1.RestartPolicyOnFailure, corev1.RestartPolicyNever:
		return nil
	case "":
		return field.ErrorList{field.Required(fld, "")}
	default:
		return field.ErrorList{field.NotSupported(fld, p, []corev1.RestartPolicy{corev1.RestartPolicyAlways, corev1.RestartPolicyOnFailure, corev1.RestartPolicyNever})}
	}
}

func validateDNSPolicy(p corev1.DNSPolicy, fld *field.Path) field.ErrorList {
	valid := []corev1.DNSPolicy{corev1.DNSClusterFirstWithHostNet, corev1.DNSClusterFirst, corev1.DNSDefault, corev1.DNSNone}
	switch p {
	case corev1.DNSClusterFirstWithHostNet, corev1.DNSClusterFirst, corev1.DNSDefault, corev1.DNSNone:
		return nil
	case "":
		return field.ErrorList{field.Required(fld, "")}
	default:
		return field.ErrorList{field.NotSupported(fld, &p, valid)}
	}
}

// validateVolumes is ValidateVolumes: names are unique DNS labels and every
// volume has exactly one source. It returns the valid volumes by name.
func validateVolumes(volumes []corev1.Volume, fld *field.Path) (map[string]corev1.VolumeSource, field.ErrorList) {
	var errs field.ErrorList
	names := sets.New[string]()
	vols := map[string]corev1.VolumeSource{}
	for i, v := range volumes {
		idx := fld.Index(i)
		namePath := idx.Child("name")
		el := validateVolumeSource(&v.VolumeSource, idx)
		if v.Name == "" {
			el = append(el, field.Required(namePath, ""))
		} else {
			el = append(el, validateDNS1123Label(v.Name, namePath)...)
		}
		if names.Has(v.Name) {
			el = append(el, field.Duplicate(namePath, v.Name))
		}
		if len(el) == 0 {
			names.Insert(v.Name)
			vols[v.Name] = v.VolumeSource
		} else {
			errs = append(errs, el...)
		}
	}
	return vols, errs
}

// volumeSourceOrder lists the volume sources in the order
// validateVolumeSource checks them, with the field name its "more than 1
// volume type" error uses (Kubernetes' spelling, "downwarAPI" included).
var volumeSourceOrder = []struct{ jsonName, errName string }{
	{"emptyDir", "emptyDir"}, {"hostPath", "hostPath"}, {"gitRepo", "gitRepo"}, {"gcePersistentDisk", "gcePersistentDisk"},
	{"awsElasticBlockStore", "awsElasticBlockStore"}, {"secret", "secret"}, {"nfs", "nfs"}, {"iscsi", "iscsi"},
	{"glusterfs", "glusterfs"}, {"flocker", "flocker"}, {"persistentVolumeClaim", "persistentVolumeClaim"}, {"rbd", "rbd"},
	{"cinder", "cinder"}, {"cephfs", "cephFS"}, {"quobyte", "quobyte"}, {"downwardAPI", "downwarAPI"}, {"fc", "fc"},
	{"flexVolume", "flexVolume"}, {"configMap", "configMap"}, {"azureFile", "azureFile"}, {"vsphereVolume", "vsphereVolume"},
	{"photonPersistentDisk", "photonPersistentDisk"}, {"portworxVolume", "portworxVolume"}, {"azureDisk", "azureDisk"},
	{"storageos", "storageos"}, {"projected", "projected"}, {"scaleIO", "scaleIO"}, {"csi", "csi"}, {"ephemeral", "ephemeral"},
	{"image", "image"},
}

// volumeSourcesSet returns the JSON names of the sources set in s.
func volumeSourcesSet(s *corev1.VolumeSource) map[string]bool {
	set := map[string]bool{}
	rv := reflect.ValueOf(*s)
	rt := rv.Type()
	for i := 0; i < rt.NumField(); i++ {
		if !rv.Field(i).IsNil() {
			set[strings.Split(rt.Field(i).Tag.Get("json"), ",")[0]] = true
		}
	}
	return set
}

// validateVolumeSource checks that exactly one source is set, and the
// required fields of the sources Glassplane's node agent understands.
func validateVolumeSource(s *corev1.VolumeSource, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	set := volumeSourcesSet(s)
	count := 0
	for _, src := range volumeSourceOrder {
		if !set[src.jsonName] {
			continue
		}
		count++
		if count > 1 {
			errs = append(errs, field.Forbidden(fld.Child(src.errName), "may not specify more than 1 volume type"))
		}
	}
	if count == 0 {
		errs = append(errs, field.Required(fld, "must specify a volume type"))
	}
	if s.HostPath != nil && s.HostPath.Path == "" {
		errs = append(errs, field.Required(fld.Child("hostPath", "path"), ""))
	}
	if s.Image != nil {
		if s.Image.Reference == "" {
			errs = append(errs, field.Required(fld.Child("image", "reference"), ""))
		}
		switch s.Image.PullPolicy {
		case corev1.PullAlways, corev1.PullIfNotPresent, corev1.PullNever, "":
		default:
			errs = append(errs, field.NotSupported(fld.Child("image", "pullPolicy"), s.Image.PullPolicy, []corev1.PullPolicy{corev1.PullAlways, corev1.PullIfNotPresent, corev1.PullNever}))
		}
	}
	if s.EmptyDir != nil && s.EmptyDir.SizeLimit != nil && s.EmptyDir.SizeLimit.Sign() < 0 {
		errs = append(errs, field.Forbidden(fld.Child("emptyDir", "sizeLimit"), "SizeLimit field must be a valid resource quantity"))
	}
	if s.Secret != nil && s.Secret.SecretName == "" {
		errs = append(errs, field.Required(fld.Child("secret", "secretName"), ""))
	}
	if s.ConfigMap != nil && s.ConfigMap.Name == "" {
		errs = append(errs, field.Required(fld.Child("configMap", "name"), ""))
	}
	if s.PersistentVolumeClaim != nil && s.PersistentVolumeClaim.ClaimName == "" {
		errs = append(errs, field.Required(fld.Child("persistentVolumeClaim", "claimName"), ""))
	}
	if s.Projected != nil {
		for i, src := range s.Projected.Sources {
			if src.PodCertificate != nil {
				errs = append(errs, validatePodCertificateProjection(src.PodCertificate, fld.Child("projected", "sources").Index(i).Child("podCertificate"))...)
			}
		}
	}
	return errs
}

// PodCertificate lifetimes, as upstream's: at least an hour, at most 91
// days, and a day for kubernetes.io signers (also the default).
const (
	MinPodCertificateSeconds        = 3600
	MaxPodCertificateSeconds        = 91 * 24 * 3600
	MaxKubernetesPodCertificateSecs = 24 * 3600
)

// ValidatePodCertificateLifetime checks a maxExpirationSeconds of a pod's
// podCertificate projection or of a PodCertificateRequest for signer.
func ValidatePodCertificateLifetime(signer string, secs *int32, fld *field.Path) field.ErrorList {
	if secs == nil {
		return nil
	}
	limit := int32(MaxPodCertificateSeconds)
	if strings.HasPrefix(signer, "kubernetes.io/") {
		limit = MaxKubernetesPodCertificateSecs
	}
	var errs field.ErrorList
	if *secs < MinPodCertificateSeconds {
		errs = append(errs, field.Invalid(fld, *secs, fmt.Sprintf("if provided, maxExpirationSeconds must be >= %d", MinPodCertificateSeconds)))
	}
	if *secs > limit {
		errs = append(errs, field.Invalid(fld, *secs, fmt.Sprintf("if provided, maxExpirationSeconds must be <= %d", limit)))
	}
	return errs
}

// podCertificateKeyTypes are the key types a node generates for a pod.
var podCertificateKeyTypes = []string{"RSA3072", "RSA4096", "ECDSAP256", "ECDSAP384", "ECDSAP521", "ED25519"}

// validatePodCertificateProjection checks a projected podCertificate
// source as upstream does: a signer name, a known key type and a lifetime
// in range.
func validatePodCertificateProjection(pc *corev1.PodCertificateProjection, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	if pc.SignerName == "" {
		errs = append(errs, field.Required(fld.Child("signerName"), ""))
	} else {
		for _, msg := range validation.IsQualifiedName(pc.SignerName) {
			errs = append(errs, field.Invalid(fld.Child("signerName"), pc.SignerName, msg))
		}
	}
	if !slices.Contains(podCertificateKeyTypes, pc.KeyType) {
		errs = append(errs, field.NotSupported(fld.Child("keyType"), pc.KeyType, podCertificateKeyTypes))
	}
	errs = append(errs, ValidatePodCertificateLifetime(pc.SignerName, pc.MaxExpirationSeconds, fld.Child("maxExpirationSeconds"))...)
	return errs
}

// validateContainers is validateContainers: at least one, unique names,
// probes and lifecycle, no per-container restartPolicy, no host port clashes.
func validateContainers(containers []corev1.Container, vols map[string]corev1.VolumeSource, grace *int64, fld *field.Path, podRestart corev1.RestartPolicy) field.ErrorList {
	if len(containers) == 0 {
		return field.ErrorList{field.Required(fld, "")}
	}
	var errs field.ErrorList
	names := sets.New[string]()
	for i := range containers {
		c := &containers[i]
		p := fld.Index(i)
		errs = append(errs, validateContainerCommon(c, vols, p, podRestart)...)
		if names.Has(c.Name) {
			errs = append(errs, field.Duplicate(p.Child("name"), c.Name))
		} else {
			names.Insert(c.Name)
		}
		if c.Lifecycle != nil {
			errs = append(errs, validateLifecycle(c.Lifecycle, grace, p.Child("lifecycle"))...)
		}
		errs = append(errs, validateProbe(c.LivenessProbe, p.Child("livenessProbe"), true)...)
		errs = append(errs, validateProbe(c.ReadinessProbe, p.Child("readinessProbe"), false)...)
		errs = append(errs, validateProbe(c.StartupProbe, p.Child("startupProbe"), true)...)
		if c.ReadinessProbe != nil && c.ReadinessProbe.TerminationGracePeriodSeconds != nil {
			errs = append(errs, field.Invalid(p.Child("readinessProbe", "terminationGracePeriodSeconds"), c.ReadinessProbe.TerminationGracePeriodSeconds, "must not be set for readinessProbes"))
		}
		if c.RestartPolicy != nil {
			errs = append(errs, field.Forbidden(p.Child("restartPolicy"), "may not be set for non-init containers"))
		}
	}
	return append(errs, checkHostPortConflicts(containers, fld)...)
}

func validateInitContainers(containers, regular []corev1.Container, vols map[string]corev1.VolumeSource, fld *field.Path, podRestart corev1.RestartPolicy) field.ErrorList {
	var errs field.ErrorList
	names := sets.New[string]()
	for _, c := range regular {
		names.Insert(c.Name)
	}
	for i := range containers {
		c := &containers[i]
		p := fld.Index(i)
		errs = append(errs, validateContainerCommon(c, vols, p, podRestart)...)
		restartAlways := false
		if c.RestartPolicy != nil {
			if *c.RestartPolicy != corev1.ContainerRestartPolicyAlways {
				errs = append(errs, field.NotSupported(p.Child("restartPolicy"), *c.RestartPolicy, []corev1.ContainerRestartPolicy{corev1.ContainerRestartPolicyAlways}))
			}
			restartAlways = *c.RestartPolicy == corev1.ContainerRestartPolicyAlways
		}
		if names.Has(c.Name) {
			errs = append(errs, field.Duplicate(p.Child("name"), c.Name))
		} else if c.Name != "" {
			names.Insert(c.Name)
		}
		errs = append(errs, checkHostPortConflicts([]corev1.Container{*c}, fld)...)
		if !restartAlways {
			for _, probe := range []struct {
				name string
				set  bool
			}{{"lifecycle", c.Lifecycle != nil}, {"livenessProbe", c.LivenessProbe != nil}, {"readinessProbe", c.ReadinessProbe != nil}, {"startupProbe", c.StartupProbe != nil}} {
				if probe.set {
					errs = append(errs, field.Forbidden(p.Child(probe.name), "may not be set for init containers without restartPolicy=Always"))
				}
			}
		}
	}
	return errs
}

func validateEphemeralContainers(spec *corev1.PodSpec, vols map[string]corev1.VolumeSource, fld *field.Path) field.ErrorList {
	if len(spec.EphemeralContainers) == 0 {
		return nil
	}
	var errs field.ErrorList
	others := sets.New[string]()
	for _, c := range spec.Containers {
		others.Insert(c.Name)
	}
	for _, c := range spec.InitContainers {
		others.Insert(c.Name)
	}
	all := others.Clone()
	for i, ec := range spec.EphemeralContainers {
		p := fld.Index(i)
		c := corev1.Container(ec.EphemeralContainerCommon)
		errs = append(errs, validateContainerCommon(&c, vols, p, spec.RestartPolicy)...)
		if all.Has(ec.Name) {
			errs = append(errs, field.Duplicate(p.Child("name"), ec.Name))
		} else {
			all.Insert(ec.Name)
		}
		if ec.TargetContainerName != "" && !others.Has(ec.TargetContainerName) {
			errs = append(errs, field.NotFound(p.Child("targetContainerName"), ec.TargetContainerName))
		}
	}
	return errs
}

// validateContainerCommon is validateContainerCommon: name, image,
// termination message policy, ports, env, mounts, pull policy, resources.
func validateContainerCommon(c *corev1.Container, vols map[string]corev1.VolumeSource, p *field.Path, podRestart corev1.RestartPolicy) field.ErrorList {
	var errs field.ErrorList
	if c.Name == "" {
		errs = append(errs, field.Required(p.Child("name"), ""))
	} else {
		errs = append(errs, validateDNS1123Label(c.Name, p.Child("name"))...)
	}
	if c.Image == "" {
		errs = append(errs, field.Required(p.Child("image"), ""))
	}
	switch c.TerminationMessagePolicy {
	case corev1.TerminationMessageReadFile, corev1.TerminationMessageFallbackToLogsOnError:
	case "":
		errs = append(errs, field.Required(p.Child("terminationMessagePolicy"), ""))
	default:
		errs = append(errs, field.NotSupported(p.Child("terminationMessagePolicy"), c.TerminationMessagePolicy,
			[]corev1.TerminationMessagePolicy{corev1.TerminationMessageReadFile, corev1.TerminationMessageFallbackToLogsOnError}))
	}
	errs = append(errs, validateContainerPorts(c.Ports, p.Child("ports"))...)
	errs = append(errs, validateEnv(c.Env, p.Child("env"))...)
	errs = append(errs, validateEnvFrom(c.EnvFrom, p.Child("envFrom"))...)
	errs = append(errs, validateVolumeMounts(c.VolumeMounts, vols, p.Child("volumeMounts"))...)
	switch c.ImagePullPolicy {
	case corev1.PullAlways, corev1.PullIfNotPresent, corev1.PullNever:
	case "":
		errs = append(errs, field.Required(p.Child("imagePullPolicy"), ""))
	default:
		errs = append(errs, field.NotSupported(p.Child("imagePullPolicy"), c.ImagePullPolicy, []corev1.PullPolicy{corev1.PullAlways, corev1.PullIfNotPresent, corev1.PullNever}))
	}
	errs = append(errs, validateResourceRequirements(&c.Resources, p.Child("resources"))...)
	for i, rp := range c.ResizePolicy {
		if podRestart == corev1.RestartPolicyNever && rp.RestartPolicy != corev1.NotRequired {
			errs = append(errs, field.Invalid(p.Child("resizePolicy"), rp.RestartPolicy, "must be 'NotRequired' when `restartPolicy` is 'Never'"))
		}
		if rp.ResourceName != corev1.ResourceCPU && rp.ResourceName != corev1.ResourceMemory {
			errs = append(errs, field.NotSupported(p.Child("resizePolicy").Index(i), rp.ResourceName, []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory}))
		}
	}
	if sc := c.SecurityContext; sc != nil {
		if sc.RunAsUser != nil {
			for _, msg := range validation.IsValidUserID(*sc.RunAsUser) {
				errs = append(errs, field.Invalid(p.Child("securityContext", "runAsUser"), *sc.RunAsUser, msg))
			}
		}
		if sc.RunAsGroup != nil {
			for _, msg := range validation.IsValidGroupID(*sc.RunAsGroup) {
				errs = append(errs, field.Invalid(p.Child("securityContext", "runAsGroup"), *sc.RunAsGroup, msg))
			}
		}
		if sc.AllowPrivilegeEscalation != nil && !*sc.AllowPrivilegeEscalation && sc.Privileged != nil && *sc.Privileged {
			errs = append(errs, field.Invalid(p.Child("securityContext"), sc, "cannot set `allowPrivilegeEscalation` to false and `privileged` to true"))
		}
	}
	return errs
}

var supportedPortProtocols = []corev1.Protocol{corev1.ProtocolSCTP, corev1.ProtocolTCP, corev1.ProtocolUDP}

func validProtocol(p corev1.Protocol) bool {
	return p == corev1.ProtocolTCP || p == corev1.ProtocolUDP || p == corev1.ProtocolSCTP
}

func validateContainerPorts(ports []corev1.ContainerPort, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	names := sets.New[string]()
	for i, port := range ports {
		p := fld.Index(i)
		if port.Name != "" {
			if msgs := validation.IsValidPortName(port.Name); len(msgs) != 0 {
				for _, msg := range msgs {
					errs = append(errs, field.Invalid(p.Child("name"), port.Name, msg))
				}
			} else if names.Has(port.Name) {
				errs = append(errs, field.Duplicate(p.Child("name"), port.Name))
			} else {
				names.Insert(port.Name)
			}
		}
		if port.ContainerPort == 0 {
			errs = append(errs, field.Required(p.Child("containerPort"), ""))
		} else {
			for _, msg := range validation.IsValidPortNum(int(port.ContainerPort)) {
				errs = append(errs, field.Invalid(p.Child("containerPort"), port.ContainerPort, msg))
			}
		}
		if port.HostPort != 0 {
			for _, msg := range validation.IsValidPortNum(int(port.HostPort)) {
				errs = append(errs, field.Invalid(p.Child("hostPort"), port.HostPort, msg))
			}
		}
		if port.Protocol == "" {
			errs = append(errs, field.Required(p.Child("protocol"), ""))
		} else if !validProtocol(port.Protocol) {
			errs = append(errs, field.NotSupported(p.Child("protocol"), port.Protocol, supportedPortProtocols))
		}
	}
	return errs
}

// checkHostPortConflicts is AccumulateUniqueHostPorts over one set of containers.
func checkHostPortConflicts(containers []corev1.Container, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	seen := sets.New[string]()
	for ci, c := range containers {
		for pi, port := range c.Ports {
			if port.HostPort == 0 {
				continue
			}
			key := fmt.Sprintf("%s/%s/%d", port.Protocol, port.HostIP, port.HostPort)
			if seen.Has(key) {
				errs = append(errs, field.Duplicate(fld.Index(ci).Child("ports").Index(pi).Child("hostPort"), key))
			} else {
				seen.Insert(key)
			}
		}
	}
	return errs
}

var validEnvFieldPaths = sets.New("metadata.name", "metadata.namespace", "metadata.uid", "spec.nodeName",
	"spec.serviceAccountName", "status.hostIP", "status.hostIPs", "status.podIP", "status.podIPs")

func validateEnv(vars []corev1.EnvVar, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, ev := range vars {
		p := fld.Index(i)
		if ev.Name == "" {
			errs = append(errs, field.Required(p.Child("name"), ""))
		} else {
			for _, msg := range validation.IsRelaxedEnvVarName(ev.Name) {
				errs = append(errs, field.Invalid(p.Child("name"), ev.Name, msg))
			}
		}
		errs = append(errs, validateEnvVarValueFrom(ev, p.Child("valueFrom"))...)
	}
	return errs
}

func validateEnvVarValueFrom(ev corev1.EnvVar, fld *field.Path) field.ErrorList {
	if ev.ValueFrom == nil {
		return nil
	}
	var errs field.ErrorList
	n := 0
	if fr := ev.ValueFrom.FieldRef; fr != nil {
		n++
		switch {
		case fr.APIVersion == "":
			errs = append(errs, field.Required(fld.Child("fieldRef", "apiVersion"), ""))
		case fr.FieldPath == "":
			errs = append(errs, field.Required(fld.Child("fieldRef", "fieldPath"), ""))
		case strings.HasPrefix(fr.FieldPath, "metadata.labels[") || strings.HasPrefix(fr.FieldPath, "metadata.annotations["):
		case !validEnvFieldPaths.Has(fr.FieldPath):
			errs = append(errs, field.NotSupported(fld.Child("fieldRef", "fieldPath"), fr.FieldPath, sets.List(validEnvFieldPaths)))
		}
	}
	if ev.ValueFrom.ResourceFieldRef != nil {
		n++
		if ev.ValueFrom.ResourceFieldRef.Resource == "" {
			errs = append(errs, field.Required(fld.Child("resourceFieldRef", "resource"), ""))
		}
	}
	if s := ev.ValueFrom.ConfigMapKeyRef; s != nil {
		n++
		errs = append(errs, validateKeySelector(s.Name, s.Key, fld.Child("configMapKeyRef"))...)
	}
	if s := ev.ValueFrom.SecretKeyRef; s != nil {
		n++
		errs = append(errs, validateKeySelector(s.Name, s.Key, fld.Child("secretKeyRef"))...)
	}
	switch {
	case n == 0:
		errs = append(errs, field.Invalid(fld, "", "must specify one of: `fieldRef`, `resourceFieldRef`, `configMapKeyRef` or `secretKeyRef`"))
	case ev.Value != "":
		errs = append(errs, field.Invalid(fld, "", "may not be specified when `value` is not empty"))
	case n > 1:
		errs = append(errs, field.Invalid(fld, "", "may not have more than one field specified at a time"))
	}
	return errs
}

func validateKeySelector(name, key string, fld *field.Path) field.ErrorList {
	errs := validateNameWith(apimachineryvalidation.NameIsDNSSubdomain, name, fld.Child("name"))
	if key == "" {
		return append(errs, field.Required(fld.Child("key"), ""))
	}
	for _, msg := range validation.IsConfigMapKey(key) {
		errs = append(errs, field.Invalid(fld.Child("key"), key, msg))
	}
	return errs
}

func validateEnvFrom(sources []corev1.EnvFromSource, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, ev := range sources {
		p := fld.Index(i)
		if ev.Prefix != "" {
			for _, msg := range validation.IsRelaxedEnvVarName(ev.Prefix) {
				errs = append(errs, field.Invalid(p.Child("prefix"), ev.Prefix, msg))
			}
		}
		n := 0
		if ev.ConfigMapRef != nil {
			n++
			errs = append(errs, validateEnvSourceName(ev.ConfigMapRef.Name, p.Child("configMapRef"))...)
		}
		if ev.SecretRef != nil {
			n++
			errs = append(errs, validateEnvSourceName(ev.SecretRef.Name, p.Child("secretRef"))...)
		}
		if n == 0 {
			errs = append(errs, field.Invalid(fld, "", "must specify one of: `configMapRef` or `secretRef`"))
		} else if n > 1 {
			errs = append(errs, field.Invalid(fld, "", "may not have more than one field specified at a time"))
		}
	}
	return errs
}

func validateEnvSourceName(name string, fld *field.Path) field.ErrorList {
	if name == "" {
		return field.ErrorList{field.Required(fld.Child("name"), "")}
	}
	var errs field.ErrorList
	for _, msg := range apimachineryvalidation.NameIsDNSSubdomain(name, true) {
		errs = append(errs, field.Invalid(fld.Child("name"), name, msg))
	}
	return errs
}

func validateVolumeMounts(mounts []corev1.VolumeMount, vols map[string]corev1.VolumeSource, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	mountPoints := sets.New[string]()
	for i, m := range mounts {
		p := fld.Index(i)
		if m.Name == "" {
			errs = append(errs, field.Required(p.Child("name"), ""))
		}
		if _, ok := vols[m.Name]; !ok {
			errs = append(errs, field.NotFound(p.Child("name"), m.Name))
		}
		if m.MountPath == "" {
			errs = append(errs, field.Required(p.Child("mountPath"), ""))
		}
		if mountPoints.Has(m.MountPath) {
			errs = append(errs, field.Invalid(p.Child("mountPath"), m.MountPath, "must be unique"))
		}
		mountPoints.Insert(m.MountPath)
		if m.SubPath != "" {
			errs = append(errs, validateLocalDescendingPath(m.SubPath, fld.Child("subPath"))...)
		}
		if m.SubPathExpr != "" {
			if m.SubPath != "" {
				errs = append(errs, field.Invalid(p.Child("subPathExpr"), m.SubPathExpr, "subPathExpr and subPath are mutually exclusive"))
			}
			errs = append(errs, validateLocalDescendingPath(m.SubPathExpr, fld.Child("subPathExpr"))...)
		}
	}
	return errs
}

// validateLocalDescendingPath is validateLocalDescendingPath: relative and
// without '..' elements.
func validateLocalDescendingPath(target string, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	if strings.HasPrefix(target, "/") {
		errs = append(errs, field.Invalid(fld, target, "must be a relative path"))
	}
	for _, item := range strings.Split(target, "/") {
		if item == ".." {
			errs = append(errs, field.Invalid(fld, target, "must not contain '..'"))
			break
		}
	}
	return errs
}

// standardContainerResources are the unprefixed resource names a container
// may request (helper.IsStandardContainerResourceName).
var standardContainerResources = sets.New("cpu", "memory", "ephemeral-storage")

// validateResourceRequirements is ValidateContainerResourceRequirements:
// names are standard or qualified, quantities non-negative (and whole for
// integer resources), and every request at most its limit.
func validateResourceRequirements(r *corev1.ResourceRequirements, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	limPath := fld.Child("limits")
	reqPath := fld.Child("requests")
	for name, q := range r.Limits {
		p := limPath.Key(string(name))
		errs = append(errs, validateContainerResourceName(name, p)...)
		errs = append(errs, validateResourceQuantity(name, q, p)...)
	}
	for name, q := range r.Requests {
		p := reqPath.Key(string(name))
		errs = append(errs, validateContainerResourceName(name, p)...)
		errs = append(errs, validateResourceQuantity(name, q, p)...)
		lim, ok := r.Limits[name]
		switch {
		case ok && q.Cmp(lim) != 0 && !overcommitAllowed(name):
			errs = append(errs, field.Invalid(reqPath, q.String(), fmt.Sprintf("must be equal to %s limit of %s", name, lim.String())))
		case ok && q.Cmp(lim) > 0:
			errs = append(errs, field.Invalid(reqPath, q.String(), fmt.Sprintf("must be less than or equal to %s limit of %s", name, lim.String())))
		case !ok && !overcommitAllowed(name):
			errs = append(errs, field.Required(limPath, "Limit must be set for non overcommitable resources"))
		}
	}
	return errs
}

// overcommitAllowed is helper.IsOvercommitAllowed: native resources other
// than huge pages may be requested below their limit.
func overcommitAllowed(name corev1.ResourceName) bool {
	s := string(name)
	return isNativeResource(s) && !strings.HasPrefix(s, corev1.ResourceHugePagesPrefix)
}

func isNativeResource(name string) bool {
	return !strings.Contains(name, "/") || strings.Contains(name, "kubernetes.io/")
}

func validateContainerResourceName(name corev1.ResourceName, fld *field.Path) field.ErrorList {
	s := string(name)
	var errs field.ErrorList
	for _, msg := range validation.IsQualifiedName(s) {
		errs = append(errs, field.Invalid(fld, name, msg))
	}
	if len(errs) != 0 {
		return errs
	}
	if !strings.Contains(s, "/") && !standardContainerResources.Has(s) && !strings.HasPrefix(s, corev1.ResourceHugePagesPrefix) {
		errs = append(errs, field.Invalid(fld, name, "must be a standard resource type or fully qualified"))
		errs = append(errs, field.Invalid(fld, name, "must be a standard resource for containers"))
	}
	return errs
}

func validateResourceQuantity(name corev1.ResourceName, q resource.Quantity, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	if q.Cmp(resource.Quantity{}) < 0 {
		errs = append(errs, field.Invalid(fld, q.String(), apimachineryvalidation.IsNegativeErrorMsg))
	}
	if (name == corev1.ResourcePods || !isNativeResource(string(name))) && q.MilliValue()%1000 != 0 {
		errs = append(errs, field.Invalid(fld, q, "must be an integer"))
	}
	return errs
}

func validateProbe(p *corev1.Probe, fld *field.Path, mustSucceedOnce bool) field.ErrorList {
	if p == nil {
		return nil
	}
	errs := validateHandler(p.Exec, p.HTTPGet, p.TCPSocket, p.GRPC, nil, fld)
	for _, f := range []struct {
		name string
		v    int32
	}{{"initialDelaySeconds", p.InitialDelaySeconds}, {"timeoutSeconds", p.TimeoutSeconds}, {"periodSeconds", p.PeriodSeconds}, {"successThreshold", p.SuccessThreshold}, {"failureThreshold", p.FailureThreshold}} {
		errs = append(errs, apimachineryvalidation.ValidateNonnegativeField(int64(f.v), fld.Child(f.name))...)
	}
	if p.TerminationGracePeriodSeconds != nil && *p.TerminationGracePeriodSeconds <= 0 {
		errs = append(errs, field.Invalid(fld.Child("terminationGracePeriodSeconds"), *p.TerminationGracePeriodSeconds, "must be greater than 0"))
	}
	if mustSucceedOnce && p.SuccessThreshold != 1 {
		errs = append(errs, field.Invalid(fld.Child("successThreshold"), p.SuccessThreshold, "must be 1"))
	}
	return errs
}

func validateLifecycle(l *corev1.Lifecycle, grace *int64, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	for _, h := range []struct {
		name string
		h    *corev1.LifecycleHandler
	}{{"postStart", l.PostStart}, {"preStop", l.PreStop}} {
		if h.h == nil {
			continue
		}
		p := fld.Child(h.name)
		errs = append(errs, validateHandler(h.h.Exec, h.h.HTTPGet, h.h.TCPSocket, nil, h.h.Sleep, p)...)
		if h.h.Sleep != nil && grace != nil && (h.h.Sleep.Seconds < 0 || h.h.Sleep.Seconds > *grace) {
			errs = append(errs, field.Invalid(p.Child("sleep"), h.h.Sleep.Seconds, fmt.Sprintf("must be non-negative and less than terminationGracePeriodSeconds (%d)", *grace)))
		}
	}
	return errs
}

// validateHandler is validateHandler: exactly one handler type, each valid.
func validateHandler(exec *corev1.ExecAction, httpGet *corev1.HTTPGetAction, tcp *corev1.TCPSocketAction, grpc *corev1.GRPCAction, sleep *corev1.SleepAction, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	n := 0
	add := func(set bool, name string, check func() field.ErrorList) {
		if !set {
			return
		}
		if n > 0 {
			errs = append(errs, field.Forbidden(fld.Child(name), "may not specify more than 1 handler type"))
			return
		}
		n++
		errs = append(errs, check()...)
	}
	add(exec != nil, "exec", func() field.ErrorList {
		if len(exec.Command) == 0 {
			return field.ErrorList{field.Required(fld.Child("exec", "command"), "")}
		}
		return nil
	})
	add(httpGet != nil, "httpGet", func() field.ErrorList {
		p := fld.Child("httpGet")
		var e field.ErrorList
		if httpGet.Path == "" {
			e = append(e, field.Required(p.Child("path"), ""))
		}
		e = append(e, validatePortNumOrName(httpGet.Port, p.Child("port"))...)
		if httpGet.Scheme != corev1.URISchemeHTTP && httpGet.Scheme != corev1.URISchemeHTTPS {
			e = append(e, field.NotSupported(p.Child("scheme"), httpGet.Scheme, []corev1.URIScheme{corev1.URISchemeHTTP, corev1.URISchemeHTTPS}))
		}
		return e
	})
	add(tcp != nil, "tcpSocket", func() field.ErrorList {
		return validatePortNumOrName(tcp.Port, fld.Child("tcpSocket", "port"))
	})
	add(grpc != nil, "grpc", func() field.ErrorList {
		return validatePortNumOrName(intstr.FromInt32(grpc.Port), fld.Child("grpc", "port"))
	})
	add(sleep != nil, "sleep", func() field.ErrorList { return nil })
	if n == 0 {
		errs = append(errs, field.Required(fld, "must specify a handler type"))
	}
	return errs
}

func validatePortNumOrName(port intstr.IntOrString, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	if port.Type == intstr.Int {
		for _, msg := range validation.IsValidPortNum(port.IntValue()) {
			errs = append(errs, field.Invalid(fld, port.IntValue(), msg))
		}
		return errs
	}
	for _, msg := range validation.IsValidPortName(port.StrVal) {
		errs = append(errs, field.Invalid(fld, port.StrVal, msg))
	}
	return errs
}

// validateTolerations is ValidateTolerations.
func validateTolerations(tolerations []corev1.Toleration, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	for i, t := range tolerations {
		p := fld.Index(i)
		if t.Key != "" {
			errs = append(errs, metav1validation.ValidateLabelName(t.Key, p.Child("key"))...)
		}
		if t.Key == "" && t.Operator != corev1.TolerationOpExists {
			errs = append(errs, field.Invalid(p.Child("operator"), t.Operator, "operator must be Exists when `key` is empty, which means \"match all values and all keys\""))
		}
		if t.TolerationSeconds != nil && t.Effect != corev1.TaintEffectNoExecute {
			errs = append(errs, field.Invalid(p.Child("effect"), t.Effect, "effect must be 'NoExecute' when `tolerationSeconds` is set"))
		}
		switch t.Operator {
		case corev1.TolerationOpEqual, "":
			if msgs := validation.IsValidLabelValue(t.Value); len(msgs) != 0 {
				errs = append(errs, field.Invalid(p.Child("operator"), t.Value, strings.Join(msgs, ";")))
			}
		case corev1.TolerationOpExists:
			if t.Value != "" {
				errs = append(errs, field.Invalid(p.Child("operator"), t.Value, "value must be empty when `operator` is 'Exists'"))
			}
		default:
			errs = append(errs, field.NotSupported(p.Child("operator"), t.Operator, []corev1.TolerationOperator{corev1.TolerationOpEqual, corev1.TolerationOpExists}))
		}
		if t.Effect != "" {
			errs = append(errs, validateTaintEffect(t.Effect, p.Child("effect"))...)
		}
	}
	return errs
}

func validateTaintEffect(effect corev1.TaintEffect, fld *field.Path) field.ErrorList {
	switch effect {
	case corev1.TaintEffectNoSchedule, corev1.TaintEffectPreferNoSchedule, corev1.TaintEffectNoExecute:
		return nil
	case "":
		return field.ErrorList{field.Required(fld, "")}
	}
	return field.ErrorList{field.NotSupported(fld, effect, []corev1.TaintEffect{corev1.TaintEffectNoSchedule, corev1.TaintEffectPreferNoSchedule, corev1.TaintEffectNoExecute})}
}

func validateAffinity(a *corev1.Affinity, fld *field.Path) field.ErrorList {
	if a == nil || a.NodeAffinity == nil {
		return nil
	}
	var errs field.ErrorList
	na := a.NodeAffinity
	if req := na.RequiredDuringSchedulingIgnoredDuringExecution; req != nil {
		p := fld.Child("nodeAffinity", "requiredDuringSchedulingIgnoredDuringExecution", "nodeSelectorTerms")
		if len(req.NodeSelectorTerms) == 0 {
			errs = append(errs, field.Required(p, "must have at least one node selector term"))
		}
		for i, term := range req.NodeSelectorTerms {
			for j, r := range term.MatchExpressions {
				errs = append(errs, validateNodeSelectorRequirement(r, p.Index(i).Child("matchExpressions").Index(j))...)
			}
		}
	}
	for i, term := range na.PreferredDuringSchedulingIgnoredDuringExecution {
		p := fld.Child("nodeAffinity", "preferredDuringSchedulingIgnoredDuringExecution").Index(i)
		if term.Weight <= 0 || term.Weight > 100 {
			errs = append(errs, field.Invalid(p.Child("weight"), term.Weight, "must be in the range 1-100"))
		}
		for j, r := range term.Preference.MatchExpressions {
			errs = append(errs, validateNodeSelectorRequirement(r, p.Child("preference", "matchExpressions").Index(j))...)
		}
	}
	return errs
}

func validateNodeSelectorRequirement(r corev1.NodeSelectorRequirement, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	switch r.Operator {
	case corev1.NodeSelectorOpIn, corev1.NodeSelectorOpNotIn:
		if len(r.Values) == 0 {
			errs = append(errs, field.Required(fld.Child("values"), "must be specified when `operator` is 'In' or 'NotIn'"))
		}
	case corev1.NodeSelectorOpExists, corev1.NodeSelectorOpDoesNotExist:
		if len(r.Values) > 0 {
			errs = append(errs, field.Forbidden(fld.Child("values"), "may not be specified when `operator` is 'Exists' or 'DoesNotExist'"))
		}
	case corev1.NodeSelectorOpGt, corev1.NodeSelectorOpLt:
		if len(r.Values) != 1 {
			errs = append(errs, field.Required(fld.Child("values"), "must be specified single value when `operator` is 'Lt' or 'Gt'"))
		}
	default:
		errs = append(errs, field.Invalid(fld.Child("operator"), r.Operator, "not a valid selector operator"))
	}
	return append(errs, metav1validation.ValidateLabelName(r.Key, fld.Child("key"))...)
}

// validatePodUpdate is ValidatePodUpdate: only images, activeDeadlineSeconds,
// added tolerations, removed scheduling gates and a negative grace period
// turning into 1 may change.
func validatePodUpdate(pod, old *corev1.Pod) field.ErrorList {
	specPath := field.NewPath("spec")
	errs := validatePodMetadataAndSpec(pod, old)
	cErrs, stop := validateContainerUpdates(pod.Spec.Containers, old.Spec.Containers, specPath.Child("containers"))
	errs = append(errs, cErrs...)
	if stop {
		return errs
	}
	cErrs, stop = validateContainerUpdates(pod.Spec.InitContainers, old.Spec.InitContainers, specPath.Child("initContainers"))
	errs = append(errs, cErrs...)
	if stop {
		return errs
	}
	if pod.Spec.ActiveDeadlineSeconds != nil {
		v := *pod.Spec.ActiveDeadlineSeconds
		if v < 0 || v > math.MaxInt32 {
			return append(errs, field.Invalid(specPath.Child("activeDeadlineSeconds"), v, validation.InclusiveRangeError(0, math.MaxInt32)))
		}
		if old.Spec.ActiveDeadlineSeconds != nil && *old.Spec.ActiveDeadlineSeconds < v {
			return append(errs, field.Invalid(specPath.Child("activeDeadlineSeconds"), v, "must be less than or equal to previous value"))
		}
	} else if old.Spec.ActiveDeadlineSeconds != nil {
		errs = append(errs, field.Invalid(specPath.Child("activeDeadlineSeconds"), pod.Spec.ActiveDeadlineSeconds, "must not update from a positive integer to nil value"))
	}
	errs = append(errs, validateOnlyAddedTolerations(pod.Spec.Tolerations, old.Spec.Tolerations, specPath.Child("tolerations"))...)
	errs = append(errs, validateOnlyDeletedSchedulingGates(pod.Spec.SchedulingGates, old.Spec.SchedulingGates, specPath.Child("schedulingGates"))...)
	if equality.Semantic.DeepEqual(pod.Spec, old.Spec) {
		return errs
	}
	munged := *pod.Spec.DeepCopy()
	for i := range munged.Containers {
		munged.Containers[i].Image = old.Spec.Containers[i].Image
	}
	for i := range munged.InitContainers {
		munged.InitContainers[i].Image = old.Spec.InitContainers[i].Image
	}
	munged.ActiveDeadlineSeconds = old.Spec.ActiveDeadlineSeconds
	munged.SchedulingGates = old.Spec.SchedulingGates
	munged.Tolerations = old.Spec.Tolerations
	if old.Spec.TerminationGracePeriodSeconds != nil && *old.Spec.TerminationGracePeriodSeconds < 0 &&
		munged.TerminationGracePeriodSeconds != nil && *munged.TerminationGracePeriodSeconds == 1 {
		munged.TerminationGracePeriodSeconds = old.Spec.TerminationGracePeriodSeconds
	}
	if len(old.Spec.SchedulingGates) > 0 {
		munged.NodeSelector = mungeGatedNodeSelector(munged.NodeSelector, old.Spec.NodeSelector)
	}
	if !equality.Semantic.DeepEqual(munged, old.Spec) {
		diff := cmp.Diff(old.Spec, munged)
		errs = append(errs, field.Forbidden(specPath, fmt.Sprintf("pod updates may not change fields other than %s\n%v", strings.Join(updatablePodSpecFields, ","), diff)))
	}
	return errs
}

// mungeGatedNodeSelector lets a gated pod add node selector entries: when
// the new selector only adds to the old one, the old one is compared.
func mungeGatedNodeSelector(newSel, oldSel map[string]string) map[string]string {
	for k, v := range oldSel {
		if nv, ok := newSel[k]; !ok || nv != v {
			return newSel
		}
	}
	return oldSel
}

func validateContainerUpdates(containers, old []corev1.Container, fld *field.Path) (field.ErrorList, bool) {
	if len(containers) != len(old) {
		return field.ErrorList{field.Forbidden(fld, "pod updates may not add or remove containers")}, true
	}
	var errs field.ErrorList
	for i, c := range containers {
		if c.Image == "" {
			errs = append(errs, field.Required(fld.Index(i).Child("image"), ""))
		}
		if len(strings.TrimSpace(c.Image)) != len(c.Image) {
			errs = append(errs, field.Invalid(fld.Index(i).Child("image"), c.Image, "must not have leading or trailing whitespace"))
		}
	}
	return errs, false
}

func validateOnlyAddedTolerations(tolerations, old []corev1.Toleration, fld *field.Path) field.ErrorList {
	for _, o := range old {
		found := false
		for _, t := range tolerations {
			c := o.DeepCopy()
			c.TolerationSeconds = t.TolerationSeconds
			if reflect.DeepEqual(*c, t) {
				found = true
				break
			}
		}
		if !found {
			return field.ErrorList{field.Forbidden(fld, "existing toleration can not be modified except its tolerationSeconds")}
		}
	}
	return validateTolerations(tolerations, fld)
}

func validateOnlyDeletedSchedulingGates(gates, old []corev1.PodSchedulingGate, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	oldNames := sets.New[string]()
	for _, g := range old {
		oldNames.Insert(g.Name)
	}
	for i, g := range gates {
		if !oldNames.Has(g.Name) {
			errs = append(errs, field.Forbidden(fld.Index(i).Child("name"), fmt.Sprintf("only deletion is allowed, but found new scheduling gate '%s'", g.Name)))
		}
	}
	return errs
}

// validatePodStatusUpdate is ValidatePodStatusUpdate.
func validatePodStatusUpdate(pod, old *corev1.Pod) field.ErrorList {
	errs := apimachineryvalidation.ValidateObjectMetaUpdate(&pod.ObjectMeta, &old.ObjectMeta, field.NewPath("metadata"))
	system := sets.New(corev1.PodScheduled, corev1.PodReady, corev1.PodInitialized)
	for i, c := range pod.Status.Conditions {
		if !system.Has(c.Type) {
			errs = append(errs, validateQualifiedName(string(c.Type), field.NewPath("metadata", "conditions").Index(i).Child("Type"))...)
		}
	}
	status := field.NewPath("status")
	if pod.Spec.NodeName != old.Spec.NodeName {
		errs = append(errs, field.Forbidden(status.Child("nodeName"), "may not be changed directly"))
	}
	if pod.Status.NominatedNodeName != old.Status.NominatedNodeName && pod.Status.NominatedNodeName != "" {
		errs = append(errs, validateNameWith(apimachineryvalidation.NameIsDNSSubdomain, pod.Status.NominatedNodeName, status.Child("nominatedNodeName"))...)
	}
	errs = append(errs, apimachineryvalidation.ValidateImmutableField(pod.Status.QOSClass, old.Status.QOSClass, status.Child("qosClass"))...)
	errs = append(errs, validateContainerStateTransition(pod.Status.ContainerStatuses, old.Status.ContainerStatuses, status.Child("containerStatuses"), old.Spec.RestartPolicy)...)
	for i, ip := range pod.Status.PodIPs {
		errs = append(errs, validation.IsValidIP(status.Child("podIPs").Index(i), ip.IP)...)
	}
	for i, ip := range pod.Status.HostIPs {
		errs = append(errs, validation.IsValidIP(status.Child("hostIPs").Index(i), ip.IP)...)
	}
	if len(pod.Status.HostIPs) > 0 && pod.Status.HostIP != pod.Status.HostIPs[0].IP {
		errs = append(errs, field.Invalid(status.Child("hostIPs").Index(0).Child("ip"), pod.Status.HostIPs[0].IP, "must be equal to `hostIP`"))
	}
	return errs
}

func validateContainerStateTransition(statuses, old []corev1.ContainerStatus, fld *field.Path, restart corev1.RestartPolicy) field.ErrorList {
	if restart == corev1.RestartPolicyAlways {
		return nil
	}
	var errs field.ErrorList
	for i, o := range old {
		if o.State.Terminated == nil || (o.State.Terminated.ExitCode != 0 && restart == corev1.RestartPolicyOnFailure) {
			continue
		}
		for _, n := range statuses {
			if n.Name == o.Name && n.State.Terminated == nil {
				errs = append(errs, field.Forbidden(fld.Index(i).Child("state"), "may not be transitioned to non-terminated state"))
			}
		}
	}
	return errs
}

// sysctlName is upstream's form of a sysctl name: dot- or slash-separated
// segments.
var sysctlName = regexp.MustCompile(`^([a-z0-9]([-_a-z0-9]*[a-z0-9])?[\./])*[a-z0-9]([-_a-z0-9]*[a-z0-9])?$`)

// validateSysctls is upstream's validateSysctls: each name set, well
// formed and at most 253 characters, and given once. Which sysctls a pod
// may set is the node's decision (its allowlist).
func validateSysctls(sysctls []corev1.Sysctl, fld *field.Path) field.ErrorList {
	var errs field.ErrorList
	seen := sets.New[string]()
	for i, s := range sysctls {
		p := fld.Index(i).Child("name")
		switch {
		case s.Name == "":
			errs = append(errs, field.Required(p, ""))
		case len(s.Name) > 253 || !sysctlName.MatchString(s.Name):
			errs = append(errs, field.Invalid(p, s.Name, fmt.Sprintf("must have at most 253 characters and match regex %s", sysctlName)))
		case seen.Has(s.Name):
			errs = append(errs, field.Duplicate(p, s.Name))
		}
		seen.Insert(s.Name)
	}
	return errs
}
