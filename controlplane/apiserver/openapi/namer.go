package openapi

import (
	"reflect"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/kube-openapi/pkg/util"
	"k8s.io/kube-openapi/pkg/validation/spec"
)

// definitionNamer names definitions the way kube-apiserver's DefinitionNamer
// (k8s.io/apiserver/pkg/endpoints/openapi) does: the model name, such as
// io.k8s.api.core.v1.Pod, plus an x-kubernetes-group-version-kind extension
// listing every group/version/kind the scheme registers for that Go type.
type definitionNamer struct {
	// gvks maps a model name to its extension value, a JSON-shaped list of
	// {"group","version","kind"} objects sorted by group, version and kind.
	gvks map[string][]interface{}
}

// newDefinitionNamer indexes the external kinds of scheme by model name.
func newDefinitionNamer(scheme *runtime.Scheme) *definitionNamer {
	byName := map[string][]schema.GroupVersionKind{}
	for gvk, goType := range scheme.AllKnownTypes() {
		if gvk.Version == runtime.APIVersionInternal {
			continue
		}
		name := util.GetCanonicalTypeName(reflect.New(goType).Interface())
		byName[name] = append(byName[name], gvk)
	}
	n := &definitionNamer{gvks: make(map[string][]interface{}, len(byName))}
	for name, gvks := range byName {
		sort.Slice(gvks, func(i, j int) bool {
			if gvks[i].Group != gvks[j].Group {
				return gvks[i].Group < gvks[j].Group
			}
			if gvks[i].Version != gvks[j].Version {
				return gvks[i].Version < gvks[j].Version
			}
			return gvks[i].Kind < gvks[j].Kind
		})
		list := make([]interface{}, 0, len(gvks))
		for _, gvk := range gvks {
			list = append(list, gvkExtension(gvk))
		}
		n.gvks[restFriendlyName(name)] = list
	}
	return n
}

// gvkExtension is the JSON shape of one x-kubernetes-group-version-kind entry.
func gvkExtension(gvk schema.GroupVersionKind) map[string]interface{} {
	return map[string]interface{}{"group": gvk.Group, "version": gvk.Version, "kind": gvk.Kind}
}

// definitionName is the common.Config GetDefinitionName hook.
func (n *definitionNamer) definitionName(name string) (string, spec.Extensions) {
	friendly := restFriendlyName(name)
	if gvks, ok := n.gvks[friendly]; ok {
		return friendly, spec.Extensions{extensionGVK: gvks}
	}
	return friendly, nil
}

// restFriendlyName turns a Go path name (k8s.io/api/core/v1.Pod) into its
// model name (io.k8s.api.core.v1.Pod) and leaves model names as they are:
// the generated definitions already use model names for every type whose
// package declares +k8s:openapi-model-package.
func restFriendlyName(name string) string {
	if !strings.Contains(name, "/") {
		return name
	}
	return util.ToRESTFriendlyName(name)
}
