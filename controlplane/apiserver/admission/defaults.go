package admission

import (
	"context"
	"fmt"
	"maps"
	"math"

	"github.com/distribution/reference"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// DefaultingPluginName is the name DefaultValues reports in Steps.
const DefaultingPluginName = "Defaulting"

// The priority classes every cluster has, as the Priority plugin knows them.
const (
	systemClusterCritical         = "system-cluster-critical"
	systemNodeCritical            = "system-node-critical"
	systemClusterCriticalPriority = int32(2000000000)
	systemNodeCriticalPriority    = int32(2000001000)
)

// DefaultValues fills in what kube-apiserver fills in before validation:
// the defaults of pkg/apis/*/v1/defaults.go (and the declarative ones),
// the create-time status set by the registry strategies (a Pod is Pending
// with its QoS class, a Namespace is Active with the "kubernetes" finalizer),
// the IP family fields the Service allocator sets, and the priority fields
// the Priority plugin sets on Pods.
type DefaultValues struct {
	// priorityClasses resolves classes other than the system ones; nil
	// knows only those.
	priorityClasses PriorityClassLister
}

var _ MutationInterface = &DefaultValues{}

// NewDefaultValues returns the defaulting plugin.
func NewDefaultValues() *DefaultValues { return &DefaultValues{} }

// Name implements Plugin.
func (*DefaultValues) Name() string { return DefaultingPluginName }

// Admit implements MutationInterface.
func (d *DefaultValues) Admit(ctx context.Context, a *Attributes) error {
	if a.Object == nil || (a.Operation != Create && a.Operation != Update) {
		return nil
	}
	Default(a.Object)
	if a.Subresource != "" {
		return nil
	}
	switch obj := a.Object.(type) {
	case *corev1.Pod:
		if a.Operation == Create {
			preparePodForCreate(obj)
		}
		return admitPodPriority(ctx, obj, a, d.priorityClasses)
	case *corev1.Namespace:
		if a.Operation == Create {
			prepareNamespaceForCreate(obj)
		}
	case *batchv1.Job:
		if a.Operation == Create && (obj.Spec.ManualSelector == nil || !*obj.Spec.ManualSelector) {
			generateJobSelector(obj)
		}
	case *corev1.Service:
		if old, ok := a.OldObject.(*corev1.Service); ok && a.Operation == Update {
			keepAllocatedServiceValues(obj, old)
		}
		defaultServiceIPFamilies(obj)
	}
	return nil
}

// Default applies Kubernetes' scheme defaults (what decoding a request body
// into kube-apiserver fills in) to a typed object, in place. Kinds without
// defaults are left alone.
func Default(obj runtime.Object) {
	if defaultAutoscaling(obj) {
		return
	}
	if defaultAdmissionRegistration(obj) {
		return
	}
	switch o := obj.(type) {
	case *corev1.Pod:
		defaultPod(o)
	case *corev1.PodTemplate:
		defaultPodTemplateSpec(&o.Template)
	case *corev1.ReplicationController:
		defaultReplicationController(o)
	case *appsv1.Deployment:
		defaultDeployment(o)
	case *appsv1.ReplicaSet:
		if o.Spec.Replicas == nil {
			o.Spec.Replicas = ptrTo(int32(1))
		}
		defaultPodTemplateSpec(&o.Spec.Template)
	case *appsv1.StatefulSet:
		defaultStatefulSet(o)
	case *appsv1.DaemonSet:
		defaultDaemonSet(o)
	case *batchv1.Job:
		defaultJob(o)
	case *batchv1.CronJob:
		defaultCronJob(o)
	case *corev1.Service:
		defaultService(o)
	case *schedulingv1.PriorityClass:
		if o.PreemptionPolicy == nil {
			o.PreemptionPolicy = ptrTo(corev1.PreemptLowerPriority)
		}
	case *corev1.Endpoints:
		for i := range o.Subsets {
			for j := range o.Subsets[i].Ports {
				if o.Subsets[i].Ports[j].Protocol == "" {
					o.Subsets[i].Ports[j].Protocol = corev1.ProtocolTCP
				}
			}
		}
	case *corev1.Namespace:
		if o.Name != "" {
			if o.Labels == nil {
				o.Labels = map[string]string{}
			}
			o.Labels[corev1.LabelMetadataName] = o.Name
		}
		if o.Status.Phase == "" {
			o.Status.Phase = corev1.NamespaceActive
		}
	case *corev1.Node:
		if o.Status.Allocatable == nil && o.Status.Capacity != nil {
			o.Status.Allocatable = o.Status.Capacity.DeepCopy()
		}
	case *corev1.Secret:
		if o.Type == "" {
			o.Type = corev1.SecretTypeOpaque
		}
	case *corev1.ConfigMap:
		if o.Data == nil {
			o.Data = map[string]string{}
		}
	case *corev1.LimitRange, *networkingv1.NetworkPolicy, *networkingv1.IngressClass:
		defaultPolicyKinds(obj)
	default:
		defaultStorage(obj)
	}
}

func ptrTo[T any](v T) *T { return &v }

func defaultPod(pod *corev1.Pod) {
	requestsFromLimits(pod.Spec.Containers)
	requestsFromLimits(pod.Spec.InitContainers)
	if pod.Spec.EnableServiceLinks == nil {
		pod.Spec.EnableServiceLinks = ptrTo(corev1.DefaultEnableServiceLinks)
	}
	if pod.Spec.HostNetwork {
		hostNetworkPorts(pod.Spec.Containers)
		hostNetworkPorts(pod.Spec.InitContainers)
	}
	defaultPodSpec(&pod.Spec)
}

// requestsFromLimits copies each limit into requests where no request is set
// (SetDefaults_Pod: only Pods get this, not pod templates).
func requestsFromLimits(containers []corev1.Container) {
	for i := range containers {
		r := &containers[i].Resources
		if r.Limits == nil {
			continue
		}
		if r.Requests == nil {
			r.Requests = corev1.ResourceList{}
		}
		for name, q := range r.Limits {
			if _, ok := r.Requests[name]; !ok {
				r.Requests[name] = q.DeepCopy()
			}
		}
	}
}

func hostNetworkPorts(containers []corev1.Container) {
	for i := range containers {
		for j := range containers[i].Ports {
			if containers[i].Ports[j].HostPort == 0 {
				containers[i].Ports[j].HostPort = containers[i].Ports[j].ContainerPort
			}
		}
	}
}

func defaultPodTemplateSpec(t *corev1.PodTemplateSpec) { defaultPodSpec(&t.Spec) }

func defaultPodSpec(spec *corev1.PodSpec) {
	if spec.DNSPolicy == "" {
		spec.DNSPolicy = corev1.DNSClusterFirst
	}
	if spec.RestartPolicy == "" {
		spec.RestartPolicy = corev1.RestartPolicyAlways
	}
	if spec.SecurityContext == nil {
		spec.SecurityContext = &corev1.PodSecurityContext{}
	}
	if spec.TerminationGracePeriodSeconds == nil {
		spec.TerminationGracePeriodSeconds = ptrTo(int64(corev1.DefaultTerminationGracePeriodSeconds))
	}
	if spec.SchedulerName == "" {
		spec.SchedulerName = corev1.DefaultSchedulerName
	}
	for i := range spec.Volumes {
		defaultVolume(&spec.Volumes[i])
	}
	for i := range spec.InitContainers {
		defaultContainer(&spec.InitContainers[i])
	}
	for i := range spec.Containers {
		defaultContainer(&spec.Containers[i])
	}
	for i := range spec.EphemeralContainers {
		c := corev1.Container(spec.EphemeralContainers[i].EphemeralContainerCommon)
		defaultContainer(&c)
		spec.EphemeralContainers[i].EphemeralContainerCommon = corev1.EphemeralContainerCommon(c)
	}
	roundResourceList(spec.Overhead)
	if spec.Resources != nil {
		roundResourceList(spec.Resources.Limits)
		roundResourceList(spec.Resources.Requests)
	}
}

func defaultVolume(v *corev1.Volume) {
	s := &v.VolumeSource
	if *s == (corev1.VolumeSource{}) {
		s.EmptyDir = &corev1.EmptyDirVolumeSource{}
	}
	if s.HostPath != nil && s.HostPath.Type == nil {
		s.HostPath.Type = ptrTo(corev1.HostPathUnset)
	}
	// An image volume's pull policy defaults as a container's does.
	if s.Image != nil && s.Image.PullPolicy == "" {
		if imageTag(s.Image.Reference) == "latest" {
			s.Image.PullPolicy = corev1.PullAlways
		} else {
			s.Image.PullPolicy = corev1.PullIfNotPresent
		}
	}
	if s.Secret != nil && s.Secret.DefaultMode == nil {
		s.Secret.DefaultMode = ptrTo(corev1.SecretVolumeSourceDefaultMode)
	}
	if s.ConfigMap != nil && s.ConfigMap.DefaultMode == nil {
		s.ConfigMap.DefaultMode = ptrTo(corev1.ConfigMapVolumeSourceDefaultMode)
	}
	if s.DownwardAPI != nil {
		if s.DownwardAPI.DefaultMode == nil {
			s.DownwardAPI.DefaultMode = ptrTo(corev1.DownwardAPIVolumeSourceDefaultMode)
		}
		defaultDownwardAPIFiles(s.DownwardAPI.Items)
	}
	if s.Projected != nil {
		if s.Projected.DefaultMode == nil {
			s.Projected.DefaultMode = ptrTo(corev1.ProjectedVolumeSourceDefaultMode)
		}
		for i := range s.Projected.Sources {
			src := &s.Projected.Sources[i]
			if src.DownwardAPI != nil {
				defaultDownwardAPIFiles(src.DownwardAPI.Items)
			}
			if src.ServiceAccountToken != nil && src.ServiceAccountToken.ExpirationSeconds == nil {
				src.ServiceAccountToken.ExpirationSeconds = ptrTo(int64(3600))
			}
		}
	}
	if s.Ephemeral != nil && s.Ephemeral.VolumeClaimTemplate != nil && s.Ephemeral.VolumeClaimTemplate.Spec.VolumeMode == nil {
		s.Ephemeral.VolumeClaimTemplate.Spec.VolumeMode = ptrTo(corev1.PersistentVolumeFilesystem)
	}
}

func defaultDownwardAPIFiles(items []corev1.DownwardAPIVolumeFile) {
	for i := range items {
		defaultFieldSelector(items[i].FieldRef)
	}
}

func defaultFieldSelector(fs *corev1.ObjectFieldSelector) {
	if fs != nil && fs.APIVersion == "" {
		fs.APIVersion = "v1"
	}
}

func defaultContainer(c *corev1.Container) {
	if c.ImagePullPolicy == "" {
		if imageTag(c.Image) == "latest" {
			c.ImagePullPolicy = corev1.PullAlways
		} else {
			c.ImagePullPolicy = corev1.PullIfNotPresent
		}
	}
	if c.TerminationMessagePath == "" {
		c.TerminationMessagePath = corev1.TerminationMessagePathDefault
	}
	if c.TerminationMessagePolicy == "" {
		c.TerminationMessagePolicy = corev1.TerminationMessageReadFile
	}
	for i := range c.Ports {
		if c.Ports[i].Protocol == "" {
			c.Ports[i].Protocol = corev1.ProtocolTCP
		}
	}
	for i := range c.Env {
		if c.Env[i].ValueFrom != nil {
			defaultFieldSelector(c.Env[i].ValueFrom.FieldRef)
		}
	}
	roundResourceList(c.Resources.Limits)
	roundResourceList(c.Resources.Requests)
	defaultProbe(c.LivenessProbe)
	defaultProbe(c.ReadinessProbe)
	defaultProbe(c.StartupProbe)
	if c.Lifecycle != nil {
		for _, h := range []*corev1.LifecycleHandler{c.Lifecycle.PostStart, c.Lifecycle.PreStop} {
			if h != nil {
				defaultHTTPGet(h.HTTPGet)
			}
		}
	}
}

// imageTag returns the tag kubelet would pull: the image's tag, "latest"
// when it names neither a tag nor a digest, and "" for a digest-only or
// unparsable reference (which then defaults to IfNotPresent).
func imageTag(image string) string {
	named, err := reference.ParseNormalizedNamed(image)
	if err != nil {
		return ""
	}
	tag := ""
	if tagged, ok := named.(reference.Tagged); ok {
		tag = tagged.Tag()
	}
	if _, ok := named.(reference.Digested); !ok && tag == "" {
		tag = "latest"
	}
	return tag
}

// roundResourceList rounds every quantity up to milli precision, as
// SetDefaults_ResourceList does.
func roundResourceList(list corev1.ResourceList) {
	for name, q := range list {
		q.RoundUp(-3)
		list[name] = q
	}
}

func defaultProbe(p *corev1.Probe) {
	if p == nil {
		return
	}
	if p.TimeoutSeconds == 0 {
		p.TimeoutSeconds = 1
	}
	if p.PeriodSeconds == 0 {
		p.PeriodSeconds = 10
	}
	if p.SuccessThreshold == 0 {
		p.SuccessThreshold = 1
	}
	if p.FailureThreshold == 0 {
		p.FailureThreshold = 3
	}
	defaultHTTPGet(p.HTTPGet)
}

func defaultHTTPGet(h *corev1.HTTPGetAction) {
	if h == nil {
		return
	}
	if h.Path == "" {
		h.Path = "/"
	}
	if h.Scheme == "" {
		h.Scheme = corev1.URISchemeHTTP
	}
}

func defaultReplicationController(rc *corev1.ReplicationController) {
	if rc.Spec.Template != nil {
		if labels := rc.Spec.Template.Labels; labels != nil {
			if len(rc.Spec.Selector) == 0 {
				rc.Spec.Selector = labels
			}
			if len(rc.Labels) == 0 {
				rc.Labels = labels
			}
		}
		defaultPodTemplateSpec(rc.Spec.Template)
	}
	if rc.Spec.Replicas == nil {
		rc.Spec.Replicas = ptrTo(int32(1))
	}
}

func defaultDeployment(d *appsv1.Deployment) {
	if d.Spec.Replicas == nil {
		d.Spec.Replicas = ptrTo(int32(1))
	}
	s := &d.Spec.Strategy
	if s.Type == "" {
		s.Type = appsv1.RollingUpdateDeploymentStrategyType
	}
	if s.Type == appsv1.RollingUpdateDeploymentStrategyType {
		if s.RollingUpdate == nil {
			s.RollingUpdate = &appsv1.RollingUpdateDeployment{}
		}
		if s.RollingUpdate.MaxUnavailable == nil {
			s.RollingUpdate.MaxUnavailable = ptrTo(intstr.FromString("25%"))
		}
		if s.RollingUpdate.MaxSurge == nil {
			s.RollingUpdate.MaxSurge = ptrTo(intstr.FromString("25%"))
		}
	}
	if d.Spec.RevisionHistoryLimit == nil {
		d.Spec.RevisionHistoryLimit = ptrTo(int32(10))
	}
	if d.Spec.ProgressDeadlineSeconds == nil {
		d.Spec.ProgressDeadlineSeconds = ptrTo(int32(600))
	}
	defaultPodTemplateSpec(&d.Spec.Template)
}

func defaultStatefulSet(s *appsv1.StatefulSet) {
	if s.Spec.PodManagementPolicy == "" {
		s.Spec.PodManagementPolicy = appsv1.OrderedReadyPodManagement
	}
	if s.Spec.UpdateStrategy.Type == "" {
		s.Spec.UpdateStrategy.Type = appsv1.RollingUpdateStatefulSetStrategyType
		if s.Spec.UpdateStrategy.RollingUpdate == nil {
			s.Spec.UpdateStrategy.RollingUpdate = &appsv1.RollingUpdateStatefulSetStrategy{}
		}
	}
	if s.Spec.UpdateStrategy.Type == appsv1.RollingUpdateStatefulSetStrategyType &&
		s.Spec.UpdateStrategy.RollingUpdate != nil && s.Spec.UpdateStrategy.RollingUpdate.Partition == nil {
		s.Spec.UpdateStrategy.RollingUpdate.Partition = ptrTo(int32(0))
	}
	if s.Spec.PersistentVolumeClaimRetentionPolicy == nil {
		s.Spec.PersistentVolumeClaimRetentionPolicy = &appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy{}
	}
	if s.Spec.PersistentVolumeClaimRetentionPolicy.WhenDeleted == "" {
		s.Spec.PersistentVolumeClaimRetentionPolicy.WhenDeleted = appsv1.RetainPersistentVolumeClaimRetentionPolicyType
	}
	if s.Spec.PersistentVolumeClaimRetentionPolicy.WhenScaled == "" {
		s.Spec.PersistentVolumeClaimRetentionPolicy.WhenScaled = appsv1.RetainPersistentVolumeClaimRetentionPolicyType
	}
	if s.Spec.Replicas == nil {
		s.Spec.Replicas = ptrTo(int32(1))
	}
	if s.Spec.RevisionHistoryLimit == nil {
		s.Spec.RevisionHistoryLimit = ptrTo(int32(10))
	}
	defaultPodTemplateSpec(&s.Spec.Template)
}

func defaultDaemonSet(d *appsv1.DaemonSet) {
	u := &d.Spec.UpdateStrategy
	if u.Type == "" {
		u.Type = appsv1.RollingUpdateDaemonSetStrategyType
	}
	if u.Type == appsv1.RollingUpdateDaemonSetStrategyType {
		if u.RollingUpdate == nil {
			u.RollingUpdate = &appsv1.RollingUpdateDaemonSet{}
		}
		if u.RollingUpdate.MaxUnavailable == nil {
			u.RollingUpdate.MaxUnavailable = ptrTo(intstr.FromInt32(1))
		}
		if u.RollingUpdate.MaxSurge == nil {
			u.RollingUpdate.MaxSurge = ptrTo(intstr.FromInt32(0))
		}
	}
	if d.Spec.RevisionHistoryLimit == nil {
		d.Spec.RevisionHistoryLimit = ptrTo(int32(10))
	}
	defaultPodTemplateSpec(&d.Spec.Template)
}

func defaultService(s *corev1.Service) {
	if s.Spec.SessionAffinity == "" {
		s.Spec.SessionAffinity = corev1.ServiceAffinityNone
	}
	if s.Spec.SessionAffinity == corev1.ServiceAffinityNone {
		s.Spec.SessionAffinityConfig = nil
	}
	if s.Spec.SessionAffinity == corev1.ServiceAffinityClientIP {
		c := s.Spec.SessionAffinityConfig
		if c == nil || c.ClientIP == nil || c.ClientIP.TimeoutSeconds == nil {
			s.Spec.SessionAffinityConfig = &corev1.SessionAffinityConfig{
				ClientIP: &corev1.ClientIPConfig{TimeoutSeconds: ptrTo(int32(corev1.DefaultClientIPServiceAffinitySeconds))},
			}
		}
	}
	if s.Spec.Type == "" {
		s.Spec.Type = corev1.ServiceTypeClusterIP
	}
	for i := range s.Spec.Ports {
		p := &s.Spec.Ports[i]
		if p.Protocol == "" {
			p.Protocol = corev1.ProtocolTCP
		}
		if p.TargetPort == intstr.FromInt32(0) || p.TargetPort == intstr.FromString("") {
			p.TargetPort = intstr.FromInt32(p.Port)
		}
	}
	if serviceExternallyAccessible(s) && s.Spec.ExternalTrafficPolicy == "" {
		s.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyCluster
	}
	if s.Spec.InternalTrafficPolicy == nil {
		switch s.Spec.Type {
		case corev1.ServiceTypeNodePort, corev1.ServiceTypeLoadBalancer, corev1.ServiceTypeClusterIP:
			s.Spec.InternalTrafficPolicy = ptrTo(corev1.ServiceInternalTrafficPolicyCluster)
		}
	}
	if s.Spec.Type == corev1.ServiceTypeLoadBalancer {
		if s.Spec.AllocateLoadBalancerNodePorts == nil {
			s.Spec.AllocateLoadBalancerNodePorts = ptrTo(true)
		}
		for i, ing := range s.Status.LoadBalancer.Ingress {
			if ing.IP != "" && ing.IPMode == nil {
				s.Status.LoadBalancer.Ingress[i].IPMode = ptrTo(corev1.LoadBalancerIPModeVIP)
			}
		}
	}
}

// serviceExternallyAccessible mirrors pkg/api/v1/service.ExternallyAccessible.
func serviceExternallyAccessible(s *corev1.Service) bool {
	return s.Spec.Type == corev1.ServiceTypeLoadBalancer ||
		s.Spec.Type == corev1.ServiceTypeNodePort ||
		(s.Spec.Type == corev1.ServiceTypeClusterIP && len(s.Spec.ExternalIPs) > 0)
}

// defaultServiceIPFamilies sets what kube-apiserver's Service IP allocator
// sets on a single-stack IPv4 cluster: SingleStack and [IPv4], except for
// headless services without a selector, which default to RequireDualStack
// with both families. ExternalName services get neither.
func defaultServiceIPFamilies(s *corev1.Service) {
	if s.Spec.Type == corev1.ServiceTypeExternalName {
		return
	}
	headless := s.Spec.ClusterIP == corev1.ClusterIPNone || (len(s.Spec.ClusterIPs) > 0 && s.Spec.ClusterIPs[0] == corev1.ClusterIPNone)
	if s.Spec.IPFamilyPolicy == nil {
		if headless && len(s.Spec.Selector) == 0 {
			s.Spec.IPFamilyPolicy = ptrTo(corev1.IPFamilyPolicyRequireDualStack)
		} else {
			s.Spec.IPFamilyPolicy = ptrTo(corev1.IPFamilyPolicySingleStack)
		}
	}
	if len(s.Spec.IPFamilies) == 0 {
		s.Spec.IPFamilies = []corev1.IPFamily{corev1.IPv4Protocol}
		if *s.Spec.IPFamilyPolicy == corev1.IPFamilyPolicyRequireDualStack {
			s.Spec.IPFamilies = append(s.Spec.IPFamilies, corev1.IPv6Protocol)
		}
	}
	if s.Spec.ClusterIP != "" && len(s.Spec.ClusterIPs) == 0 {
		s.Spec.ClusterIPs = []string{s.Spec.ClusterIP}
	}
}

// keepAllocatedServiceValues does what the service strategy's
// patchAllocatedValues does on update: a client that leaves out the cluster
// IPs, node ports or health check port the server allocated keeps them.
func keepAllocatedServiceValues(s, old *corev1.Service) {
	if needsClusterIP(old) && needsClusterIP(s) {
		if s.Spec.ClusterIP == "" {
			s.Spec.ClusterIP = old.Spec.ClusterIP
		}
		if len(s.Spec.ClusterIPs) == 0 && len(old.Spec.ClusterIPs) > 0 {
			s.Spec.ClusterIPs = old.Spec.ClusterIPs
		}
		if len(s.Spec.IPFamilies) == 0 && len(old.Spec.IPFamilies) > 0 {
			s.Spec.IPFamilies = old.Spec.IPFamilies
		}
		if s.Spec.IPFamilyPolicy == nil && old.Spec.IPFamilyPolicy != nil {
			s.Spec.IPFamilyPolicy = old.Spec.IPFamilyPolicy
		}
	}
	if needsNodePort(old) && needsNodePort(s) {
		used := map[int32]bool{}
		inNew := map[int32]bool{}
		for _, p := range s.Spec.Ports {
			inNew[p.NodePort] = p.NodePort != 0
		}
		byName := map[string]int32{}
		for _, p := range old.Spec.Ports {
			byName[p.Name] = p.NodePort
			if inNew[p.NodePort] {
				used[p.NodePort] = true
			}
		}
		for i := range s.Spec.Ports {
			p := &s.Spec.Ports[i]
			if p.NodePort == 0 && !used[byName[p.Name]] {
				p.NodePort = byName[p.Name]
			}
		}
	}
	if s.Spec.HealthCheckNodePort == 0 && s.Spec.Type == corev1.ServiceTypeLoadBalancer &&
		s.Spec.ExternalTrafficPolicy == corev1.ServiceExternalTrafficPolicyLocal {
		s.Spec.HealthCheckNodePort = old.Spec.HealthCheckNodePort
	}
}

func needsClusterIP(s *corev1.Service) bool {
	return s.Spec.Type != corev1.ServiceTypeExternalName
}

func needsNodePort(s *corev1.Service) bool {
	return s.Spec.Type == corev1.ServiceTypeNodePort || s.Spec.Type == corev1.ServiceTypeLoadBalancer
}

// prepareNamespaceForCreate does what the namespace strategy does on create:
// the namespace starts Active and carries the "kubernetes" finalizer.
func prepareNamespaceForCreate(ns *corev1.Namespace) {
	ns.Status = corev1.NamespaceStatus{Phase: corev1.NamespaceActive}
	for _, f := range ns.Spec.Finalizers {
		if f == corev1.FinalizerKubernetes {
			return
		}
	}
	ns.Spec.Finalizers = append(ns.Spec.Finalizers, corev1.FinalizerKubernetes)
}

// preparePodForCreate does what the pod strategy does on create: the status
// is reset to Pending with the computed QoS class, and a pod with scheduling
// gates gets the PodScheduled=False/SchedulingGated condition.
func preparePodForCreate(pod *corev1.Pod) {
	pod.Status = corev1.PodStatus{Phase: corev1.PodPending, QOSClass: ComputePodQOS(pod)}
	if len(pod.Spec.SchedulingGates) > 0 {
		pod.Status.Conditions = []corev1.PodCondition{{
			Type:    corev1.PodScheduled,
			Status:  corev1.ConditionFalse,
			Reason:  corev1.PodReasonSchedulingGated,
			Message: "Scheduling is blocked due to non-empty scheduling gates",
		}}
	}
}

// admitPodPriority does what the Priority admission plugin does: on create
// the pod gets the priority of its class (0 without one; the two system
// classes are always known, others are read through classes when set) and
// the class's preemptionPolicy (default PreemptLowerPriority); on update
// values left out are kept from the old pod. A globalDefault class is not
// applied to pods without a class.
func admitPodPriority(ctx context.Context, pod *corev1.Pod, a *Attributes, classes PriorityClassLister) error {
	if a.Operation == Update {
		if old, ok := a.OldObject.(*corev1.Pod); ok {
			if pod.Spec.Priority == nil {
				pod.Spec.Priority = old.Spec.Priority
			}
			if pod.Spec.PreemptionPolicy == nil {
				pod.Spec.PreemptionPolicy = old.Spec.PreemptionPolicy
			}
		}
		return nil
	}
	var priority int32
	policy := ptrTo(corev1.PreemptLowerPriority)
	switch pod.Spec.PriorityClassName {
	case "":
	case systemClusterCritical:
		priority = systemClusterCriticalPriority
	case systemNodeCritical:
		priority = systemNodeCriticalPriority
	default:
		var pc *schedulingv1.PriorityClass
		found := false
		if classes != nil {
			var err error
			if pc, found, err = classes.GetPriorityClass(ctx, pod.Spec.PriorityClassName); err != nil {
				return apierrors.NewInternalError(fmt.Errorf("failed to get PriorityClass %q: %w", pod.Spec.PriorityClassName, err))
			}
		}
		if !found {
			return apierrors.NewForbidden(a.Resource.GroupResource(), objectNameForError(a),
				fmt.Errorf("no PriorityClass with name %v was found", pod.Spec.PriorityClassName))
		}
		priority = pc.Value
		if pc.PreemptionPolicy != nil {
			policy = pc.PreemptionPolicy
		}
	}
	if pod.Spec.Priority != nil && *pod.Spec.Priority != priority {
		return apierrors.NewForbidden(a.Resource.GroupResource(), objectNameForError(a),
			fmt.Errorf("the integer value of priority (%d) must not be provided in pod spec; priority admission controller computed %d from the given PriorityClass name", *pod.Spec.Priority, priority))
	}
	pod.Spec.Priority = ptrTo(priority)
	if pod.Spec.PreemptionPolicy == nil {
		pod.Spec.PreemptionPolicy = policy
	}
	return nil
}

// defaultJob is SetDefaults_Job: a job with neither completions nor
// parallelism runs one pod to one completion; backoffLimit 6; NonIndexed;
// not suspended; pods replaced once terminating or failed; the template's
// labels become the job's when it has none.
func defaultJob(j *batchv1.Job) {
	if j.Spec.Completions == nil && j.Spec.Parallelism == nil {
		j.Spec.Completions = ptrTo(int32(1))
	}
	if j.Spec.Parallelism == nil {
		j.Spec.Parallelism = ptrTo(int32(1))
	}
	if j.Spec.BackoffLimit == nil {
		if j.Spec.BackoffLimitPerIndex != nil {
			j.Spec.BackoffLimit = ptrTo(int32(math.MaxInt32))
		} else {
			j.Spec.BackoffLimit = ptrTo(int32(6))
		}
	}
	if labels := j.Spec.Template.Labels; labels != nil && len(j.Labels) == 0 {
		j.Labels = maps.Clone(labels)
	}
	if j.Spec.CompletionMode == nil {
		j.Spec.CompletionMode = ptrTo(batchv1.NonIndexedCompletion)
	}
	if j.Spec.Suspend == nil {
		j.Spec.Suspend = ptrTo(false)
	}
	if j.Spec.ManualSelector == nil {
		j.Spec.ManualSelector = ptrTo(false)
	}
	if j.Spec.PodReplacementPolicy == nil {
		if j.Spec.PodFailurePolicy != nil {
			j.Spec.PodReplacementPolicy = ptrTo(batchv1.Failed)
		} else {
			j.Spec.PodReplacementPolicy = ptrTo(batchv1.TerminatingOrFailed)
		}
	}
	defaultPodTemplateSpec(&j.Spec.Template)
}

// The unprefixed job labels Kubernetes still sets beside the
// batch.kubernetes.io ones.
const (
	legacyJobNameLabel       = "job-name"
	legacyControllerUIDLabel = "controller-uid"
)

// generateJobSelector is the job strategy's generateSelector: the template
// gets the job-name and controller-uid labels (and their legacy
// unprefixed forms) unless it sets them, and the selector matches the
// controller uid, so a job selects only its own pods. It runs on create,
// once the uid is set, for jobs without manualSelector.
func generateJobSelector(j *batchv1.Job) {
	if j.Spec.Template.Labels == nil {
		j.Spec.Template.Labels = map[string]string{}
	}
	for _, k := range []string{legacyJobNameLabel, batchv1.JobNameLabel} {
		if _, ok := j.Spec.Template.Labels[k]; !ok {
			j.Spec.Template.Labels[k] = j.Name
		}
	}
	for _, k := range []string{legacyControllerUIDLabel, batchv1.ControllerUidLabel} {
		if _, ok := j.Spec.Template.Labels[k]; !ok {
			j.Spec.Template.Labels[k] = string(j.UID)
		}
	}
	if j.Spec.Selector == nil {
		j.Spec.Selector = &metav1.LabelSelector{}
	}
	if j.Spec.Selector.MatchLabels == nil {
		j.Spec.Selector.MatchLabels = map[string]string{}
	}
	if _, ok := j.Spec.Selector.MatchLabels[batchv1.ControllerUidLabel]; !ok {
		j.Spec.Selector.MatchLabels[batchv1.ControllerUidLabel] = string(j.UID)
	}
	if len(j.Labels) == 0 {
		j.Labels = maps.Clone(j.Spec.Template.Labels)
	}
}
