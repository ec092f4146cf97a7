package openapi

import (
	"fmt"
	"reflect"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/kube-openapi/pkg/builder3"
	"k8s.io/kube-openapi/pkg/common"
	"k8s.io/kube-openapi/pkg/util"
	"k8s.io/kube-openapi/pkg/validation/spec"
)

// Models returns the OpenAPI v3 schemas of the kinds gvks and of every
// definition they refer to, named and marked with
// x-kubernetes-group-version-kind as the served documents are: what
// kube-apiserver hands managedfields.NewTypeConverter for server-side apply.
// Each kind must be registered in client-go's scheme.
func Models(gvks []schema.GroupVersionKind) (map[string]*spec.Schema, error) {
	namer := newDefinitionNamer(scheme.Scheme)
	names := make([]string, 0, len(gvks))
	seen := map[string]bool{}
	for _, gvk := range gvks {
		obj, err := scheme.Scheme.New(gvk)
		if err != nil {
			return nil, fmt.Errorf("failed to find the definition of %v: %w", gvk, err)
		}
		name := util.GetCanonicalTypeName(obj)
		if m, ok := obj.(interface{ OpenAPIModelName() string }); ok {
			name = m.OpenAPIModelName()
		} else if reflect.TypeOf(obj).Kind() != reflect.Pointer {
			return nil, fmt.Errorf("failed to find the definition of %v: not a pointer", gvk)
		}
		if !seen[name] {
			seen[name] = true
			names = append(names, name)
		}
	}
	defs := GetOpenAPIDefinitions(func(name string) spec.Ref {
		defName, _ := namer.definitionName(name)
		return spec.MustCreateRef("#/components/schemas/" + common.EscapeJsonPointer(defName))
	})
	models, err := builder3.BuildOpenAPIDefinitionsForResources(&common.OpenAPIV3Config{
		Info:              info(),
		Definitions:       defs,
		GetDefinitionName: namer.definitionName,
	}, names...)
	if err != nil {
		return nil, fmt.Errorf("failed to build the OpenAPI models: %w", err)
	}
	return models, nil
}
