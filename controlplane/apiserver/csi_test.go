package apiserver_test

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// TestCSIDriver: storage.k8s.io/v1 CSIDrivers are served with upstream's
// defaults and validation: the defaulted spec, immutable attachRequired
// and volumeLifecycleModes, mutable podInfoOnMount, and 422s naming the
// field for unknown policies, modes and duplicate token audiences.
func TestCSIDriver(t *testing.T) {
	ctx := ctxT(t)
	drivers := shared.client.StorageV1().CSIDrivers()
	d, err := drivers.Create(ctx, &storagev1.CSIDriver{ObjectMeta: metav1.ObjectMeta{Name: "hostpath.csi.example.com"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { drivers.Delete(ctx, d.Name, metav1.DeleteOptions{}) })
	s := d.Spec
	switch {
	case s.AttachRequired == nil || !*s.AttachRequired,
		s.PodInfoOnMount == nil || *s.PodInfoOnMount,
		s.StorageCapacity == nil || *s.StorageCapacity,
		s.RequiresRepublish == nil || *s.RequiresRepublish,
		s.SELinuxMount == nil || *s.SELinuxMount,
		s.FSGroupPolicy == nil || *s.FSGroupPolicy != storagev1.ReadWriteOnceWithFSTypeFSGroupPolicy,
		len(s.VolumeLifecycleModes) != 1 || s.VolumeLifecycleModes[0] != storagev1.VolumeLifecyclePersistent:
		t.Errorf("defaults: %+v", s)
	}
	if got, err := drivers.Patch(ctx, d.Name, types.MergePatchType, []byte(`{"spec":{"podInfoOnMount":true,"fsGroupPolicy":"File"}}`), metav1.PatchOptions{}); err != nil || !*got.Spec.PodInfoOnMount || *got.Spec.FSGroupPolicy != storagev1.FileFSGroupPolicy {
		t.Errorf("podInfoOnMount and fsGroupPolicy are mutable: %v", err)
	}
	for _, tc := range []struct {
		patch, want string
	}{
		{`{"spec":{"attachRequired":false}}`, "spec.attachRequired: Invalid value: false: field is immutable"},
		{`{"spec":{"volumeLifecycleModes":["Persistent","Ephemeral"]}}`, "spec.volumeLifecycleModes: Invalid value"},
		{`{"spec":{"fsGroupPolicy":"Sometimes"}}`, `spec.fsGroupPolicy: Unsupported value: "Sometimes": supported values: "File", "None", "ReadWriteOnceWithFSType"`},
	} {
		if _, err := drivers.Patch(ctx, d.Name, types.MergePatchType, []byte(tc.patch), metav1.PatchOptions{}); !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("patch %s: %v, want 422 %q", tc.patch, err, tc.want)
		}
	}
	ten := int64(60)
	bad := &storagev1.CSIDriver{ObjectMeta: metav1.ObjectMeta{Name: "bad.csi.example.com"}, Spec: storagev1.CSIDriverSpec{
		VolumeLifecycleModes: []storagev1.VolumeLifecycleMode{"Forever"},
		TokenRequests:        []storagev1.TokenRequest{{Audience: "vault"}, {Audience: "vault"}, {Audience: "gcp", ExpirationSeconds: &ten}},
	}}
	_, err = drivers.Create(ctx, bad, metav1.CreateOptions{})
	for _, want := range []string{
		`spec.volumeLifecycleModes: Unsupported value: "Forever": supported values: "Persistent", "Ephemeral"`,
		`spec.tokenRequests[1].audience: Duplicate value: "vault"`,
		"spec.tokenRequests[2].expirationSeconds: Invalid value: 60: may not specify a duration less than 10 minutes",
	} {
		if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), want) {
			t.Errorf("create with bad modes and token requests: %v, want 422 %q", err, want)
		}
	}
	if _, err := drivers.Get(ctx, bad.Name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("a refused CSIDriver was stored: %v", err)
	}
}

// TestVolumeAttachment: VolumeAttachments are served with their status
// subresource: an attacher reports attached through /status, the spec is
// immutable, and a spec without attacher or source is refused with the
// field named.
func TestVolumeAttachment(t *testing.T) {
	ctx := ctxT(t)
	vas := shared.client.StorageV1().VolumeAttachments()
	pv := "pv-data"
	va, err := vas.Create(ctx, &storagev1.VolumeAttachment{
		ObjectMeta: metav1.ObjectMeta{Name: "csi-attach-data"},
		Spec:       storagev1.VolumeAttachmentSpec{Attacher: "hostpath.csi.example.com", NodeName: "node-1", Source: storagev1.VolumeAttachmentSource{PersistentVolumeName: &pv}},
		Status:     storagev1.VolumeAttachmentStatus{Attached: true},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { vas.Delete(ctx, va.Name, metav1.DeleteOptions{}) })
	if va.Status.Attached {
		t.Error("create set status.attached; status is written through /status")
	}
	va.Status = storagev1.VolumeAttachmentStatus{Attached: true, AttachmentMetadata: map[string]string{"devicePath": "/dev/vdb"}}
	got, err := vas.UpdateStatus(ctx, va, metav1.UpdateOptions{})
	if err != nil || !got.Status.Attached || got.Status.AttachmentMetadata["devicePath"] != "/dev/vdb" {
		t.Fatalf("status update: %v %+v", err, got)
	}
	if _, err := vas.Patch(ctx, va.Name, types.MergePatchType, []byte(`{"spec":{"nodeName":"node-2"}}`), metav1.PatchOptions{}); !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec: Invalid value") || !strings.Contains(err.Error(), "field is immutable") {
		t.Errorf("changing spec.nodeName: %v, want 422 field is immutable", err)
	}
	_, err = vas.Create(ctx, &storagev1.VolumeAttachment{ObjectMeta: metav1.ObjectMeta{Name: "empty"}, Spec: storagev1.VolumeAttachmentSpec{NodeName: "node-1"}}, metav1.CreateOptions{})
	for _, want := range []string{"spec.attacher: Required value", "spec.source: Required value: must specify exactly one of inlineVolumeSpec and persistentVolumeName"} {
		if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), want) {
			t.Errorf("create without attacher or source: %v, want 422 %q", err, want)
		}
	}
	inline := &corev1.PersistentVolumeSpec{}
	_, err = vas.Create(ctx, &storagev1.VolumeAttachment{ObjectMeta: metav1.ObjectMeta{Name: "both"}, Spec: storagev1.VolumeAttachmentSpec{
		Attacher: "a", NodeName: "node-1", Source: storagev1.VolumeAttachmentSource{PersistentVolumeName: &pv, InlineVolumeSpec: inline},
	}}, metav1.CreateOptions{})
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec.source: Forbidden: must specify exactly one of inlineVolumeSpec and persistentVolumeName") {
		t.Errorf("create with both sources: %v", err)
	}
}

// TestStorageObjectInUseProtection: a claim and a volume carry their
// protection finalizer from the create's answer on, as kube-apiserver's
// StorageObjectInUseProtection plugin adds it.
func TestStorageObjectInUseProtection(t *testing.T) {
	ctx := ctxT(t)
	ns := shared.namespace(t)
	claim, err := shared.client.CoreV1().PersistentVolumeClaims(ns).Create(ctx, &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "data"},
		Spec: corev1.PersistentVolumeClaimSpec{
			AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(claim.Finalizers) != 1 || claim.Finalizers[0] != "kubernetes.io/pvc-protection" {
		t.Errorf("claim finalizers %v", claim.Finalizers)
	}
	pv, err := shared.client.CoreV1().PersistentVolumes().Create(ctx, &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "pv-"},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:               corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
			AccessModes:            []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			PersistentVolumeSource: corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/tmp/pv"}},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// No pv-protection controller runs here: the finalizer goes by hand.
		shared.client.CoreV1().PersistentVolumes().Patch(ctx, pv.Name, types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`), metav1.PatchOptions{})
		shared.client.CoreV1().PersistentVolumes().Delete(ctx, pv.Name, metav1.DeleteOptions{})
	})
	if len(pv.Finalizers) != 1 || pv.Finalizers[0] != "kubernetes.io/pv-protection" {
		t.Errorf("volume finalizers %v", pv.Finalizers)
	}
}
