package apiserver_test

import (
	"strings"
	"testing"

	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// TestVolumeAttributesClass: storage.k8s.io/v1 VolumeAttributesClasses are
// served with upstream's validation: a driver and parameters, neither of
// which may change; labels may.
func TestVolumeAttributesClass(t *testing.T) {
	ctx := ctxT(t)
	vacs := shared.client.StorageV1().VolumeAttributesClasses()
	vac, err := vacs.Create(ctx, &storagev1.VolumeAttributesClass{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "gold-"}, DriverName: "e2e-fake-csi-driver", Parameters: map[string]string{"iops": "3000"},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { vacs.Delete(ctx, vac.Name, metav1.DeleteOptions{}) })
	patched, err := vacs.Patch(ctx, vac.Name, types.MergePatchType, []byte(`{"metadata":{"labels":{"tier":"gold"}}}`), metav1.PatchOptions{})
	if err != nil || patched.Labels["tier"] != "gold" {
		t.Fatalf("label patch: %v %v", err, patched)
	}
	if list, err := vacs.List(ctx, metav1.ListOptions{LabelSelector: "tier=gold"}); err != nil || len(list.Items) != 1 {
		t.Fatalf("list: %v %v", err, list)
	}
	for _, tc := range []struct {
		patch, want string
	}{
		{`{"parameters":{"iops":"9000"}}`, "parameters: Forbidden: updates to parameters are forbidden."},
		{`{"driverName":"other"}`, "driverName: Forbidden: updates to driverName are forbidden."},
	} {
		if _, err := vacs.Patch(ctx, vac.Name, types.MergePatchType, []byte(tc.patch), metav1.PatchOptions{}); !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("patch %s: %v, want 422 %q", tc.patch, err, tc.want)
		}
	}
	_, err = vacs.Create(ctx, &storagev1.VolumeAttributesClass{ObjectMeta: metav1.ObjectMeta{Name: "empty"}}, metav1.CreateOptions{})
	for _, want := range []string{"driverName: Required value", "parameters: Required value: must contain at least one key/value pair"} {
		if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), want) {
			t.Errorf("create without driver or parameters: %v, want 422 %q", err, want)
		}
	}
}
