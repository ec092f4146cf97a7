package admission

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	apiserveradmission "k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/admission/plugin/resourcequota"
	"k8s.io/apiserver/pkg/authentication/user"
	quotav1 "k8s.io/apiserver/pkg/quota/v1"

	"github.com/glassplane/glassplane/controlplane/quota"
)

// ResourceQuotaPluginName is the name ResourceQuota reports in Steps.
const ResourceQuotaPluginName = "ResourceQuota"

// quotaWriteAttempts is how often ResourceQuota reads the quotas again
// after another write changed one under it (upstream retries three times).
const quotaWriteAttempts = 3

// QuotaStore reads a namespace's ResourceQuotas from storage and writes a
// quota's status only if it is still at the resourceVersion it was read at.
type QuotaStore interface {
	ListResourceQuotas(ctx context.Context, namespace string) ([]corev1.ResourceQuota, error)
	// UpdateResourceQuotaStatus fails with a 409 Conflict when the stored
	// quota changed since q was read.
	UpdateResourceQuotaStatus(ctx context.Context, q *corev1.ResourceQuota) error
}

// ResourceQuota is kube-apiserver's ResourceQuota plugin, the last of the
// chain: it measures what a create or update adds to each quota of the
// namespace that tracks it (k8s.io/apiserver's CheckRequest over the
// evaluators of controlplane/quota), refuses it with Kubernetes' 403
// "exceeded quota: ..." when a hard limit would be passed, and otherwise
// adds it to the quotas' status.used with a compare-and-swap, so that
// concurrent creates cannot pass a limit together.
type ResourceQuota struct {
	store    QuotaStore
	registry quotav1.Registry
	// mu guards locks, one mutex per namespace serializing this server's
	// quota writes there (the compare-and-swap guards against others).
	mu    sync.Mutex
	locks map[string]*sync.Mutex
}

var _ ValidationInterface = &ResourceQuota{}

// ignoredByQuota are the resources quota never charges, as upstream's.
var ignoredByQuota = map[schema.GroupResource]bool{
	{Resource: "events"}:                         true,
	{Group: "events.k8s.io", Resource: "events"}: true,
}

// NewResourceQuota returns the plugin reading and writing quotas in store.
func NewResourceQuota(store QuotaStore) *ResourceQuota {
	return &ResourceQuota{store: store, registry: quota.NewRegistry(nil, time.Now), locks: map[string]*sync.Mutex{}}
}

// Name implements Plugin.
func (*ResourceQuota) Name() string { return ResourceQuotaPluginName }

func (r *ResourceQuota) lock(namespace string) *sync.Mutex {
	r.mu.Lock()
	defer r.mu.Unlock()
	l, ok := r.locks[namespace]
	if !ok {
		l = &sync.Mutex{}
		r.locks[namespace] = l
	}
	return l
}

// Validate implements ValidationInterface.
func (r *ResourceQuota) Validate(ctx context.Context, a *Attributes) error {
	if a.Subresource != "" || a.Namespace == "" || a.Object == nil || (a.Operation != Create && a.Operation != Update) {
		return nil
	}
	gr := a.Resource.GroupResource()
	if ignoredByQuota[gr] {
		return nil
	}
	quotas, err := r.store.ListResourceQuotas(ctx, a.Namespace)
	if err != nil {
		return apierrors.NewInternalError(err)
	}
	if len(quotas) == 0 {
		return nil
	}
	l := r.lock(a.Namespace)
	l.Lock()
	defer l.Unlock()
	evaluator := quota.Evaluator(r.registry, gr, nil)
	attrs := apiserveradmission.NewAttributesRecord(a.Object, a.OldObject, a.Kind, a.Namespace, a.Name, a.Resource, a.Subresource,
		apiserveradmission.Operation(a.Operation), nil, a.DryRun, &user.DefaultInfo{Name: a.UserName, Groups: a.UserGroups})
	written := map[string]bool{}
	for attempt := 0; ; attempt++ {
		if attempt > 0 {
			if quotas, err = r.store.ListResourceQuotas(ctx, a.Namespace); err != nil {
				return apierrors.NewInternalError(err)
			}
		}
		pending := quotas[:0:0]
		for _, q := range quotas {
			if !written[q.Name] {
				pending = append(pending, q)
			}
		}
		updated, err := resourcequota.CheckRequest(pending, attrs, evaluator, nil)
		if err != nil {
			return err
		}
		if a.DryRun {
			return nil
		}
		conflicted := false
		for i := range updated {
			if quotav1.Equals(updated[i].Status.Used, pending[i].Status.Used) {
				continue
			}
			err := r.store.UpdateResourceQuotaStatus(ctx, &updated[i])
			switch {
			case err == nil:
				written[updated[i].Name] = true
			case apierrors.IsConflict(err) || apierrors.IsNotFound(err):
				conflicted = true
			default:
				return apierrors.NewInternalError(fmt.Errorf("failed to update the status of quota %q: %w", updated[i].Name, err))
			}
		}
		if !conflicted {
			return nil
		}
		if attempt+1 == quotaWriteAttempts {
			return apierrors.NewConflict(schema.GroupResource{Resource: "resourcequotas"}, "", errors.New("the quota changed while this request was being admitted; try again"))
		}
	}
}
