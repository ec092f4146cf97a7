package apiserver_test

import (
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	apiregistrationv1 "k8s.io/kube-aggregator/pkg/apis/apiregistration/v1"
	"k8s.io/utils/ptr"
)

var apiServicesGVR = schema.GroupVersionResource{Group: "apiregistration.k8s.io", Version: "v1", Resource: "apiservices"}

// TestAPIServices: apiregistration.k8s.io/v1 is served and discovered; the
// API server registered a local APIService per group version it serves
// (Available, "Local"), named version.group with upstream's priorities;
// one naming a Service is stored with no condition, whatever status the
// client sent, until the availability controller probes it (not running
// here); a name that is not version.group is a 422.
func TestAPIServices(t *testing.T) {
	ctx := ctxT(t)
	resources, err := shared.client.Discovery().ServerResourcesForGroupVersion("apiregistration.k8s.io/v1")
	if err != nil || len(resources.APIResources) == 0 || resources.APIResources[0].Name != "apiservices" {
		t.Fatalf("discovery of apiregistration.k8s.io/v1: %v %+v", err, resources)
	}
	dyn, err := dynamic.NewForConfig(shared.config)
	if err != nil {
		t.Fatal(err)
	}
	get := func(name string) *apiregistrationv1.APIService {
		t.Helper()
		u, err := dyn.Resource(apiServicesGVR).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("get apiservice %s: %v", name, err)
		}
		var a apiregistrationv1.APIService
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &a); err != nil {
			t.Fatal(err)
		}
		return &a
	}
	for name, want := range map[string][2]int32{"v1.": {18000, 1}, "v1.apps": {17800, 15}, "v2.autoscaling": {17500, 30}} {
		a := get(name)
		if a.Spec.Service != nil || a.Spec.GroupPriorityMinimum != want[0] || a.Spec.VersionPriority != want[1] {
			t.Errorf("%s spec %+v", name, a.Spec)
		}
		if len(a.Status.Conditions) != 1 || a.Status.Conditions[0].Status != apiregistrationv1.ConditionTrue || a.Status.Conditions[0].Reason != "Local" {
			t.Errorf("%s status %+v", name, a.Status)
		}
	}
	remote := &apiregistrationv1.APIService{
		ObjectMeta: metav1.ObjectMeta{Name: "v1alpha1.wardle.example.com"},
		Spec: apiregistrationv1.APIServiceSpec{
			Group: "wardle.example.com", Version: "v1alpha1", GroupPriorityMinimum: 2000, VersionPriority: 200,
			Service: &apiregistrationv1.ServiceReference{Namespace: "default", Name: "wardle", Port: ptr.To[int32](443)}, InsecureSkipTLSVerify: true,
		},
		Status: apiregistrationv1.APIServiceStatus{Conditions: []apiregistrationv1.APIServiceCondition{{Type: apiregistrationv1.Available, Status: apiregistrationv1.ConditionTrue, Reason: "Claimed"}}},
	}
	obj, _ := runtime.DefaultUnstructuredConverter.ToUnstructured(remote)
	if _, err := dyn.Resource(apiServicesGVR).Create(ctx, &unstructured.Unstructured{Object: obj}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { dyn.Resource(apiServicesGVR).Delete(ctx, remote.Name, metav1.DeleteOptions{}) })
	if a := get(remote.Name); len(a.Status.Conditions) != 0 {
		t.Errorf("remote apiservice status %+v", a.Status)
	}
	bad := remote.DeepCopy()
	bad.Name = "wardle"
	obj, _ = runtime.DefaultUnstructuredConverter.ToUnstructured(bad)
	_, err = dyn.Resource(apiServicesGVR).Create(ctx, &unstructured.Unstructured{Object: obj}, metav1.CreateOptions{})
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "metadata.name: Invalid value: \"wardle\": must be `spec.version+\".\"+spec.group`: \"v1alpha1.wardle.example.com\"") {
		t.Errorf("create with a bad name: %v", err)
	}
}
