package admission

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
)

func claim(name, size string, modes ...corev1.PersistentVolumeAccessMode) *corev1.PersistentVolumeClaim {
	pvc := &corev1.PersistentVolumeClaim{
		ObjectMeta: metaNS(name, "default"),
		Spec:       corev1.PersistentVolumeClaimSpec{AccessModes: modes},
	}
	if size != "" {
		pvc.Spec.Resources.Requests = corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(size)}
	}
	return pvc
}

func hostPathVolume(name, size string) *corev1.PersistentVolume {
	return &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:               corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(size)},
			AccessModes:            []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			PersistentVolumeSource: corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/data/" + name}},
		},
	}
}

func TestValidatePersistentVolumeClaim(t *testing.T) {
	cases := []struct {
		name string
		pvc  *corev1.PersistentVolumeClaim
		want []string
	}{
		{"valid", claim("data", "1Gi", corev1.ReadWriteOnce), nil},
		{"no storage request", claim("data", "", corev1.ReadWriteOnce), []string{"spec.resources[storage]: Required value"}},
		{"no access modes", claim("data", "1Gi"), []string{"spec.accessModes: Required value: at least 1 access mode is required"}},
		{"bad access mode", claim("data", "1Gi", "ReadWriteSometimes"), []string{`spec.accessModes: Unsupported value: "ReadWriteSometimes": supported values: "ReadOnlyMany", "ReadWriteMany", "ReadWriteOnce", "ReadWriteOncePod"`}},
		{"ReadWriteOncePod with others", claim("data", "1Gi", corev1.ReadWriteOncePod, corev1.ReadWriteOnce), []string{"spec.accessModes: Forbidden: may not use ReadWriteOncePod with other access modes"}},
		{"zero storage", claim("data", "0", corev1.ReadWriteOnce), []string{`spec.resources[storage]: Invalid value: "0": must be greater than zero`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			Default(tc.pvc)
			assertStrings(t, errorStrings(Validate(tc.pvc, nil)), tc.want)
		})
	}
}

func TestValidatePersistentVolumeClaimUpdate(t *testing.T) {
	old := claim("data", "1Gi", corev1.ReadWriteOnce)
	Default(old)
	old.ResourceVersion = "5"
	boundOld := old.DeepCopy()
	boundOld.Spec.VolumeName = "pv-1"
	boundOld.Status.Phase = corev1.ClaimBound
	boundOld.Status.Capacity = corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}
	sized := func(base *corev1.PersistentVolumeClaim, size string) *corev1.PersistentVolumeClaim {
		c := base.DeepCopy()
		c.Spec.Resources.Requests[corev1.ResourceStorage] = resource.MustParse(size)
		return c
	}
	bound := old.DeepCopy()
	bound.Spec.VolumeName = "pv-1"
	changed := old.DeepCopy()
	changed.Spec.AccessModes = []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany}
	grownOnce := sized(boundOld, "3Gi")
	grownOnce.Status.Capacity = corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}
	immutable := "spec: Forbidden: spec is immutable after creation except resources.requests and volumeAttributesClassName for bound claims"
	cases := []struct {
		name     string
		pvc, old *corev1.PersistentVolumeClaim
		want     []string
	}{
		{"bound claim grows", sized(boundOld, "2Gi"), boundOld, nil},
		{"unbound claim grows", sized(old, "2Gi"), old, []string{immutable}},
		{"volumeName set once", bound, old, nil},
		{"access modes change", changed, old, []string{immutable}},
		{"bound claim shrinks to its capacity", sized(boundOld, "1Gi"), sized(boundOld, "3Gi"),
			[]string{"spec.resources.requests.storage: Forbidden: field can not be less than status.capacity"}},
		{"bound claim shrinks below its capacity", sized(boundOld, "512Mi"), boundOld,
			[]string{"spec.resources.requests.storage: Forbidden: field can not be less than status.capacity"}},
		{"failed expansion shrinks back above capacity", sized(grownOnce, "2Gi"), grownOnce, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			assertStrings(t, errorStrings(Validate(tc.pvc, tc.old)), tc.want)
		})
	}
}

func TestValidatePersistentVolume(t *testing.T) {
	noSource := hostPathVolume("pv-1", "1Gi")
	noSource.Spec.HostPath = nil
	local := hostPathVolume("pv-1", "1Gi")
	local.Spec.HostPath = nil
	local.Spec.Local = &corev1.LocalVolumeSource{Path: "/data/x"}
	noCapacity := hostPathVolume("pv-1", "1Gi")
	noCapacity.Spec.Capacity = nil
	backsteps := hostPathVolume("pv-1", "1Gi")
	backsteps.Spec.HostPath.Path = "/data/../etc"
	cases := []struct {
		name string
		pv   *corev1.PersistentVolume
		want []string
	}{
		{"valid", hostPathVolume("pv-1", "1Gi"), nil},
		{"no source", noSource, []string{"spec: Required value: must specify a volume type"}},
		{"local without node affinity", local, []string{"spec.nodeAffinity: Required value: Local volume requires node affinity"}},
		{"no capacity", noCapacity, []string{"spec.capacity: Required value", "spec.capacity: Unsupported value: null: supported values: \"storage\""}},
		{"path with ..", backsteps, []string{`spec.hostPath.path: Invalid value: "/data/../etc": must not contain '..'`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			Default(tc.pv)
			assertStrings(t, errorStrings(Validate(tc.pv, nil)), tc.want)
		})
	}

	old := hostPathVolume("pv-1", "1Gi")
	Default(old)
	old.ResourceVersion = "7"
	moved := old.DeepCopy()
	moved.Spec.HostPath.Path = "/elsewhere"
	got := errorStrings(Validate(moved, old))
	if len(got) != 1 || got[0] != "spec.persistentvolumesource: Forbidden: spec.persistentvolumesource is immutable after creation" {
		t.Errorf("changing the source: got %q", got)
	}
	pv := hostPathVolume("pv-1", "1Gi")
	Default(pv)
	if pv.Spec.PersistentVolumeReclaimPolicy != corev1.PersistentVolumeReclaimRetain || *pv.Spec.VolumeMode != corev1.PersistentVolumeFilesystem {
		t.Errorf("defaults: reclaim %q, mode %v; want Retain, Filesystem", pv.Spec.PersistentVolumeReclaimPolicy, pv.Spec.VolumeMode)
	}
}

func TestValidateStorageClass(t *testing.T) {
	sc := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "fast"}, Provisioner: "example.com/fast", Parameters: map[string]string{"type": "ssd"}}
	Default(sc)
	if *sc.ReclaimPolicy != corev1.PersistentVolumeReclaimDelete || *sc.VolumeBindingMode != storagev1.VolumeBindingImmediate {
		t.Fatalf("defaults: %v %v", *sc.ReclaimPolicy, *sc.VolumeBindingMode)
	}
	assertStrings(t, errorStrings(Validate(sc, nil)), nil)

	noProvisioner := sc.DeepCopy()
	noProvisioner.Provisioner = ""
	assertStrings(t, errorStrings(Validate(noProvisioner, nil)), []string{"provisioner: Required value"})

	sc.ResourceVersion = "3"
	changed := sc.DeepCopy()
	changed.Provisioner = "example.com/slow"
	changed.Parameters = map[string]string{"type": "hdd"}
	assertStrings(t, errorStrings(Validate(changed, sc)), []string{
		`parameters: Invalid value: {"type":"hdd"}: field is immutable`,
		`provisioner: Invalid value: "example.com/slow": field is immutable`,
	})
}

type fakeClasses []*storagev1.StorageClass

func (f fakeClasses) ListStorageClasses(context.Context) ([]*storagev1.StorageClass, error) {
	return f, nil
}

func TestDefaultStorageClass(t *testing.T) {
	now := time.Now()
	class := func(name string, isDefault bool, created time.Time) *storagev1.StorageClass {
		sc := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.NewTime(created)}}
		if isDefault {
			sc.Annotations = map[string]string{IsDefaultStorageClassAnnotation: "true"}
		}
		return sc
	}
	empty := ""
	named := "fast"
	cases := []struct {
		name    string
		classes fakeClasses
		class   *string
		want    string
	}{
		{"gets the default", fakeClasses{class("fast", false, now), class("standard", true, now)}, nil, "standard"},
		{"newest default wins", fakeClasses{class("old", true, now.Add(-time.Hour)), class("new", true, now)}, nil, "new"},
		{"no default", fakeClasses{class("fast", false, now)}, nil, "<nil>"},
		{"empty class kept", fakeClasses{class("standard", true, now)}, &empty, ""},
		{"named class kept", fakeClasses{class("standard", true, now)}, &named, "fast"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			pvc := claim("data", "1Gi", corev1.ReadWriteOnce)
			pvc.Spec.StorageClassName = tc.class
			a := &Attributes{Operation: Create, Resource: schema.GroupVersionResource{Version: "v1", Resource: "persistentvolumeclaims"}, Object: pvc}
			if _, err := NewChain(NewDefaultStorageClass(tc.classes)).Run(context.Background(), a); err != nil {
				t.Fatal(err)
			}
			got := "<nil>"
			if pvc.Spec.StorageClassName != nil {
				got = *pvc.Spec.StorageClassName
			}
			if got != tc.want {
				t.Errorf("storageClassName = %q, want %q", got, tc.want)
			}
		})
	}
}

// storageClasses is a StorageClassLister of fixed classes.
type storageClasses []*storagev1.StorageClass

func (s storageClasses) ListStorageClasses(context.Context) ([]*storagev1.StorageClass, error) {
	return s, nil
}

func TestPersistentVolumeClaimResize(t *testing.T) {
	classes := storageClasses{
		{ObjectMeta: metav1.ObjectMeta{Name: "fixed"}},
		{ObjectMeta: metav1.ObjectMeta{Name: "expandable"}, AllowVolumeExpansion: ptr.To(true)},
	}
	claimOf := func(class, size string, phase corev1.PersistentVolumeClaimPhase) *corev1.PersistentVolumeClaim {
		c := claim("data", size, corev1.ReadWriteOnce)
		if class != "" {
			c.Spec.StorageClassName = ptr.To(class)
		}
		c.Status.Phase = phase
		return c
	}
	notDynamic := `persistentvolumeclaims "data" is forbidden: only dynamically provisioned pvc can be resized and the storageclass that provisions the pvc must support resize`
	cases := []struct {
		name     string
		pvc, old *corev1.PersistentVolumeClaim
		want     string
	}{
		{"expandable class grows", claimOf("expandable", "2Gi", corev1.ClaimBound), claimOf("expandable", "1Gi", corev1.ClaimBound), ""},
		{"fixed class", claimOf("fixed", "2Gi", corev1.ClaimBound), claimOf("fixed", "1Gi", corev1.ClaimBound), notDynamic},
		{"no class", claimOf("", "2Gi", corev1.ClaimBound), claimOf("", "1Gi", corev1.ClaimBound), notDynamic},
		{"unknown class", claimOf("gone", "2Gi", corev1.ClaimBound), claimOf("gone", "1Gi", corev1.ClaimBound), notDynamic},
		{"class changed", claimOf("expandable", "2Gi", corev1.ClaimBound), claimOf("fixed", "1Gi", corev1.ClaimBound), notDynamic},
		{"not bound", claimOf("expandable", "2Gi", corev1.ClaimPending), claimOf("expandable", "1Gi", corev1.ClaimPending),
			`persistentvolumeclaims "data" is forbidden: Only bound persistent volume claims can be expanded`},
		{"same size", claimOf("fixed", "1Gi", corev1.ClaimBound), claimOf("fixed", "1Gi", corev1.ClaimBound), ""},
		{"shrinks", claimOf("fixed", "1Gi", corev1.ClaimBound), claimOf("fixed", "2Gi", corev1.ClaimBound), ""},
	}
	p := NewPersistentVolumeClaimResize(classes)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := p.Validate(context.Background(), &Attributes{
				Operation: Update, Resource: corev1.SchemeGroupVersion.WithResource("persistentvolumeclaims"),
				Namespace: "default", Name: "data", Object: tc.pvc, OldObject: tc.old,
			})
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("refused: %v", err)
			case tc.want != "" && (!apierrors.IsForbidden(err) || err.Error() != tc.want):
				t.Errorf("got %v, want 403 %q", err, tc.want)
			}
		})
	}
}
