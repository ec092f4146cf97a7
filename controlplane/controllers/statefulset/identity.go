package statefulset

import (
	"fmt"
	"regexp"
	"strconv"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/glassplane/glassplane/controlplane/controllers/internal/controllerutil"
)

// statefulPodRegex splits a pod name into its set's name and its ordinal.
var statefulPodRegex = regexp.MustCompile("(.*)-([0-9]+)$")

// parentAndOrdinal returns the set name and ordinal in pod's name, or ""
// and -1 when it is not a StatefulSet pod's name.
func parentAndOrdinal(pod *v1.Pod) (string, int) {
	m := statefulPodRegex.FindStringSubmatch(pod.Name)
	if len(m) < 3 {
		return "", -1
	}
	i, err := strconv.ParseInt(m[2], 10, 32)
	if err != nil {
		return m[1], -1
	}
	return m[1], int(i)
}

func ordinalOf(pod *v1.Pod) int {
	_, o := parentAndOrdinal(pod)
	return o
}

func isMemberOf(set *appsv1.StatefulSet, pod *v1.Pod) bool {
	p, _ := parentAndOrdinal(pod)
	return p == set.Name
}

// startOrdinal is spec.ordinals.start, 0 when unset.
func startOrdinal(set *appsv1.StatefulSet) int {
	if set.Spec.Ordinals != nil {
		return int(set.Spec.Ordinals.Start)
	}
	return 0
}

func replicasOf(set *appsv1.StatefulSet) int {
	if set.Spec.Replicas == nil {
		return 1
	}
	return int(*set.Spec.Replicas)
}

// endOrdinal is the last ordinal the set runs (inclusive).
func endOrdinal(set *appsv1.StatefulSet) int {
	return startOrdinal(set) + replicasOf(set) - 1
}

func inOrdinalRange(pod *v1.Pod, set *appsv1.StatefulSet) bool {
	o := ordinalOf(pod)
	return o >= startOrdinal(set) && o <= endOrdinal(set)
}

func podName(set *appsv1.StatefulSet, ordinal int) string {
	return fmt.Sprintf("%s-%d", set.Name, ordinal)
}

// claimName is the name of the claim of template for the pod of ordinal:
// <template>-<set>-<ordinal>.
func claimName(set *appsv1.StatefulSet, template *v1.PersistentVolumeClaim, ordinal int) string {
	return fmt.Sprintf("%s-%s-%d", template.Name, set.Name, ordinal)
}

// identityMatches reports whether pod has the name, namespace and pod-name
// label of a member of set.
func identityMatches(set *appsv1.StatefulSet, pod *v1.Pod) bool {
	parent, ordinal := parentAndOrdinal(pod)
	return ordinal >= 0 && parent == set.Name && pod.Name == podName(set, ordinal) &&
		pod.Namespace == set.Namespace && pod.Labels[appsv1.StatefulSetPodNameLabel] == pod.Name
}

// storageMatches reports whether pod mounts each of its claims from the
// set's volumeClaimTemplates.
func storageMatches(set *appsv1.StatefulSet, pod *v1.Pod) bool {
	ordinal := ordinalOf(pod)
	if ordinal < 0 {
		return false
	}
	volumes := make(map[string]v1.Volume, len(pod.Spec.Volumes))
	for _, vol := range pod.Spec.Volumes {
		volumes[vol.Name] = vol
	}
	for i := range set.Spec.VolumeClaimTemplates {
		t := &set.Spec.VolumeClaimTemplates[i]
		vol, ok := volumes[t.Name]
		if !ok || vol.PersistentVolumeClaim == nil || vol.PersistentVolumeClaim.ClaimName != claimName(set, t, ordinal) {
			return false
		}
	}
	return true
}

// claimsFor returns the claims pod needs, by template name: each template
// named for the pod, in the set's namespace, with the selector's
// matchLabels added to its labels.
func claimsFor(set *appsv1.StatefulSet, pod *v1.Pod) map[string]v1.PersistentVolumeClaim {
	ordinal := ordinalOf(pod)
	claims := make(map[string]v1.PersistentVolumeClaim, len(set.Spec.VolumeClaimTemplates))
	for i := range set.Spec.VolumeClaimTemplates {
		claim := set.Spec.VolumeClaimTemplates[i].DeepCopy()
		claim.Name = claimName(set, claim, ordinal)
		claim.Namespace = set.Namespace
		if claim.Labels == nil {
			claim.Labels = map[string]string{}
		}
		if set.Spec.Selector != nil {
			for k, v := range set.Spec.Selector.MatchLabels {
				claim.Labels[k] = v
			}
		}
		claims[set.Spec.VolumeClaimTemplates[i].Name] = *claim
	}
	return claims
}

// updateStorage makes pod's volumes mount its claims, replacing volumes of
// the same names.
func updateStorage(set *appsv1.StatefulSet, pod *v1.Pod) {
	claims := claimsFor(set, pod)
	volumes := make([]v1.Volume, 0, len(claims)+len(pod.Spec.Volumes))
	for i := range set.Spec.VolumeClaimTemplates {
		name := set.Spec.VolumeClaimTemplates[i].Name
		volumes = append(volumes, v1.Volume{Name: name, VolumeSource: v1.VolumeSource{
			PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: claims[name].Name},
		}})
	}
	for _, vol := range pod.Spec.Volumes {
		if _, ok := claims[vol.Name]; !ok {
			volumes = append(volumes, vol)
		}
	}
	pod.Spec.Volumes = volumes
}

// initIdentity gives a new pod its identity, hostname and subdomain.
func initIdentity(set *appsv1.StatefulSet, pod *v1.Pod) {
	updateIdentity(set, pod)
	pod.Spec.Hostname = pod.Name
	pod.Spec.Subdomain = set.Spec.ServiceName
}

// updateIdentity sets pod's name, namespace and its pod-name and pod-index
// labels from its ordinal.
func updateIdentity(set *appsv1.StatefulSet, pod *v1.Pod) {
	ordinal := ordinalOf(pod)
	pod.Name = podName(set, ordinal)
	pod.Namespace = set.Namespace
	if pod.Labels == nil {
		pod.Labels = map[string]string{}
	}
	pod.Labels[appsv1.StatefulSetPodNameLabel] = pod.Name
	pod.Labels[appsv1.PodIndexLabel] = strconv.Itoa(ordinal)
}

func isRunningAndReady(pod *v1.Pod) bool {
	return pod.Status.Phase == v1.PodRunning && controllerutil.IsPodReady(pod)
}

func isRunningAndAvailable(pod *v1.Pod, minReadySeconds int32) bool {
	return controllerutil.IsPodAvailable(pod, minReadySeconds, time.Now())
}

// isCreated reports whether the API server holds pod (it has a phase).
func isCreated(pod *v1.Pod) bool { return pod.Status.Phase != "" }

func isPending(pod *v1.Pod) bool     { return pod.Status.Phase == v1.PodPending }
func isFailed(pod *v1.Pod) bool      { return pod.Status.Phase == v1.PodFailed }
func isSucceeded(pod *v1.Pod) bool   { return pod.Status.Phase == v1.PodSucceeded }
func isTerminating(pod *v1.Pod) bool { return pod.DeletionTimestamp != nil }

// isHealthy reports whether pod is running, ready and not being deleted.
func isHealthy(pod *v1.Pod) bool { return isRunningAndReady(pod) && !isTerminating(pod) }

// allowsBurst reports whether pods are managed in Parallel.
func allowsBurst(set *appsv1.StatefulSet) bool {
	return set.Spec.PodManagementPolicy == appsv1.ParallelPodManagement
}

func setPodRevision(pod *v1.Pod, revision string) {
	if pod.Labels == nil {
		pod.Labels = map[string]string{}
	}
	pod.Labels[appsv1.StatefulSetRevisionLabel] = revision
}

func podRevision(pod *v1.Pod) string { return pod.Labels[appsv1.StatefulSetRevisionLabel] }

// newStatefulSetPod returns the pod of ordinal as set's template makes it.
func newStatefulSetPod(set *appsv1.StatefulSet, ordinal int) *v1.Pod {
	pod := controllerutil.PodFromTemplate(&set.Spec.Template, set, controllerutil.NewControllerRef(set, controllerKind))
	pod.GenerateName = ""
	pod.Name = podName(set, ordinal)
	initIdentity(set, pod)
	updateStorage(set, pod)
	return pod
}

// newVersionedPod returns the pod of ordinal at the current revision when
// the rolling update's partition (or, without one, the current replicas)
// keeps it there, else at the update revision.
func newVersionedPod(currentSet, updateSet *appsv1.StatefulSet, currentRevision, updateRevision string, ordinal int) *v1.Pod {
	ru := currentSet.Spec.UpdateStrategy.RollingUpdate
	if (currentSet.Spec.UpdateStrategy.Type == appsv1.RollingUpdateStatefulSetStrategyType &&
		ru == nil && ordinal < startOrdinal(currentSet)+int(currentSet.Status.CurrentReplicas)) ||
		(ru != nil && ru.Partition != nil && ordinal < startOrdinal(currentSet)+int(*ru.Partition)) {
		pod := newStatefulSetPod(currentSet, ordinal)
		setPodRevision(pod, currentRevision)
		return pod
	}
	pod := newStatefulSetPod(updateSet, ordinal)
	setPodRevision(pod, updateRevision)
	return pod
}

// maxUnavailableOf is how many pods a rolling update may have down at
// once: maxUnavailable scaled to the replicas, rounded down, at least 1.
func maxUnavailableOf(mu *intstr.IntOrString, replicas int) (int, error) {
	n, err := intstr.GetScaledValueFromIntOrPercent(intstr.ValueOrDefault(mu, intstr.FromInt32(1)), replicas, false)
	if err != nil {
		return 0, err
	}
	return max(n, 1), nil
}
