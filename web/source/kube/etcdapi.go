package kube

import (
	"context"
	"errors"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"

	"github.com/glassplane/glassplane/api/v1alpha1"
	"github.com/glassplane/glassplane/web/source"
)

// glassplaneScheme knows Glassplane's own kinds (api/v1alpha1).
var glassplaneScheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	if err := v1alpha1.AddToScheme(s); err != nil {
		panic(fmt.Sprintf("failed to register glassplane.io/v1alpha1: %v", err))
	}
	return s
}()

// glassplaneClient is a REST client for glassplane.io/v1alpha1 as cfg's
// identity.
func glassplaneClient(cfg *rest.Config) (*rest.RESTClient, error) {
	return glassplaneClientFor(cfg, runtime.ContentTypeJSON)
}

// glassplaneClientFor is glassplaneClient asking for answers in accept
// (JSON when the server has no other form of an object).
func glassplaneClientFor(cfg *rest.Config, accept string) (*rest.RESTClient, error) {
	c := restConfig(cfg)
	c.GroupVersion = &v1alpha1.SchemeGroupVersion
	c.APIPath = "/apis"
	c.ContentType = runtime.ContentTypeJSON
	c.AcceptContentTypes = accept
	c.NegotiatedSerializer = serializer.NewCodecFactory(glassplaneScheme).WithoutConversion()
	rc, err := rest.RESTClientFor(c)
	if err != nil {
		return nil, fmt.Errorf("failed to make a client of %s for %s: %w", v1alpha1.SchemeGroupVersion, c.Host, err)
	}
	return rc, nil
}

// EtcdKeysServed reports whether the cluster serves Glassplane's etcd key
// explorer (etcdkeys.glassplane.io): only Glassplane's API server does.
func EtcdKeysServed(disco discovery.DiscoveryInterface) (bool, error) {
	return served(disco, "etcdkeys")
}

// AuditEventsServed reports whether the cluster serves Glassplane's audit
// stream (auditevents.glassplane.io): only Glassplane's API server does.
func AuditEventsServed(disco discovery.DiscoveryInterface) (bool, error) {
	return served(disco, "auditevents")
}

func served(disco discovery.DiscoveryInterface, resource string) (bool, error) {
	list, err := disco.ServerResourcesForGroupVersion(v1alpha1.SchemeGroupVersion.String())
	switch {
	case apierrors.IsNotFound(err):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("failed to discover %s: %w", v1alpha1.SchemeGroupVersion, err)
	}
	for _, r := range list.APIResources {
		if r.Name == resource {
			return true, nil
		}
	}
	return false, nil
}

// EtcdAPI is a source.Etcd that reads Glassplane's read-only etcdkeys API
// (etcdkeys.glassplane.io/v1alpha1) as the dashboard's identity, whom
// RBAC must allow get and list on etcdkeys: the keys under /registry/ at a
// revision, and a key's values back through the revisions.
type EtcdAPI struct {
	client *rest.RESTClient
}

var _ source.Etcd = (*EtcdAPI)(nil)

// NewEtcdAPI returns the explorer's view of the etcd of the Glassplane
// API server cfg names.
func NewEtcdAPI(cfg *rest.Config) (*EtcdAPI, error) {
	c, err := glassplaneClient(cfg)
	if err != nil {
		return nil, err
	}
	return &EtcdAPI{client: c}, nil
}

// Keys implements source.Etcd. The API lists every key under /registry/
// in key order, page by page; Keys keeps those under prefix and stops
// past them. The list carries no values (each item says its revisions
// and size): Value is nil, and History reads a key's values.
func (e *EtcdAPI) Keys(ctx context.Context, prefix string, rev int64) (*source.ListResult, error) {
	out := &source.ListResult{Revision: rev}
	cont := ""
	for {
		req := e.client.Get().Resource("etcdkeys").Param("limit", fmt.Sprint(PageSize)).Timeout(RequestTimeout).MaxRetries(0)
		if cont != "" {
			req.Param("continue", cont)
		} else if rev > 0 {
			req.Param("resourceVersion", fmt.Sprint(rev))
		}
		var list v1alpha1.EtcdKeyList
		if err := req.Do(ctx).Into(&list); err != nil {
			return nil, fmt.Errorf("failed to list etcd keys at revision %d: %w", rev, etcdAPIError(err, ""))
		}
		if out.Revision == 0 {
			r, err := parseRevision(list.ResourceVersion)
			if err != nil {
				return nil, fmt.Errorf("failed to read an etcd key list: %w", err)
			}
			out.Revision = r
		}
		for _, k := range list.Items {
			switch {
			case strings.HasPrefix(k.Key, prefix):
				out.Items = append(out.Items, source.KeyValue{Key: k.Key, CreateRevision: k.CreateRevision, ModRevision: k.ModRevision})
			case k.Key > prefix:
				// Keys come in order: the rest are past prefix.
				return out, nil
			}
		}
		if cont = list.Continue; cont == "" {
			return out, nil
		}
	}
}

// History implements source.Etcd from the key's history subresource,
// which walks back at most etcdview.HistoryLength values (50).
func (e *EtcdAPI) History(ctx context.Context, key string, at int64, n int) ([]source.KeyVersion, source.HistoryEnd, error) {
	name := v1alpha1.EtcdKeyName(key)
	req := e.client.Get().Resource("etcdkeys").Name(name).SubResource("history").Timeout(RequestTimeout).MaxRetries(0)
	if at > 0 {
		req.Param("resourceVersion", fmt.Sprint(at))
	}
	var list v1alpha1.EtcdKeyList
	if err := req.Do(ctx).Into(&list); err != nil {
		return nil, source.HistoryEnd{}, fmt.Errorf("failed to read the history of etcd key %q: %w", key, etcdAPIError(err, name))
	}
	var end v1alpha1.EtcdHistoryEnd
	if list.History != nil {
		end = *list.History
	}
	return history(list.Items, end, n)
}

// etcdAPIError words the etcdkeys API's errors as source's. A 404 is
// source.ErrNotFound when it names the key asked for (name), else
// ErrNotServed: the resource itself is missing.
func etcdAPIError(err error, name string) error {
	var st apierrors.APIStatus
	if apierrors.IsNotFound(err) && errors.As(err, &st) {
		if d := st.Status().Details; name == "" || d == nil || d.Name != name {
			return fmt.Errorf("%w: %w", ErrNotServed, err)
		}
	}
	return sourceError(err)
}

// history turns etcdview's walk back through a key's values into
// source's, at most n of them (all when n <= 0).
func history(keys []v1alpha1.EtcdKey, end v1alpha1.EtcdHistoryEnd, n int) ([]source.KeyVersion, source.HistoryEnd, error) {
	out := make([]source.KeyVersion, 0, len(keys))
	for _, k := range keys {
		if n > 0 && len(out) == n {
			return out, source.HistoryEnd{Truncated: true}, nil
		}
		out = append(out, source.KeyVersion{
			ModRevision: k.ModRevision, CreateRevision: k.CreateRevision, Version: k.Version, Value: valueBytes(k.Value),
		})
	}
	return out, source.HistoryEnd{CreatedAt: end.CreatedAt, CompactedAt: end.CompactedAt, Truncated: end.Truncated}, nil
}

// valueBytes is a decoded etcd value for reading: the object's JSON, else
// the text, else the stored bytes.
func valueBytes(v *v1alpha1.EtcdValue) []byte {
	switch {
	case v == nil:
		return nil
	case v.Object != nil:
		return v.Object.Raw
	case v.Text != "":
		return []byte(v.Text)
	}
	return v.Raw
}
