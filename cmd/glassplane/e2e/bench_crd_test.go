package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/utils/ptr"
)

// BenchmarkCRCreate measures creates per second of a custom resource whose
// schema has 20 fields (each checked, pruned and defaulted on the way in),
// against ConfigMaps with 20 keys in the same run, 8 clients at once.
func BenchmarkCRCreate(b *testing.B) {
	const n, workers, nFields = 1000, 8, 20
	c := NewCluster(b, "--node-runtime", "none")
	ctx := context.Background()
	ext, err := apiextensionsclient.NewForConfig(c.Config)
	if err != nil {
		b.Fatal(err)
	}
	dyn, err := dynamic.NewForConfig(c.Config)
	if err != nil {
		b.Fatal(err)
	}
	props := map[string]apiextensionsv1.JSONSchemaProps{}
	for i := range nFields {
		props[fmt.Sprintf("field%d", i)] = apiextensionsv1.JSONSchemaProps{Type: "string", MaxLength: ptr.To(int64(64))}
	}
	crd := &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "benches.bench.glassplane.io"},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: "bench.glassplane.io", Scope: apiextensionsv1.NamespaceScoped,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "benches", Singular: "bench", Kind: "Bench", ListKind: "BenchList"},
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{"spec": {Type: "object", Properties: props}},
				}},
			}},
		},
	}
	if _, err := ext.ApiextensionsV1().CustomResourceDefinitions().Create(ctx, crd, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	gvr := schema.GroupVersionResource{Group: "bench.glassplane.io", Version: "v1", Resource: "benches"}
	deadline := time.Now().Add(30 * time.Second)
	for {
		if _, err := dyn.Resource(gvr).Namespace("default").List(ctx, metav1.ListOptions{}); err == nil {
			break
		} else if time.Now().After(deadline) {
			b.Fatalf("benches not served: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	values := map[string]any{}
	data := map[string]string{}
	for i := range nFields {
		values[fmt.Sprintf("field%d", i)] = fmt.Sprintf("value-%d", i)
		data[fmt.Sprintf("field%d", i)] = fmt.Sprintf("value-%d", i)
	}
	createCR := func(prefix string) func(i int) error {
		return func(i int) error {
			obj := &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": "bench.glassplane.io/v1", "kind": "Bench",
				"metadata": map[string]any{"name": fmt.Sprintf("%s-%d", prefix, i)},
				"spec":     values,
			}}
			_, err := dyn.Resource(gvr).Namespace("default").Create(ctx, obj, metav1.CreateOptions{})
			return err
		}
	}
	createCM := func(prefix string) func(i int) error {
		return func(i int) error {
			_, err := c.Client.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{
				ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%d", prefix, i)}, Data: data,
			}, metav1.CreateOptions{})
			return err
		}
	}
	runConcurrently(b, 100, workers, createCR("warm"))
	runConcurrently(b, 100, workers, createCM("warm"))
	b.ResetTimer()
	crRate, crP99 := runConcurrently(b, n, workers, createCR("cr"))
	cmRate, cmP99 := runConcurrently(b, n, workers, createCM("cm"))
	b.StopTimer()
	b.ReportMetric(crRate, "cr-creates/s")
	b.ReportMetric(cmRate, "configmap-creates/s")
	b.ReportMetric(float64(crP99.Microseconds())/1000, "cr-p99-ms")
	b.ReportMetric(float64(cmP99.Microseconds())/1000, "configmap-p99-ms")
}
