package volume

import (
	"context"
	"log/slog"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"

	"github.com/glassplane/glassplane/controlplane/controllers/internal/controllertest"
	"github.com/glassplane/glassplane/controlplane/localpath"
)

type fixture struct {
	client   kubernetes.Interface
	binder   *Binder
	claims   *ClaimProtection
	events   *controllertest.Recorder
	provided *controllertest.Recorder
}

func newFixture(t *testing.T, objs ...runtime.Object) *fixture {
	t.Helper()
	client := controllertest.NewClientset(objs...)
	f := informers.NewSharedInformerFactory(client, 0)
	events, provided := &controllertest.Recorder{}, &controllertest.Recorder{}
	b, err := NewBinder(slog.New(slog.DiscardHandler), client, events, provided, f.Core().V1().PersistentVolumes(),
		f.Core().V1().PersistentVolumeClaims(), f.Storage().V1().StorageClasses(), f.Core().V1().Nodes())
	if err != nil {
		t.Fatal(err)
	}
	cp, err := NewClaimProtection(slog.New(slog.DiscardHandler), client, f.Core().V1().PersistentVolumeClaims(), f.Core().V1().Pods())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	f.Start(ctx.Done())
	f.WaitForCacheSync(ctx.Done())
	return &fixture{client: client, binder: b, claims: cp, events: events, provided: provided}
}

// settle syncs the claim and every volume until cond holds.
func (f *fixture) settle(t *testing.T, claim string, cond func() bool) {
	t.Helper()
	ctx := context.Background()
	// The informers hear of each write soon, not at once: on a busy
	// machine that can take more than a second.
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); {
		if err := f.binder.syncClaim(ctx, "default/"+claim); err != nil {
			t.Logf("sync claim: %v", err)
		}
		pvs, _ := f.binder.pvLister.List(everything())
		for _, pv := range pvs {
			if err := f.binder.syncVolume(ctx, pv.Name); err != nil {
				t.Logf("sync volume: %v", err)
			}
		}
		if cond() {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("claim %s never settled", claim)
}

func pvc(name, class, size string) *v1.PersistentVolumeClaim {
	c := &v1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-" + name)},
		Spec: v1.PersistentVolumeClaimSpec{
			AccessModes: []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce},
			Resources:   v1.VolumeResourceRequirements{Requests: v1.ResourceList{v1.ResourceStorage: resource.MustParse(size)}},
		},
		Status: v1.PersistentVolumeClaimStatus{Phase: v1.ClaimPending},
	}
	if class != "-" {
		c.Spec.StorageClassName = &class
	}
	return c
}

func staticPV(name, class, size string) *v1.PersistentVolume {
	return &v1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: v1.PersistentVolumeSpec{
			Capacity:                      v1.ResourceList{v1.ResourceStorage: resource.MustParse(size)},
			AccessModes:                   []v1.PersistentVolumeAccessMode{v1.ReadWriteOnce},
			StorageClassName:              class,
			PersistentVolumeReclaimPolicy: v1.PersistentVolumeReclaimRetain,
			PersistentVolumeSource:        v1.PersistentVolumeSource{HostPath: &v1.HostPathVolumeSource{Path: "/tmp/" + name}},
		},
		Status: v1.PersistentVolumeStatus{Phase: v1.VolumePending},
	}
}

func (f *fixture) claim(t *testing.T, name string) *v1.PersistentVolumeClaim {
	c, err := f.client.CoreV1().PersistentVolumeClaims("default").Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func (f *fixture) volume(t *testing.T, name string) *v1.PersistentVolume {
	pv, err := f.client.CoreV1().PersistentVolumes().Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return pv
}

func TestBinderBindsTheSmallestMatchingVolume(t *testing.T) {
	f := newFixture(t, pvc("data", "manual", "500Mi"), staticPV("small", "manual", "100Mi"),
		staticPV("big", "manual", "1Gi"), staticPV("huge", "manual", "10Gi"), staticPV("other-class", "fast", "1Gi"))
	f.settle(t, "data", func() bool {
		c, _ := f.binder.pvcLister.PersistentVolumeClaims("default").Get("data")
		return c.Status.Phase == v1.ClaimBound
	})
	c := f.claim(t, "data")
	if c.Spec.VolumeName != "big" || c.Status.Capacity.Storage().String() != "1Gi" || c.Annotations["pv.kubernetes.io/bind-completed"] != "yes" {
		t.Errorf("claim: volume %q capacity %v annotations %v", c.Spec.VolumeName, c.Status.Capacity, c.Annotations)
	}
	pv := f.volume(t, "big")
	if pv.Status.Phase != v1.VolumeBound || pv.Spec.ClaimRef == nil || pv.Spec.ClaimRef.UID != c.UID {
		t.Errorf("volume big: phase %s claimRef %+v", pv.Status.Phase, pv.Spec.ClaimRef)
	}
}

func TestBinderLeavesTooBigClaimPending(t *testing.T) {
	f := newFixture(t, pvc("data", "manual", "1Gi"), staticPV("small", "manual", "100Mi"))
	f.settle(t, "data", func() bool {
		pv, _ := f.binder.pvLister.Get("small")
		return pv.Status.Phase == v1.VolumeAvailable
	})
	if c := f.claim(t, "data"); c.Spec.VolumeName != "" || c.Status.Phase != v1.ClaimPending {
		t.Errorf("claim of 1Gi bound to %q (%s) with only a 100Mi volume", c.Spec.VolumeName, c.Status.Phase)
	}
}

func TestBinderReleasesAndDeletes(t *testing.T) {
	bound := staticPV("retained", "manual", "1Gi")
	bound.Spec.ClaimRef = &v1.ObjectReference{Namespace: "default", Name: "gone", UID: "uid-gone"}
	bound.Status.Phase = v1.VolumeBound
	local := bound.DeepCopy()
	local.Name = "pvc-local"
	local.Annotations = map[string]string{localpath.AnnotationProvisionedBy: localpath.Provisioner}
	local.Spec.PersistentVolumeReclaimPolicy = v1.PersistentVolumeReclaimDelete
	f := newFixture(t, bound, local)
	ctx := context.Background()
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		_ = f.binder.syncVolume(ctx, "retained")
		_ = f.binder.syncVolume(ctx, "pvc-local")
		_, err := f.client.CoreV1().PersistentVolumes().Get(ctx, "pvc-local", metav1.GetOptions{})
		if pv, perr := f.client.CoreV1().PersistentVolumes().Get(ctx, "retained", metav1.GetOptions{}); perr == nil && pv.Status.Phase == v1.VolumeReleased && err != nil {
			break
		}
	}
	if pv := f.volume(t, "retained"); pv.Status.Phase != v1.VolumeReleased {
		t.Errorf("Retain volume of a deleted claim: %s, want Released", pv.Status.Phase)
	}
	if _, err := f.client.CoreV1().PersistentVolumes().Get(ctx, "pvc-local", metav1.GetOptions{}); err == nil {
		t.Errorf("released local-path volume with reclaim Delete still exists")
	}
}

func TestProvisionerWaitsForFirstConsumerThenProvisions(t *testing.T) {
	wait := storagev1.VolumeBindingWaitForFirstConsumer
	reclaim := v1.PersistentVolumeReclaimDelete
	class := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "standard"}, Provisioner: localpath.Provisioner,
		VolumeBindingMode: &wait, ReclaimPolicy: &reclaim}
	node := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-1", Annotations: map[string]string{localpath.AnnotationDir: "/srv/gp/volumes"}}}
	f := newFixture(t, class, node, pvc("data", "standard", "64Mi"))
	if err := f.binder.syncClaim(context.Background(), "default/data"); err != nil {
		t.Fatal(err)
	}
	if got := f.events.Events(); !slices.Contains(got, "Normal WaitForFirstConsumer waiting for first consumer to be created before binding") {
		t.Fatalf("events %q", got)
	}
	c := f.claim(t, "data")
	c.Annotations = map[string]string{"volume.kubernetes.io/selected-node": "node-1"}
	if _, err := f.client.CoreV1().PersistentVolumeClaims("default").Update(context.Background(), c, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	f.settle(t, "data", func() bool {
		c, _ := f.binder.pvcLister.PersistentVolumeClaims("default").Get("data")
		return c.Status.Phase == v1.ClaimBound
	})
	pv := f.volume(t, "pvc-uid-data")
	if pv.Spec.HostPath.Path != "/srv/gp/volumes/pvc-uid-data" || pv.Spec.PersistentVolumeReclaimPolicy != reclaim ||
		pv.Spec.NodeAffinity.Required.NodeSelectorTerms[0].MatchExpressions[0].Values[0] != "node-1" ||
		!slices.Contains(pv.Finalizers, localpath.CleanupFinalizer) {
		t.Errorf("provisioned volume: %+v", pv.Spec)
	}
	joined := strings.Join(append(f.events.Events(), f.provided.Events()...), "\n")
	for _, want := range []string{"Normal ExternalProvisioning Waiting for a volume to be created either by the external provisioner 'glassplane.io/local-path'",
		`Normal Provisioning External provisioner is provisioning volume for claim "default/data"`, "Normal ProvisioningSucceeded Successfully provisioned volume pvc-uid-data"} {
		if !strings.Contains(joined, want) {
			t.Errorf("events lack %q:\n%s", want, joined)
		}
	}
}

func TestClaimProtection(t *testing.T) {
	now := metav1.Now()
	deleting := pvc("data", "-", "1Gi")
	deleting.DeletionTimestamp = &now
	deleting.Finalizers = []string{PVCProtectionFinalizer}
	user := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "user", Namespace: "default"}, Spec: v1.PodSpec{Volumes: []v1.Volume{{Name: "d",
		VolumeSource: v1.VolumeSource{PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}}}},
		Status: v1.PodStatus{Phase: v1.PodRunning}}
	f := newFixture(t, deleting, user, pvc("fresh", "-", "1Gi"))
	ctx := context.Background()
	if err := f.claims.sync(ctx, "default/data"); err != nil {
		t.Fatal(err)
	}
	if c := f.claim(t, "data"); !slices.Contains(c.Finalizers, PVCProtectionFinalizer) {
		t.Errorf("finalizer removed while a running pod uses the claim")
	}
	if err := f.claims.sync(ctx, "default/fresh"); err != nil {
		t.Fatal(err)
	}
	if c := f.claim(t, "fresh"); !slices.Contains(c.Finalizers, PVCProtectionFinalizer) {
		t.Errorf("new claim has no protection finalizer: %v", c.Finalizers)
	}
	if err := f.client.CoreV1().Pods("default").Delete(ctx, "user", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	// The controller reads pods from its informer: wait until it has heard
	// of the delete (on a busy machine that can take more than a second).
	for deadline := time.Now().Add(30 * time.Second); ; {
		if pods, _ := f.claims.podLister.List(everything()); len(pods) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the pod informer never saw the pod's delete")
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := f.claims.sync(ctx, "default/data"); err != nil {
		t.Fatal(err)
	}
	if c := f.claim(t, "data"); slices.Contains(c.Finalizers, PVCProtectionFinalizer) {
		t.Errorf("finalizer kept after the pod went away")
	}
}

func everything() labels.Selector { return labels.Everything() }
