package demo

import (
	"context"
	"errors"
	"fmt"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/utils/ptr"
)

// The custom-resource demo's CRD: cluster-wide, so one run at a time.
const (
	widgetGroup  = "demo.glassplane.io"
	widgetPlural = "widgets"
	widgetCRD    = widgetPlural + "." + widgetGroup
)

var widgetsResource = schema.GroupVersionResource{Group: widgetGroup, Version: "v1", Resource: widgetPlural}

// extensionClients are the clients the custom-resource demo acts with
// besides Env.Client: CRDs and custom objects.
func (env *Env) extensionClients() (apiextensionsclient.Interface, dynamic.Interface, error) {
	if env.extensions != nil {
		return env.extensions()
	}
	if env.Config == nil {
		return nil, nil, env.errorf("this demo needs the API server's address and credentials (a kubeconfig)", "이 데모에는 API 서버 주소와 자격 증명(kubeconfig)이 필요합니다")
	}
	ext, err := apiextensionsclient.NewForConfig(env.Config)
	if err != nil {
		return nil, nil, err
	}
	dyn, err := dynamic.NewForConfig(env.Config)
	if err != nil {
		return nil, nil, err
	}
	return ext, dyn, nil
}

// widgetDefinition is the demo's CRD: a namespaced Widget whose schema
// requires spec.size between 1 and 10 and a spec.color of red or blue,
// with a CEL rule between the two.
func widgetDefinition() *apiextensionsv1.CustomResourceDefinition {
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: widgetCRD, Labels: map[string]string{demoLabel: "custom-resource"}},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: widgetGroup, Scope: apiextensionsv1.NamespaceScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: widgetPlural, Singular: "widget", Kind: "Widget", ShortNames: []string{"wdg"}},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object",
					Properties: map[string]apiextensionsv1.JSONSchemaProps{
						"spec": {
							Type: "object", Required: []string{"size", "color"},
							XValidations: apiextensionsv1.ValidationRules{{Rule: "self.color == 'red' || self.size <= 5", Message: "blue widgets are at most 5"}},
							Properties: map[string]apiextensionsv1.JSONSchemaProps{
								"size":  {Type: "integer", Minimum: ptr.To(1.0), Maximum: ptr.To(10.0)},
								"color": {Type: "string", Enum: []apiextensionsv1.JSON{{Raw: []byte(`"red"`)}, {Raw: []byte(`"blue"`)}}},
							},
						},
					},
				}},
				AdditionalPrinterColumns: []apiextensionsv1.CustomResourceColumnDefinition{
					{Name: "Size", Type: "integer", JSONPath: ".spec.size"}, {Name: "Color", Type: "string", JSONPath: ".spec.color"},
				},
			}},
		},
	}
}

// deleteOf is a dynamic client's Delete as a deleteFunc.
func deleteOf(ri dynamic.ResourceInterface) deleteFunc {
	return func(ctx context.Context, name string, opts metav1.DeleteOptions) error {
		return ri.Delete(ctx, name, opts)
	}
}

// widget is a Widget of the demo in env's namespace.
func widget(env *Env, name string, size int64, color string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": widgetGroup + "/v1", "kind": "Widget",
		"metadata": map[string]any{"name": name, "namespace": env.Namespace, "labels": map[string]any{demoLabel: "custom-resource"}},
		"spec":     map[string]any{"size": size, "color": color},
	}}
}

// customResource extends the API with a CustomResourceDefinition: the API
// server starts serving a new resource (discovery, kubectl api-resources),
// stores its objects in etcd like a built-in's, and refuses one its schema
// does not allow, with the field paths.
func customResource() Demo {
	var crdUID types.UID
	return Demo{
		Name:  "custom-resource",
		Title: Text{"A CustomResourceDefinition: a new kind, served, stored and validated", "CustomResourceDefinition: 새로운 kind를 제공하고 저장하고 검증하기"},
		Steps: []Step{
			{Say: Text{
				"Create the CustomResourceDefinition widgets.demo.glassplane.io: kind Widget, namespaced, one version v1 whose OpenAPI schema requires spec.size (1 to 10) and spec.color (red or blue), with an x-kubernetes-validations CEL rule. The API server checks the names (NamesAccepted) and starts serving them (Established).",
				"CustomResourceDefinition widgets.demo.glassplane.io를 만듭니다: kind는 Widget, 네임스페이스 범위, 버전은 v1 하나이며 OpenAPI 스키마가 spec.size(1~10)와 spec.color(red 또는 blue)를 요구하고 x-kubernetes-validations CEL 규칙이 있습니다. API 서버가 이름을 확인하고(NamesAccepted) 제공을 시작합니다(Established).",
			}, Do: func(ctx context.Context, env *Env) (Text, error) {
				ext, _, err := env.extensionClients()
				if err != nil {
					return Text{}, err
				}
				crds := ext.ApiextensionsV1().CustomResourceDefinitions()
				created, err := crds.Create(ctx, widgetDefinition(), metav1.CreateOptions{})
				if err != nil {
					return Text{}, err
				}
				crdUID = created.UID
				env.remember("customresourcedefinition.apiextensions.k8s.io", created, crds.Delete, metav1.DeleteOptions{})
				var conds []string
				err = until(ctx, env, Text{"the CRD to be Established", "CRD Established"}, func(ctx context.Context) (bool, error) {
					got, err := crds.Get(ctx, widgetCRD, metav1.GetOptions{})
					if err != nil {
						return false, err
					}
					conds = conds[:0]
					established := false
					for _, c := range got.Status.Conditions {
						conds = append(conds, fmt.Sprintf("%s=%s", c.Type, c.Status))
						established = established || (c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue)
					}
					return established, nil
				})
				if err != nil {
					return Text{}, err
				}
				return textf("customresourcedefinition.apiextensions.k8s.io/%s created: %s",
					"CRD를 만들었습니다: customresourcedefinition.apiextensions.k8s.io/%s, 상태 %s", widgetCRD, strings.Join(conds, ", ")), nil
			}},
			{Say: Text{
				"Ask discovery, as kubectl api-resources does: the API group demo.glassplane.io/v1 now lists widgets (short name wdg, kind Widget). kubectl get, explain and apply find it the same way.",
				"kubectl api-resources처럼 디스커버리에 물어봅니다: 이제 API 그룹 demo.glassplane.io/v1에 widgets(짧은 이름 wdg, kind Widget)가 있습니다. kubectl get, explain, apply도 같은 방법으로 찾습니다.",
			}, Do: func(ctx context.Context, env *Env) (Text, error) {
				var found string
				err := until(ctx, env, Text{"discovery to list widgets", "디스커버리에 widgets 등장"}, func(ctx context.Context) (bool, error) {
					list, err := env.Client.Discovery().ServerResourcesForGroupVersion(widgetGroup + "/v1")
					if apierrors.IsNotFound(err) {
						return false, nil
					}
					if err != nil {
						return false, err
					}
					for _, r := range list.APIResources {
						if r.Name == widgetPlural {
							found = fmt.Sprintf("%s (kind %s, shortNames %s, namespaced %v)", r.Name, r.Kind, strings.Join(r.ShortNames, ","), r.Namespaced)
							return true, nil
						}
					}
					return false, nil
				})
				if err != nil {
					return Text{}, err
				}
				return textf("api-resources for %s/v1: %s",
					"api-resources에 나타났습니다: %s/v1의 %s", widgetGroup, found), nil
			}},
			{Say: Text{
				"Create a Widget small-red (size 3, color red). The API server validates it against the schema and stores it in etcd at /registry/demo.glassplane.io/widgets/<namespace>/small-red, as kube-apiserver does.",
				"Widget small-red(size 3, color red)를 만듭니다. API 서버는 스키마로 검증한 뒤 kube-apiserver처럼 etcd의 /registry/demo.glassplane.io/widgets/<namespace>/small-red 키에 저장합니다.",
			}, Do: func(ctx context.Context, env *Env) (Text, error) {
				_, dyn, err := env.extensionClients()
				if err != nil {
					return Text{}, err
				}
				widgets := dyn.Resource(widgetsResource).Namespace(env.Namespace)
				created, err := widgets.Create(ctx, widget(env, "small-red", 3, "red"), metav1.CreateOptions{})
				if err != nil {
					return Text{}, err
				}
				env.remember("widget."+widgetGroup, created, deleteOf(widgets), metav1.DeleteOptions{})
				return textf("widget.%s/%s created (uid %s), stored at /registry/%s/%s/%s/%s",
					"Widget을 만들었습니다: widget.%s/%s (uid %s), 저장 위치 /registry/%s/%s/%s/%s",
					widgetGroup, created.GetName(), created.GetUID(), widgetGroup, widgetPlural, env.Namespace, created.GetName()), nil
			}},
			{Say: Text{
				"Create a Widget too-big (size 50, color purple). The schema refuses it: 422 Invalid, with each bad field's path (spec.size, spec.color). Nothing is stored.",
				"Widget too-big(size 50, color purple)를 만듭니다. 스키마가 거부합니다: 422 Invalid이며 잘못된 필드마다 경로(spec.size, spec.color)를 알려 줍니다. 아무것도 저장되지 않습니다.",
			}, Do: func(ctx context.Context, env *Env) (Text, error) {
				_, dyn, err := env.extensionClients()
				if err != nil {
					return Text{}, err
				}
				widgets := dyn.Resource(widgetsResource).Namespace(env.Namespace)
				created, err := widgets.Create(ctx, widget(env, "too-big", 50, "purple"), metav1.CreateOptions{})
				if err == nil {
					env.remember("widget."+widgetGroup, created, deleteOf(widgets), metav1.DeleteOptions{})
					return Text{}, env.errorf("the API server accepted widget %s, which its schema forbids", "스키마가 금지하는 Widget %s를 API 서버가 받아들였습니다", created.GetName())
				}
				var status apierrors.APIStatus
				if !apierrors.IsInvalid(err) || !errors.As(err, &status) {
					return Text{}, err
				}
				var fields []string
				if d := status.Status().Details; d != nil {
					for _, c := range d.Causes {
						fields = append(fields, c.Field)
					}
				}
				return textf("%d %s: %s (fields: %s)",
					"거부되었습니다: %d %s: %s (필드: %s)",
					status.Status().Code, status.Status().Reason, status.Status().Message, strings.Join(fields, ", ")), nil
			}},
			{Say: Text{
				"Delete the CRD. The API server first deletes every Widget (the customresourcecleanup.apiextensions.k8s.io finalizer), then the CRD, and discovery no longer lists widgets.",
				"CRD를 삭제합니다. API 서버는 먼저 모든 Widget을 지우고(customresourcecleanup.apiextensions.k8s.io 파이널라이저), 그다음 CRD를 지웁니다. 디스커버리에서도 widgets가 사라집니다.",
			}, Do: func(ctx context.Context, env *Env) (Text, error) {
				ext, _, err := env.extensionClients()
				if err != nil {
					return Text{}, err
				}
				crds := ext.ApiextensionsV1().CustomResourceDefinitions()
				if err := crds.Delete(ctx, widgetCRD, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &crdUID}}); err != nil {
					return Text{}, err
				}
				err = until(ctx, env, Text{"the CRD to be gone", "CRD 삭제"}, func(ctx context.Context) (bool, error) {
					_, err := crds.Get(ctx, widgetCRD, metav1.GetOptions{})
					if apierrors.IsNotFound(err) {
						return true, nil
					}
					return false, err
				})
				if err != nil {
					return Text{}, err
				}
				return textf("customresourcedefinition.apiextensions.k8s.io/%s deleted, and its widgets with it",
					"CRD를 삭제했고, 그 Widget도 함께 삭제되었습니다: customresourcedefinition.apiextensions.k8s.io/%s", widgetCRD), nil
			}},
		},
	}
}
