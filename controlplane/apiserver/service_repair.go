package apiserver

import (
	"context"
	"errors"
	"fmt"
	"math/big"
	"net/netip"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"

	"github.com/glassplane/glassplane/controlplane/storage"
)

const (
	// serviceRepairInterval is how often the allocations are checked
	// against the Services, kube-apiserver's --repair-interval default.
	serviceRepairInterval = 3 * time.Minute
	// orphanIPGrace is how old an IPAddress without its Service must be
	// before the repair deletes it: a create claims its address before it
	// stores the Service, and must not lose it in between.
	orphanIPGrace = time.Minute
	// repairsBeforePortRelease is how many repairs in a row must find a
	// node port marked but unused before it is freed, as kube-apiserver's
	// port repair (numRepairsBeforeLeakCleanup) waits out writes in flight.
	repairsBeforePortRelease = 3
)

// errNoChange tells updatePorts that the bitmap is right as it is.
var errNoChange = errors.New("no change")

// serviceRepair is what one repair pass found and did.
type serviceRepair struct {
	// IPsClaimed are the cluster IPs of Services that had no IPAddress.
	IPsClaimed []string
	// IPsReleased are IPAddresses whose Service was gone or held another
	// address.
	IPsReleased []string
	// PortsMarked are node ports Services use that the bitmap lacked.
	PortsMarked []int
	// PortsReleased are node ports marked in the bitmap that no Service
	// used for repairsBeforePortRelease passes.
	PortsReleased []int
	// OrphanDue is when the youngest IPAddress left for its grace may go
	// (zero: none was left), so the next pass need not wait a whole
	// interval: what a crash mid-create left (kube-dns's address after an
	// interrupted start, say) is freed a minute later, not three.
	OrphanDue time.Time
}

// repairServices checks the allocations against the stored Services, as
// kube-apiserver's ClusterIP and NodePort repair controllers do: a Service's
// address without its IPAddress object gets one, an IPAddress whose Service
// is gone (older than orphanIPGrace) goes, and the node port bitmap is
// rebuilt from the Services, a leaked port being freed only after it has
// been seen unused repairsBeforePortRelease times. This undoes what a crash
// between an allocation and the write it was for leaves behind.
func (a *serviceAllocator) repair(ctx context.Context, svcRes *resource, now time.Time) (serviceRepair, error) {
	var out serviceRepair
	svcPrefix := storage.Prefix(svcRes.StorageResource, "")
	svcs, err := a.store.List(ctx, svcPrefix, storage.ListOptions{})
	if err != nil {
		return out, fmt.Errorf("failed to list services: %w", err)
	}
	owners := map[string]*corev1.Service{}
	used := map[int]bool{}
	for _, kv := range svcs.Items {
		obj, err := decodeStored(svcRes, kv.Value, kv.ModRevision)
		if err != nil {
			a.log.Warn("service repair: failed to decode a service", "key", kv.Key, "err", err)
			continue
		}
		svc := obj.(*corev1.Service)
		if needsClusterIP(svc) {
			for _, ip := range svc.Spec.ClusterIPs {
				if addr, err := netip.ParseAddr(ip); err == nil && a.cidr.Contains(addr) {
					owners[ip] = svc
				}
			}
		}
		for _, p := range svc.Spec.Ports {
			if p.NodePort != 0 {
				used[int(p.NodePort)] = true
			}
		}
	}

	ipPrefix := storage.Prefix(a.ipRes.StorageResource, "")
	addrs, err := a.store.List(ctx, ipPrefix, storage.ListOptions{})
	if err != nil {
		return out, fmt.Errorf("failed to list ipaddresses: %w", err)
	}
	claimed := map[string]bool{}
	for _, kv := range addrs.Items {
		obj, err := decodeStored(a.ipRes, kv.Value, kv.ModRevision)
		if err != nil {
			continue
		}
		addr := obj.(*networkingv1.IPAddress)
		if addr.Labels[labelManagedBy] != ipAllocatorManager {
			continue
		}
		claimed[addr.Name] = true
		owner, ref := owners[addr.Name], addr.Spec.ParentRef
		if owner != nil && ref != nil && ref.Resource == "services" && ref.Namespace == owner.Namespace && ref.Name == owner.Name {
			continue
		}
		if due := addr.CreationTimestamp.Add(orphanIPGrace); now.Before(due) {
			if out.OrphanDue.IsZero() || due.After(out.OrphanDue) {
				out.OrphanDue = due
			}
			continue
		}
		a.releaseIP(ctx, addr.Name, nil)
		out.IPsReleased = append(out.IPsReleased, addr.Name)
		a.log.Warn("service repair: released a cluster IP no Service holds", "ip", addr.Name)
		if owner != nil {
			// Another Service holds the address: give it its own object.
			delete(claimed, addr.Name)
		}
	}
	for ip, svc := range owners {
		if claimed[ip] {
			continue
		}
		if err := a.claimIP(ctx, svc, ip); err != nil && err != errIPAllocated {
			return out, err
		}
		out.IPsClaimed = append(out.IPsClaimed, ip)
		a.log.Warn("service repair: cluster IP was not allocated; repaired", "ip", ip, "service", svc.Namespace+"/"+svc.Name)
	}

	prev := a.leaks
	var leaks map[int]int
	err = a.updatePorts(ctx, func(bits *big.Int) error {
		out.PortsMarked, out.PortsReleased = out.PortsMarked[:0], out.PortsReleased[:0]
		for p := range used {
			if p >= a.portMin && p <= a.portMax && bits.Bit(p-a.portMin) == 0 {
				bits.SetBit(bits, p-a.portMin, 1)
				out.PortsMarked = append(out.PortsMarked, p)
			}
		}
		leaks = map[int]int{}
		for off := range a.portMax - a.portMin + 1 {
			p := a.portMin + off
			if bits.Bit(off) == 0 || used[p] {
				continue
			}
			leaks[p] = prev[p] + 1
			if leaks[p] >= repairsBeforePortRelease {
				bits.SetBit(bits, off, 0)
				out.PortsReleased = append(out.PortsReleased, p)
				delete(leaks, p)
			}
		}
		if len(out.PortsMarked)+len(out.PortsReleased) == 0 {
			return errNoChange
		}
		return nil
	})
	if err != nil && err != errNoChange {
		return out, err
	}
	a.leaks = leaks
	if len(out.PortsMarked)+len(out.PortsReleased) > 0 {
		a.log.Warn("service repair: node port range repaired", "marked", out.PortsMarked, "released", out.PortsReleased)
	}
	return out, nil
}

// runServiceRepair repairs the allocations every serviceRepairInterval
// until ctx ends; sooner when an orphan IPAddress seen by the last pass
// (first is the pass of the start) comes out of its grace.
func (s *Server) runServiceRepair(ctx context.Context, first serviceRepair) {
	if s.services == nil {
		return
	}
	res := s.byPath[corev1.SchemeGroupVersion.WithResource("services")]
	t := time.NewTimer(nextRepair(first, time.Now()))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			got, err := s.services.repair(ctx, res, now)
			if err != nil && ctx.Err() == nil {
				s.log.Warn("service repair failed", "err", err)
			}
			t.Reset(nextRepair(got, time.Now()))
		}
	}
}

// nextRepair is how long after now the next repair pass runs: the
// interval, or less when an orphan comes out of its grace before that.
func nextRepair(last serviceRepair, now time.Time) time.Duration {
	if last.OrphanDue.IsZero() {
		return serviceRepairInterval
	}
	// A moment past the grace, so that pass finds it over.
	return min(serviceRepairInterval, max(last.OrphanDue.Sub(now)+time.Second, time.Second))
}
