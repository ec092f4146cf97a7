package admission

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
)

// ServiceAccount admission constants, as Kubernetes'
// plugin/pkg/admission/serviceaccount.
const (
	ServiceAccountPluginName = "ServiceAccount"
	// DefaultServiceAccountName is the service account pods run as unless
	// they name another.
	DefaultServiceAccountName = "default"
	// ServiceAccountVolumeNamePrefix starts the name of the projected token
	// volume ("kube-api-access-" and five random characters).
	ServiceAccountVolumeNamePrefix = "kube-api-access-"
	// DefaultAPITokenMountPath is where containers find the token, the CA
	// and the namespace.
	DefaultAPITokenMountPath = "/var/run/secrets/kubernetes.io/serviceaccount"
	// RootCAConfigMapName is the ConfigMap in every namespace holding the
	// cluster CA as ca.crt.
	RootCAConfigMapName = "kube-root-ca.crt"
	// WarnOnlyBoundTokenExpirationSeconds is the lifetime the projected
	// token asks for (Kubernetes' 1h + 7s).
	WarnOnlyBoundTokenExpirationSeconds = 3607
	// mirrorPodAnnotation marks a node's static pods.
	mirrorPodAnnotation = "kubernetes.io/config.mirror"
	// defaultServiceAccountLookups is how often the default service account
	// is looked up before giving up: the ServiceAccount controller creates it
	// moments after its namespace, so a pod created right then waits.
	defaultServiceAccountLookups = 10
)

// ServiceAccountLister reads a ServiceAccount from storage.
type ServiceAccountLister interface {
	GetServiceAccount(ctx context.Context, namespace, name string) (sa *corev1.ServiceAccount, found bool, err error)
}

// ServiceAccount is Kubernetes' ServiceAccount admission plugin: a new pod
// runs as the "default" service account unless it names one, that account
// must exist, and unless automounting is turned off (by the pod, else by the
// account) every container mounts the projected kube-api-access volume
// (token, ca.crt, namespace) at DefaultAPITokenMountPath.
type ServiceAccount struct {
	accounts   ServiceAccountLister
	namespaces NamespaceLister
	// retryInterval is the wait between lookups of the default account.
	retryInterval time.Duration
}

var (
	_ MutationInterface   = &ServiceAccount{}
	_ ValidationInterface = &ServiceAccount{}
)

// NewServiceAccount returns the plugin reading service accounts and
// namespaces through the given listers.
func NewServiceAccount(accounts ServiceAccountLister, namespaces NamespaceLister) *ServiceAccount {
	return &ServiceAccount{
		accounts:      accounts,
		namespaces:    namespaces,
		retryInterval: time.Duration(100+rand.IntN(100)) * time.Millisecond,
	}
}

// Name implements Plugin.
func (p *ServiceAccount) Name() string { return ServiceAccountPluginName }

func podToAdmit(a *Attributes) (*corev1.Pod, bool) {
	if a.Operation != Create || a.Resource.Group != "" || a.Resource.Resource != "pods" || a.Subresource != "" {
		return nil, false
	}
	pod, ok := a.Object.(*corev1.Pod)
	return pod, ok
}

// Handles implements Handler: pod creations only.
func (p *ServiceAccount) Handles(a *Attributes) bool {
	_, ok := podToAdmit(a)
	return ok
}

// Admit implements MutationInterface.
func (p *ServiceAccount) Admit(ctx context.Context, a *Attributes) error {
	pod, ok := podToAdmit(a)
	if !ok {
		return nil
	}
	if _, mirror := pod.Annotations[mirrorPodAnnotation]; mirror {
		return nil
	}
	if pod.Spec.ServiceAccountName == "" {
		pod.Spec.ServiceAccountName = pod.Spec.DeprecatedServiceAccount
	}
	if pod.Spec.ServiceAccountName == "" {
		pod.Spec.ServiceAccountName = DefaultServiceAccountName
	}
	pod.Spec.DeprecatedServiceAccount = pod.Spec.ServiceAccountName
	sa, err := p.lookup(ctx, a.Namespace, pod.Spec.ServiceAccountName)
	if err != nil {
		if _, found, nsErr := p.namespaces.GetNamespacePhase(ctx, a.Namespace); nsErr == nil && !found {
			// NamespaceLifecycle refuses the pod with the namespace's NotFound.
			return nil
		}
		if apierrors.IsNotFound(err) || apierrors.IsInternalError(err) {
			return apierrors.NewForbidden(a.Resource.GroupResource(), objectNameForError(a),
				fmt.Errorf("error looking up service account %s/%s: %w", a.Namespace, pod.Spec.ServiceAccountName, err))
		}
		return err
	}
	if shouldAutomount(sa, pod) {
		mountServiceAccountToken(pod)
	}
	if len(pod.Spec.ImagePullSecrets) == 0 && len(sa.ImagePullSecrets) > 0 {
		for _, s := range sa.ImagePullSecrets {
			pod.Spec.ImagePullSecrets = append(pod.Spec.ImagePullSecrets, corev1.LocalObjectReference{Name: s.Name})
		}
	}
	return nil
}

// Validate implements ValidationInterface: mirror pods may not reference
// service accounts, every other new pod must name one.
func (p *ServiceAccount) Validate(_ context.Context, a *Attributes) error {
	pod, ok := podToAdmit(a)
	if !ok {
		return nil
	}
	if _, mirror := pod.Annotations[mirrorPodAnnotation]; mirror {
		if pod.Spec.ServiceAccountName != "" {
			return apierrors.NewForbidden(a.Resource.GroupResource(), objectNameForError(a), fmt.Errorf("a mirror pod may not reference service accounts"))
		}
		return nil
	}
	if pod.Spec.ServiceAccountName == "" {
		return apierrors.NewForbidden(a.Resource.GroupResource(), objectNameForError(a), fmt.Errorf("no service account specified for pod %s/%s", a.Namespace, pod.Name))
	}
	return nil
}

// lookup reads the service account, trying the default one several times
// as Kubernetes' plugin does. It returns a NotFound error when it is absent.
func (p *ServiceAccount) lookup(ctx context.Context, namespace, name string) (*corev1.ServiceAccount, error) {
	attempts := 1
	if name == DefaultServiceAccountName {
		attempts = defaultServiceAccountLookups
	}
	for i := 0; i < attempts; i++ {
		if i > 0 {
			t := time.NewTimer(p.retryInterval)
			select {
			case <-ctx.Done():
				t.Stop()
				return nil, apierrors.NewInternalError(ctx.Err())
			case <-t.C:
			}
		}
		sa, found, err := p.accounts.GetServiceAccount(ctx, namespace, name)
		if err != nil {
			return nil, apierrors.NewInternalError(err)
		}
		if found {
			return sa, nil
		}
	}
	// Kubernetes' lister names the resource in the singular here.
	return nil, apierrors.NewNotFound(corev1.Resource("serviceaccount"), name)
}

// shouldAutomount: the pod's automountServiceAccountToken wins, then the
// account's, else true.
func shouldAutomount(sa *corev1.ServiceAccount, pod *corev1.Pod) bool {
	if pod.Spec.AutomountServiceAccountToken != nil {
		return *pod.Spec.AutomountServiceAccountToken
	}
	if sa.AutomountServiceAccountToken != nil {
		return *sa.AutomountServiceAccountToken
	}
	return true
}

// mountServiceAccountToken adds the kube-api-access volume (reusing one the
// pod has already) and mounts it in every init and app container without a
// mount at DefaultAPITokenMountPath.
func mountServiceAccountToken(pod *corev1.Pod) {
	volumeName := ""
	for _, v := range pod.Spec.Volumes {
		if strings.HasPrefix(v.Name, ServiceAccountVolumeNamePrefix) {
			volumeName = v.Name
			break
		}
	}
	hasVolume := volumeName != ""
	if !hasVolume {
		volumeName = ServiceAccountVolumeNamePrefix + utilrand.String(5)
	}
	mount := corev1.VolumeMount{Name: volumeName, ReadOnly: true, MountPath: DefaultAPITokenMountPath}
	needsVolume := false
	for _, containers := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range containers {
			if !hasMountAt(containers[i].VolumeMounts, DefaultAPITokenMountPath) {
				containers[i].VolumeMounts = append(containers[i].VolumeMounts, mount)
				needsVolume = true
			}
		}
	}
	if !hasVolume && needsVolume {
		pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{Name: volumeName, VolumeSource: corev1.VolumeSource{Projected: TokenVolumeSource()}})
	}
}

func hasMountAt(mounts []corev1.VolumeMount, path string) bool {
	for _, m := range mounts {
		if m.MountPath == path {
			return true
		}
	}
	return false
}

// TokenVolumeSource is the projected volume Kubernetes mounts for the
// service account: a bound token, the cluster CA and the pod's namespace.
func TokenVolumeSource() *corev1.ProjectedVolumeSource {
	mode := corev1.ProjectedVolumeSourceDefaultMode
	expiration := int64(WarnOnlyBoundTokenExpirationSeconds)
	return &corev1.ProjectedVolumeSource{
		DefaultMode: &mode,
		Sources: []corev1.VolumeProjection{
			{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token", ExpirationSeconds: &expiration}},
			{ConfigMap: &corev1.ConfigMapProjection{
				LocalObjectReference: corev1.LocalObjectReference{Name: RootCAConfigMapName},
				Items:                []corev1.KeyToPath{{Key: "ca.crt", Path: "ca.crt"}},
			}},
			{DownwardAPI: &corev1.DownwardAPIProjection{Items: []corev1.DownwardAPIVolumeFile{
				{Path: "namespace", FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.namespace"}},
			}}},
		},
	}
}
