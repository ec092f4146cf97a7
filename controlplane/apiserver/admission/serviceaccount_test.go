package admission

import (
	"context"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// fakeAccounts is a ServiceAccountLister over a map keyed namespace/name.
type fakeAccounts map[string]*corev1.ServiceAccount

func (f fakeAccounts) GetServiceAccount(_ context.Context, namespace, name string) (*corev1.ServiceAccount, bool, error) {
	sa, ok := f[namespace+"/"+name]
	return sa, ok, nil
}

func TestServiceAccountAdmission(t *testing.T) {
	no := false
	accounts := fakeAccounts{
		"default/default": {ObjectMeta: metaNS("default", "default")},
		"default/builder": {ObjectMeta: metaNS("builder", "default"), ImagePullSecrets: []corev1.LocalObjectReference{{Name: "regcred"}}},
		"default/quiet":   {ObjectMeta: metaNS("quiet", "default"), AutomountServiceAccountToken: &no},
	}
	namespaces := fakeNamespaces{"default": corev1.NamespaceActive, "empty": corev1.NamespaceActive}
	tests := []struct {
		name      string
		namespace string
		pod       func(p *corev1.Pod)
		wantSA    string
		wantMount bool
		wantErr   string
	}{
		{name: "default account", namespace: "default", wantSA: "default", wantMount: true},
		{name: "named account with pull secrets", namespace: "default", pod: func(p *corev1.Pod) { p.Spec.ServiceAccountName = "builder" }, wantSA: "builder", wantMount: true},
		{name: "deprecated serviceAccount field", namespace: "default", pod: func(p *corev1.Pod) { p.Spec.DeprecatedServiceAccount = "builder" }, wantSA: "builder", wantMount: true},
		{name: "account opts out", namespace: "default", pod: func(p *corev1.Pod) { p.Spec.ServiceAccountName = "quiet" }, wantSA: "quiet"},
		{name: "pod opts out", namespace: "default", pod: func(p *corev1.Pod) { p.Spec.AutomountServiceAccountToken = &no }, wantSA: "default"},
		{name: "pod opts in over the account", namespace: "default", pod: func(p *corev1.Pod) {
			yes := true
			p.Spec.ServiceAccountName, p.Spec.AutomountServiceAccountToken = "quiet", &yes
		}, wantSA: "quiet", wantMount: true},
		{name: "missing named account", namespace: "default", pod: func(p *corev1.Pod) { p.Spec.ServiceAccountName = "ghost" },
			wantErr: `pods "mypod" is forbidden: error looking up service account default/ghost: serviceaccount "ghost" not found`},
		{name: "default account not created yet", namespace: "empty",
			wantErr: `pods "mypod" is forbidden: error looking up service account empty/default: serviceaccount "default" not found`},
		{name: "missing namespace left to NamespaceLifecycle", namespace: "nowhere", wantSA: "default"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := NewServiceAccount(accounts, namespaces)
			p.retryInterval = time.Millisecond
			pod := seedPod()
			pod.Namespace = tc.namespace
			pod.Spec.InitContainers = []corev1.Container{{Name: "init", Image: "busybox"}}
			if tc.pod != nil {
				tc.pod(pod)
			}
			steps, err := NewChain(p).Run(context.Background(), &Attributes{
				Operation: Create, Resource: podsResource, Kind: podKind, Namespace: tc.namespace, Name: pod.Name, Object: pod,
			})
			if tc.wantErr != "" {
				if !apierrors.IsForbidden(err) || err.Error() != tc.wantErr {
					t.Fatalf("err = %v, want Forbidden %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if pod.Spec.ServiceAccountName != tc.wantSA || pod.Spec.DeprecatedServiceAccount != tc.wantSA {
				t.Errorf("service account %q/%q, want %q", pod.Spec.ServiceAccountName, pod.Spec.DeprecatedServiceAccount, tc.wantSA)
			}
			if tc.namespace == "nowhere" {
				return
			}
			if !tc.wantMount {
				if len(pod.Spec.Volumes) != 0 || len(pod.Spec.Containers[0].VolumeMounts) != 0 {
					t.Errorf("mounted a token: %+v", pod.Spec.Volumes)
				}
				return
			}
			if len(pod.Spec.Volumes) != 1 || !strings.HasPrefix(pod.Spec.Volumes[0].Name, ServiceAccountVolumeNamePrefix) || len(pod.Spec.Volumes[0].Name) != len(ServiceAccountVolumeNamePrefix)+5 {
				t.Fatalf("volumes %+v", pod.Spec.Volumes)
			}
			proj := pod.Spec.Volumes[0].Projected
			if proj == nil || *proj.DefaultMode != 0o644 || len(proj.Sources) != 3 || *proj.Sources[0].ServiceAccountToken.ExpirationSeconds != 3607 ||
				proj.Sources[1].ConfigMap.Name != "kube-root-ca.crt" || proj.Sources[2].DownwardAPI.Items[0].FieldRef.FieldPath != "metadata.namespace" {
				t.Errorf("projected volume %+v", proj)
			}
			want := corev1.VolumeMount{Name: pod.Spec.Volumes[0].Name, ReadOnly: true, MountPath: DefaultAPITokenMountPath}
			for _, c := range append(pod.Spec.InitContainers, pod.Spec.Containers...) {
				if len(c.VolumeMounts) != 1 || !equality.Semantic.DeepEqual(c.VolumeMounts[0], want) {
					t.Errorf("container %s mounts %+v", c.Name, c.VolumeMounts)
				}
			}
			if tc.wantSA == "builder" && (len(pod.Spec.ImagePullSecrets) != 1 || pod.Spec.ImagePullSecrets[0].Name != "regcred") {
				t.Errorf("image pull secrets %+v", pod.Spec.ImagePullSecrets)
			}
			if len(steps) != 2 || steps[0].Plugin != ServiceAccountPluginName || !strings.Contains(steps[0].Patch, DefaultAPITokenMountPath) {
				t.Errorf("steps %+v", steps)
			}
		})
	}
}

func TestServiceAccountAdmissionKeepsExistingMounts(t *testing.T) {
	p := NewServiceAccount(fakeAccounts{"default/default": {ObjectMeta: metaNS("default", "default")}}, fakeNamespaces{"default": corev1.NamespaceActive})
	pod := seedPod()
	pod.Spec.Containers = append(pod.Spec.Containers, corev1.Container{Name: "own", Image: "nginx",
		VolumeMounts: []corev1.VolumeMount{{Name: "mine", MountPath: DefaultAPITokenMountPath}}})
	pod.Spec.Volumes = []corev1.Volume{{Name: "kube-api-access-abcde", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
	if err := p.Admit(context.Background(), &Attributes{Operation: Create, Resource: podsResource, Kind: podKind, Namespace: "default", Object: pod}); err != nil {
		t.Fatal(err)
	}
	if len(pod.Spec.Volumes) != 1 || pod.Spec.Containers[0].VolumeMounts[0].Name != "kube-api-access-abcde" || len(pod.Spec.Containers[1].VolumeMounts) != 1 {
		t.Errorf("volumes %+v mounts %+v %+v", pod.Spec.Volumes, pod.Spec.Containers[0].VolumeMounts, pod.Spec.Containers[1].VolumeMounts)
	}
}

func TestServiceAccountAdmissionSkips(t *testing.T) {
	p := NewServiceAccount(fakeAccounts{}, fakeNamespaces{})
	mirror := seedPod()
	mirror.Annotations = map[string]string{mirrorPodAnnotation: "x"}
	mirrorWithSA := mirror.DeepCopy()
	mirrorWithSA.Spec.ServiceAccountName = "default"
	tests := []struct {
		name    string
		attrs   *Attributes
		wantErr bool
	}{
		{"update", &Attributes{Operation: Update, Resource: podsResource, Kind: podKind, Namespace: "default", Object: seedPod(), OldObject: seedPod()}, false},
		{"status subresource", &Attributes{Operation: Create, Resource: podsResource, Subresource: "status", Kind: podKind, Namespace: "default", Object: seedPod()}, false},
		{"not a pod", &Attributes{Operation: Create, Resource: namespacesResource, Kind: namespaceKind, Object: &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "x"}}}, false},
		{"mirror pod", &Attributes{Operation: Create, Resource: podsResource, Kind: podKind, Namespace: "default", Object: mirror}, false},
		{"mirror pod naming an account", &Attributes{Operation: Create, Resource: podsResource, Kind: podKind, Namespace: "default", Object: mirrorWithSA}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, err := NewChain(p).Run(context.Background(), tc.attrs)
			if (err != nil) != tc.wantErr {
				t.Errorf("err = %v, want error %v", err, tc.wantErr)
			}
		})
	}
}
