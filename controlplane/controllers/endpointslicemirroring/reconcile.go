package endpointslicemirroring

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/glassplane/glassplane/controlplane/controllers/internal/controllerutil"
)

// The reasons of the Events the controller records on an Endpoints, as
// upstream's.
const (
	reasonInvalidIPAddress         = "InvalidIPAddress"
	reasonTooManyAddressesToMirror = "TooManyAddressesToMirror"
)

var endpointsKind = v1.SchemeGroupVersion.WithKind("Endpoints")

// changes are the writes one reconcile makes.
type changes struct {
	create, update, remove []*discoveryv1.EndpointSlice
}

// reconcile makes the slices mirroring ep out of the ones that mirror it
// today (existing): per address type and set of ports, the first existing
// slice (by name) is kept, updated if it differs, and the others deleted;
// a slice that would be created reuses, by update, one of the same address
// type that would be deleted.
func (c *Controller) reconcile(ctx context.Context, ep *v1.Endpoints, existing []*discoveryv1.EndpointSlice) error {
	want := mirror(ep.Subsets, MaxEndpointsPerSubset)
	if want.invalid > 0 {
		c.recorder.Eventf(ep, v1.EventTypeWarning, reasonInvalidIPAddress,
			"Skipped %d invalid IP addresses when mirroring to EndpointSlices", want.invalid)
	}
	if want.skipped > want.invalid {
		c.log.Info("addresses over the per-subset limit were not mirrored", "endpoints", ep.Namespace+"/"+ep.Name, "skipped", want.skipped)
		c.recorder.Eventf(ep, v1.EventTypeWarning, reasonTooManyAddressesToMirror,
			"A max of %d addresses can be mirrored to EndpointSlices per Endpoints subset. %d addresses were skipped", MaxEndpointsPerSubset, want.skipped)
	}

	existing = slices.Clone(existing)
	slices.SortFunc(existing, func(a, b *discoveryv1.EndpointSlice) int { return strings.Compare(a.Name, b.Name) })
	byKey := map[string][]*discoveryv1.EndpointSlice{}
	for _, s := range existing {
		k := sliceKey(s.AddressType, s.Ports)
		byKey[k] = append(byKey[k], s)
	}
	var ch changes
	wanted := map[string]bool{}
	for _, d := range want.slices {
		wanted[d.key] = true
		cur := byKey[d.key]
		if len(d.endpoints) == 0 {
			ch.remove = append(ch.remove, cur...)
			continue
		}
		if len(cur) == 0 {
			ch.create = append(ch.create, newSlice(ep, d))
			continue
		}
		ch.remove = append(ch.remove, cur[1:]...)
		if upToDate(ep, cur[0], d) {
			if !c.tracker.has(cur[0]) {
				c.tracker.wrote(cur[0])
			}
			continue
		}
		ch.update = append(ch.update, refill(cur[0], newSlice(ep, d)))
	}
	for _, s := range existing {
		if !wanted[sliceKey(s.AddressType, s.Ports)] {
			ch.remove = append(ch.remove, s)
		}
	}
	ch.recycle()
	return c.write(ctx, ep, ch)
}

// recycle turns a create and a delete of the same address type into an
// update of the slice that would be deleted.
func (ch *changes) recycle() {
	var create []*discoveryv1.EndpointSlice
	for _, s := range ch.create {
		i := slices.IndexFunc(ch.remove, func(r *discoveryv1.EndpointSlice) bool { return r.AddressType == s.AddressType })
		if i < 0 {
			create = append(create, s)
			continue
		}
		ch.update = append(ch.update, refill(ch.remove[i], s))
		ch.remove = slices.Delete(ch.remove, i, i+1)
	}
	ch.create = create
}

// write makes the changes through the API and records them in the tracker.
// It creates nothing for an Endpoints being deleted.
func (c *Controller) write(ctx context.Context, ep *v1.Endpoints, ch changes) error {
	api := c.client.DiscoveryV1().EndpointSlices(ep.Namespace)
	if ep.DeletionTimestamp == nil {
		for _, s := range ch.create {
			created, err := api.Create(ctx, s, metav1.CreateOptions{})
			if apierrors.HasStatusCause(err, v1.NamespaceTerminatingCause) {
				return nil
			}
			if err != nil {
				return fmt.Errorf("failed to create EndpointSlice for Endpoints %s/%s: %w", ep.Namespace, ep.Name, err)
			}
			c.tracker.wrote(created)
			c.log.Debug("endpoint slice created", "endpoints", ep.Namespace+"/"+ep.Name, "slice", created.Name)
		}
	}
	for _, s := range ch.update {
		updated, err := api.Update(ctx, s, metav1.UpdateOptions{})
		if err != nil {
			return fmt.Errorf("failed to update EndpointSlice %q for Endpoints %s/%s: %w", s.Name, ep.Namespace, ep.Name, err)
		}
		c.tracker.wrote(updated)
		c.log.Debug("endpoint slice updated", "endpoints", ep.Namespace+"/"+ep.Name, "slice", s.Name)
	}
	for _, s := range ch.remove {
		if err := api.Delete(ctx, s.Name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("failed to delete EndpointSlice %q for Endpoints %s/%s: %w", s.Name, ep.Namespace, ep.Name, err)
		}
		c.tracker.deleting(s)
		c.log.Debug("endpoint slice deleted", "endpoints", ep.Namespace+"/"+ep.Name, "slice", s.Name)
	}
	return nil
}

// newSlice is the slice that mirrors d for ep: the Endpoints' labels with
// service-name and managed-by set, its annotations but the last change
// trigger time and kubectl's last applied configuration, and the Endpoints
// as its controller, as upstream's.
func newSlice(ep *v1.Endpoints, d *desiredSlice) *discoveryv1.EndpointSlice {
	labels := maps.Clone(ep.Labels)
	if labels == nil {
		labels = map[string]string{}
	}
	labels[discoveryv1.LabelServiceName] = ep.Name
	labels[discoveryv1.LabelManagedBy] = ControllerName
	annotations := map[string]string{}
	for k, v := range ep.Annotations {
		if k != v1.EndpointsLastChangeTriggerTime && k != v1.LastAppliedConfigAnnotation {
			annotations[k] = v
		}
	}
	return &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{
			GenerateName:    slicePrefix(ep.Name),
			Namespace:       ep.Namespace,
			Labels:          labels,
			Annotations:     annotations,
			OwnerReferences: []metav1.OwnerReference{*controllerutil.NewControllerRef(ep, endpointsKind)},
		},
		AddressType: d.addressType,
		Ports:       d.ports,
		Endpoints:   d.endpoints,
	}
}

// refill is cur, deep-copied, with next's content: what to send to update
// cur into next.
func refill(cur, next *discoveryv1.EndpointSlice) *discoveryv1.EndpointSlice {
	s := cur.DeepCopy()
	s.Labels = next.Labels
	s.Annotations = next.Annotations
	s.OwnerReferences = next.OwnerReferences
	s.AddressType = next.AddressType
	s.Ports = next.Ports
	s.Endpoints = next.Endpoints
	return s
}

// slicePrefix is the generateName of ep's slices: the name and a dash
// where that still makes a valid name, as upstream's.
func slicePrefix(name string) string {
	if len(name) < 253 {
		return name + "-"
	}
	return name
}

// upToDate reports whether cur already mirrors d for ep: the same
// endpoints in any order, labels and annotations, and not owned by an
// earlier Endpoints of the same name.
func upToDate(ep *v1.Endpoints, cur *discoveryv1.EndpointSlice, d *desiredSlice) bool {
	want := newSlice(ep, d)
	if !equality.Semantic.DeepEqual(cur.Labels, want.Labels) || !equality.Semantic.DeepEqual(cur.Annotations, want.Annotations) {
		return false
	}
	for _, ref := range cur.OwnerReferences {
		if ref.Kind == endpointsKind.Kind && ref.Name == ep.Name && ref.UID != ep.UID {
			return false
		}
	}
	if len(cur.Endpoints) != len(d.endpoints) {
		return false
	}
	seen := make(map[endpointID]bool, len(cur.Endpoints))
	for _, e := range cur.Endpoints {
		id := idOf(e)
		i, ok := d.index[id]
		if !ok || seen[id] || !equality.Semantic.DeepEqual(e, d.endpoints[i]) {
			return false
		}
		seen[id] = true
	}
	return true
}
