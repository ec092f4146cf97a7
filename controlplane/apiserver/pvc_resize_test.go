package apiserver_test

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func TestPersistentVolumeClaimResize(t *testing.T) {
	ctx := ctxT(t)
	ns := shared.namespace(t)
	c := shared.client
	for name, allow := range map[string]*bool{"resize-fixed": nil, "resize-expandable": ptr.To(true)} {
		if _, err := c.StorageV1().StorageClasses().Create(ctx, &storagev1.StorageClass{
			ObjectMeta: metav1.ObjectMeta{Name: name}, Provisioner: "example.com/none", AllowVolumeExpansion: allow,
		}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// boundClaim is a claim of class, bound (its status written as the
	// binder writes it) with a capacity of 1Gi.
	boundClaim := func(name, class string) *corev1.PersistentVolumeClaim {
		t.Helper()
		pvc, err := c.CoreV1().PersistentVolumeClaims(ns).Create(ctx, &corev1.PersistentVolumeClaim{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: corev1.PersistentVolumeClaimSpec{
				StorageClassName: ptr.To(class), AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
			},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		pvc.Status.Phase = corev1.ClaimBound
		pvc.Status.Capacity = corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}
		if pvc, err = c.CoreV1().PersistentVolumeClaims(ns).UpdateStatus(ctx, pvc, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		return pvc
	}
	resize := func(pvc *corev1.PersistentVolumeClaim, size string) (*corev1.PersistentVolumeClaim, error) {
		pvc = pvc.DeepCopy()
		pvc.Spec.Resources.Requests[corev1.ResourceStorage] = resource.MustParse(size)
		return c.CoreV1().PersistentVolumeClaims(ns).Update(ctx, pvc, metav1.UpdateOptions{})
	}
	storedSize := func(name string) string {
		got, err := c.CoreV1().PersistentVolumeClaims(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		q := got.Spec.Resources.Requests[corev1.ResourceStorage]
		return q.String()
	}

	fixed := boundClaim("fixed", "resize-fixed")
	_, err := resize(fixed, "2Gi")
	want := `persistentvolumeclaims "fixed" is forbidden: only dynamically provisioned pvc can be resized and the storageclass that provisions the pvc must support resize`
	if !apierrors.IsForbidden(err) || err.Error() != want {
		t.Errorf("growing a claim whose class does not allow expansion: %v, want 403 %q", err, want)
	}
	if got := storedSize("fixed"); got != "1Gi" {
		t.Errorf("the refused claim's request is %s, want 1Gi", got)
	}

	expandable := boundClaim("expandable", "resize-expandable")
	grown, err := resize(expandable, "2Gi")
	if err != nil {
		t.Fatalf("growing a claim whose class allows expansion: %v", err)
	}
	if got := storedSize("expandable"); got != "2Gi" {
		t.Errorf("the grown claim's request is %s, want 2Gi", got)
	}
	_, err = resize(grown, "1Gi")
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec.resources.requests.storage: Forbidden: field can not be less than status.capacity") {
		t.Errorf("shrinking to the capacity: %v, want upstream's 422", err)
	}
	if got := storedSize("expandable"); got != "2Gi" {
		t.Errorf("the refused shrink stored %s, want 2Gi", got)
	}

	pending, err := c.CoreV1().PersistentVolumeClaims(ns).Create(ctx, &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Name: "pending"},
		Spec: corev1.PersistentVolumeClaimSpec{
			StorageClassName: ptr.To("resize-expandable"), AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
		},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = resize(pending, "2Gi")
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec is immutable after creation except resources.requests and volumeAttributesClassName for bound claims") {
		t.Errorf("growing an unbound claim: %v, want upstream's 422", err)
	}
}
