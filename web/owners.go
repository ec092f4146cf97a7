package web

import (
	"context"
	"fmt"

	"github.com/glassplane/glassplane/web/source"

	"github.com/glassplane/glassplane/components"
)

// maxDependents bounds how many descendants an object page groups.
const maxDependents = 30

// ownedObject is one stored object with the owner references that tie it to
// others.
type ownedObject struct {
	ref components.Object
	// group is the object's API group, for asking whether a user may see
	// it.
	group string
	owner []string // owner uids
}

// schedulingDecisionsStorage is the storage resource of the scheduler's
// decision records.
const schedulingDecisionsStorage = "glassplane.io/schedulingdecisions"

// ownerGraph reads every object in a namespace (all of them for a
// cluster-scoped owner) with its ownerReferences, so that an object page can
// list its dependents and group their timelines. It is built from
// ownerReferences alone, the way the garbage collector sees the cluster.
func (d *Dashboard) ownerGraph(ctx context.Context, namespace string) ([]ownedObject, error) {
	list, err := d.cfg.Store.List(ctx, source.Root, source.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("failed to list objects for their owners: %w", err)
	}
	var out []ownedObject
	for _, kv := range list.Items {
		ref, ok := parseKey(kv.Key)
		// Events tell their own story on the timeline; a pod's
		// SchedulingDecision is its scheduler page, not a dependent's steps.
		if !ok || ref.StorageResource == "events" || ref.StorageResource == schedulingDecisionsStorage || (namespace != "" && ref.Namespace != namespace) {
			continue
		}
		head := decodeHead(kv.Value)
		if len(head.Metadata.OwnerReferences) == 0 {
			continue
		}
		o := ownedObject{ref: components.Object{
			Resource: apiResource(ref.StorageResource), Namespace: ref.Namespace, Name: ref.Name,
			Kind: head.Kind, UID: string(head.Metadata.UID), Key: kv.Key,
		}, group: groupOf(head.APIVersion)}
		for _, or := range head.Metadata.OwnerReferences {
			o.owner = append(o.owner, string(or.UID))
		}
		out = append(out, o)
	}
	return out, nil
}

// descendants returns the objects owned by uid, then theirs, breadth first.
func descendants(graph []ownedObject, uid string) []ownedObject {
	var out []ownedObject
	seen := map[string]bool{uid: true}
	queue := []string{uid}
	for len(queue) > 0 && len(out) < maxDependents {
		owner := queue[0]
		queue = queue[1:]
		for _, o := range graph {
			if seen[o.ref.UID] || !ownedBy(o, owner) {
				continue
			}
			seen[o.ref.UID] = true
			out = append(out, o)
			queue = append(queue, o.ref.UID)
			if len(out) == maxDependents {
				break
			}
		}
	}
	return out
}

func ownedBy(o ownedObject, uid string) bool {
	for _, u := range o.owner {
		if u == uid {
			return true
		}
	}
	return false
}
