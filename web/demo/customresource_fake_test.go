package demo

import (
	"slices"
	"sync"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apiextensionsfake "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset/fake"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/dynamic"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	clienttesting "k8s.io/client-go/testing"
)

// fakeExtensions are a fake cluster's CRD and custom object clients,
// made on first use and kept for the cluster's life.
var fakeExtensions sync.Map // *fakeCluster → *fakeExtension

type fakeExtension struct {
	ext *apiextensionsfake.Clientset
	dyn *dynamicfake.FakeDynamicClient
}

// extensions makes c play what the custom-resource demo meets: a created
// CRD is at once NamesAccepted and Established and its resource listed by
// discovery (deleted, it leaves discovery); a Widget outside the schema's
// bounds is refused as the API server refuses it, 422 with field paths.
func (c *fakeCluster) extensions() (apiextensionsclient.Interface, dynamic.Interface, error) {
	if x, ok := fakeExtensions.Load(c); ok {
		return x.(*fakeExtension).ext, x.(*fakeExtension).dyn, nil
	}
	x := &fakeExtension{
		ext: apiextensionsfake.NewClientset(),
		dyn: dynamicfake.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{widgetsResource: "WidgetList"}),
	}
	x.ext.PrependReactor("create", "customresourcedefinitions", func(a clienttesting.Action) (bool, runtime.Object, error) {
		crd := a.(clienttesting.CreateAction).GetObject().(*apiextensionsv1.CustomResourceDefinition)
		crd.UID = uuid.NewUUID()
		crd.Status.Conditions = []apiextensionsv1.CustomResourceDefinitionCondition{
			{Type: apiextensionsv1.NamesAccepted, Status: apiextensionsv1.ConditionTrue},
			{Type: apiextensionsv1.Established, Status: apiextensionsv1.ConditionTrue},
		}
		c.Fake.Resources = append(c.Fake.Resources, &metav1.APIResourceList{
			GroupVersion: crd.Spec.Group + "/" + crd.Spec.Versions[0].Name,
			APIResources: []metav1.APIResource{{Name: crd.Spec.Names.Plural, Kind: crd.Spec.Names.Kind, Namespaced: true, ShortNames: crd.Spec.Names.ShortNames}},
		})
		return false, nil, nil
	})
	x.ext.PrependReactor("delete", "customresourcedefinitions", func(a clienttesting.Action) (bool, runtime.Object, error) {
		c.Fake.Resources = slices.DeleteFunc(c.Fake.Resources, func(l *metav1.APIResourceList) bool { return l.GroupVersion == widgetGroup+"/v1" })
		return false, nil, nil
	})
	x.dyn.PrependReactor("create", widgetPlural, func(a clienttesting.Action) (bool, runtime.Object, error) {
		w := a.(clienttesting.CreateAction).GetObject().(*unstructured.Unstructured)
		w.SetUID(uuid.NewUUID())
		size, _, _ := unstructured.NestedInt64(w.Object, "spec", "size")
		color, _, _ := unstructured.NestedString(w.Object, "spec", "color")
		var errs field.ErrorList
		if size > 10 {
			errs = append(errs, field.Invalid(field.NewPath("spec", "size"), size, "spec.size in body should be less than or equal to 10"))
		}
		if color != "red" && color != "blue" {
			errs = append(errs, field.NotSupported(field.NewPath("spec", "color"), color, []string{"red", "blue"}))
		}
		if len(errs) > 0 {
			return true, nil, apierrors.NewInvalid(schema.GroupKind{Group: widgetGroup, Kind: "Widget"}, w.GetName(), errs)
		}
		return false, nil, nil
	})
	actual, _ := fakeExtensions.LoadOrStore(c, x)
	return actual.(*fakeExtension).ext, actual.(*fakeExtension).dyn, nil
}
