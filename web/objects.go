package web

import (
	"encoding/json"
	"net/url"
	"sort"
	"strings"
	"time"

	"github.com/glassplane/glassplane/web/source"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// objectHead is the part of every stored object the dashboard reads.
type objectHead struct {
	metav1.TypeMeta `json:",inline"`
	Metadata        metav1.ObjectMeta `json:"metadata"`
}

// decodeHead reads an object's type and metadata; a value that is not a JSON
// object yields an empty head.
func decodeHead(value []byte) objectHead {
	var h objectHead
	if err := json.Unmarshal(value, &h); err != nil {
		return objectHead{}
	}
	return h
}

// lastManager names the field manager of the newest managedFields entry: the
// component that last wrote the object, when the API server records it.
func lastManager(fields []managedBy) string {
	var name string
	var newest time.Time
	for _, f := range fields {
		if f.Time == nil {
			if name == "" {
				name = f.Manager
			}
			continue
		}
		if !f.Time.Time.Before(newest) {
			newest, name = f.Time.Time, f.Manager
		}
	}
	return name
}

// keyRef is where a key sits in the /registry layout.
type keyRef struct {
	// StorageResource is the resource segment(s) of the key ("pods",
	// "minions", "services/specs").
	StorageResource string
	Namespace       string
	Name            string
}

// parseKey splits an etcd key into storage resource, namespace and name. Keys
// of cluster-scoped objects have no namespace.
func parseKey(key string) (keyRef, bool) {
	rest, ok := strings.CutPrefix(key, source.Root)
	if !ok || rest == "" {
		return keyRef{}, false
	}
	parts := strings.Split(rest, "/")
	resource := parts[0]
	parts = parts[1:]
	if len(parts) > 1 && (strings.Contains(resource, ".") || resource == "services") {
		resource += "/" + parts[0]
		parts = parts[1:]
	}
	switch len(parts) {
	case 1:
		return keyRef{StorageResource: resource, Name: parts[0]}, parts[0] != ""
	case 2:
		return keyRef{StorageResource: resource, Namespace: parts[0], Name: parts[1]}, parts[1] != ""
	}
	return keyRef{}, false
}

// storageToAPI maps the storage names Kubernetes keeps for historical reasons
// to the API resource names.
var storageToAPI = map[string]string{
	"minions":            "nodes",
	"services/specs":     "services",
	"services/endpoints": "endpoints",
	"ingress":            "ingresses",
	// The one built-in kube-apiserver keeps under its group.
	"apiextensions.k8s.io/customresourcedefinitions": "customresourcedefinitions",
}

// apiResource returns the API resource name of a storage resource.
func apiResource(storageResource string) string {
	if r, ok := storageToAPI[storageResource]; ok {
		return r
	}
	if i := strings.LastIndex(storageResource, "/"); i >= 0 {
		return storageResource[i+1:]
	}
	return storageResource
}

// storageResource returns the storage name of an API resource, named
// "plural" or "plural.group"; a custom resource's is
// "<group>/<plural>" (kinds).
func storageResource(resource string) string {
	if s, ok := kinds.customStorage(resource); ok {
		return s
	}
	if k, ok := kinds.byResource(resource); ok && k.Resource != resource {
		resource = k.Resource
	}
	for s, r := range storageToAPI {
		if r == resource {
			return s
		}
	}
	return resource
}

// objectHref is the dashboard page of an object.
func objectHref(resource, namespace, name string) string {
	if namespace == "" {
		return "/objects/" + url.PathEscape(resource) + "/" + url.PathEscape(name)
	}
	return "/objects/" + url.PathEscape(resource) + "/" + url.PathEscape(namespace) + "/" + url.PathEscape(name)
}

// keyHref is the key explorer showing key.
func keyHref(key string) string {
	return "/etcd?key=" + url.QueryEscape(key)
}

// maskedSecret is what a Secret's values show instead of their content.
const maskedSecret = "******"

// lastAppliedAnnotation is where kubectl apply keeps the manifest it
// applied, a Secret's values included.
const lastAppliedAnnotation = "kubectl.kubernetes.io/last-applied-configuration"

// maskSecrets returns value with a Secret's data and stringData values
// replaced, in the object and in the manifest kubectl apply kept in its
// last-applied-configuration annotation; other objects come back
// unchanged.
func maskSecrets(value []byte) []byte {
	if decodeHead(value).Kind != "Secret" {
		return value
	}
	var obj map[string]any
	if err := json.Unmarshal(value, &obj); err != nil {
		return value
	}
	maskSecretObject(obj)
	out, err := json.Marshal(obj)
	if err != nil {
		return value
	}
	return out
}

// maskSecretObject masks a decoded Secret in place (see maskSecrets);
// other objects are left as they are. An annotation that is not JSON is
// masked whole.
func maskSecretObject(obj map[string]any) {
	if obj["kind"] != "Secret" {
		return
	}
	maskSecretValues(obj)
	meta, _ := obj["metadata"].(map[string]any)
	ann, _ := meta["annotations"].(map[string]any)
	raw, ok := ann[lastAppliedAnnotation].(string)
	if !ok {
		return
	}
	var applied map[string]any
	if err := json.Unmarshal([]byte(raw), &applied); err != nil {
		ann[lastAppliedAnnotation] = maskedSecret
		return
	}
	maskSecretValues(applied)
	b, err := json.Marshal(applied)
	if err != nil {
		ann[lastAppliedAnnotation] = maskedSecret
		return
	}
	ann[lastAppliedAnnotation] = string(b) + "\n"
}

// maskSecretValues replaces every value of data and stringData.
func maskSecretValues(obj map[string]any) {
	for _, field := range []string{"data", "stringData"} {
		if m, ok := obj[field].(map[string]any); ok {
			for k := range m {
				m[k] = maskedSecret
			}
		}
	}
}

// prettyJSON indents a JSON value for display; invalid JSON is shown as is.
// Markup characters stay as they are: the page escapes them when rendering.
func prettyJSON(value []byte) string {
	var v any
	if err := json.Unmarshal(value, &v); err != nil {
		return string(value)
	}
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		return string(value)
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// timestamp formats t as RFC 3339 with milliseconds in UTC.
func timestamp(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format("2006-01-02T15:04:05.000Z07:00")
}

// sortedKeys returns a map's keys in order.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
