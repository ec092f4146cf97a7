package apiserver

import (
	"context"
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/glassplane/glassplane/controlplane/storage"
)

// errModified is the cause Kubernetes gives for a failed optimistic update.
var errModified = errors.New("the object has been modified; please apply your changes to the latest version and try again")

// key returns the etcd key of an object of res.
func key(res *resource, namespace, name string) string {
	if !res.Namespaced {
		namespace = ""
	}
	return storage.Key(res.StorageResource, namespace, name)
}

// storageError maps a storage error to Kubernetes' Status error.
func storageError(res *resource, name string, err error) error {
	switch {
	case errors.Is(err, storage.ErrNotFound):
		return apierrors.NewNotFound(res.GroupResource(), name)
	case errors.Is(err, storage.ErrKeyExists):
		return apierrors.NewAlreadyExists(res.GroupResource(), name)
	case errors.Is(err, storage.ErrConflict):
		return apierrors.NewConflict(res.GroupResource(), name, errModified)
	case errors.Is(err, storage.ErrCompacted):
		return apierrors.NewResourceExpired(err.Error())
	}
	return err
}

// getFromStore reads one object.
func (s *Server) getFromStore(ctx context.Context, res *resource, namespace, name string) (runtime.Object, error) {
	kv, err := s.store.Get(ctx, key(res, namespace, name))
	if err != nil {
		return nil, storageError(res, name, err)
	}
	return decodeStored(res, kv.Value, kv.ModRevision)
}

// createInStore writes a new object and sets its resourceVersion.
func (s *Server) createInStore(ctx context.Context, res *resource, obj runtime.Object) (*storage.KeyValue, error) {
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil, err
	}
	value, err := encodeForStorage(res, obj)
	if err != nil {
		return nil, fmt.Errorf("failed to encode %s %q: %w", res.Resource, m.GetName(), err)
	}
	kv, err := s.store.Create(ctx, key(res, m.GetNamespace(), m.GetName()), value)
	if err != nil {
		return nil, storageError(res, m.GetName(), err)
	}
	m.SetResourceVersion(fmt.Sprint(kv.ModRevision))
	return kv, nil
}
