package apiserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math/big"
	"math/rand/v2"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/glassplane/glassplane/controlplane/storage"
)

const (
	// DefaultServiceClusterIPRange is kube-apiserver's usual
	// --service-cluster-ip-range.
	DefaultServiceClusterIPRange = "10.96.0.0/16"
	// DefaultServiceNodePortRange is kube-apiserver's
	// --service-node-port-range.
	DefaultServiceNodePortRange = "30000-32767"
	// DefaultServiceCIDRName names the ServiceCIDR made from the flag, as
	// kube-apiserver's default-servicecidr controller does.
	DefaultServiceCIDRName = "kubernetes"

	labelIPFamily       = "ipaddress.kubernetes.io/ip-family"
	labelManagedBy      = "ipaddress.kubernetes.io/managed-by"
	ipAllocatorManager  = "ipallocator.k8s.io"
	nodePortRangeKey    = "servicenodeports"
	nodePortRangeFolder = "ranges"
	// dnsServiceOffset is the address installers give the cluster DNS
	// Service (.10); dynamic allocation never hands it out.
	dnsServiceOffset = 10
)

// Errors of the allocators, with kube-apiserver's texts (ipallocator and
// portallocator).
var (
	errIPAllocated   = errors.New("provided IP is already allocated")
	errPortAllocated = errors.New("provided port is already allocated")
	errRangeFull     = errors.New("range is full")
)

// serviceAllocator gives Services their cluster IPs and node ports, as
// kube-apiserver's service REST storage does with its allocators. A cluster
// IP is claimed by creating the IPAddress object named by it (a create that
// finds it taken tries another); node ports are a bitmap in one key,
// /registry/ranges/servicenodeports, changed with compare-and-swap.
type serviceAllocator struct {
	store   *storage.Store
	cidr    netip.Prefix
	portMin int
	portMax int
	// ipRes and cidrRes are the ipaddresses and servicecidrs resources.
	ipRes, cidrRes *resource
	log            *slog.Logger
	// mu serializes this process's changes to the node port bitmap, so
	// that its writers take turns rather than losing compare-and-swaps to
	// one another; other processes are kept out by the swap itself.
	mu sync.Mutex
	// leaks counts, for each node port marked but unused, the repairs in
	// a row that found it so (serviceRepair).
	leaks map[int]int
}

// KubernetesServiceIP is the address the kubernetes Service takes in the
// service cluster IP range cidr (its first usable one; the default range's
// is 10.96.0.1), which the API server's certificate must name, as
// kube-apiserver's does: pods reach the API at it.
func KubernetesServiceIP(cidr string) (netip.Addr, error) {
	a, err := newServiceAllocator(nil, nil, cidr, "", nil, nil)
	if err != nil {
		return netip.Addr{}, err
	}
	return a.addrAt(1), nil
}

// newServiceAllocator parses the ranges (empty means the defaults).
func newServiceAllocator(store *storage.Store, log *slog.Logger, cidr, ports string, ipRes, cidrRes *resource) (*serviceAllocator, error) {
	if cidr == "" {
		cidr = DefaultServiceClusterIPRange
	}
	if ports == "" {
		ports = DefaultServiceNodePortRange
	}
	prefix, err := netip.ParsePrefix(cidr)
	if err != nil || !prefix.Addr().Is4() || prefix.Bits() > 30 {
		return nil, fmt.Errorf("invalid service cluster IP range %q: want an IPv4 CIDR of at least 4 addresses", cidr)
	}
	lo, hi, ok := strings.Cut(ports, "-")
	pmin, err1 := strconv.Atoi(strings.TrimSpace(lo))
	pmax, err2 := strconv.Atoi(strings.TrimSpace(hi))
	if !ok || err1 != nil || err2 != nil || pmin < 1 || pmax > 65535 || pmin > pmax {
		return nil, fmt.Errorf("invalid service node port range %q: want first-last, such as %s", ports, DefaultServiceNodePortRange)
	}
	return &serviceAllocator{store: store, cidr: prefix.Masked(), portMin: pmin, portMax: pmax, ipRes: ipRes, cidrRes: cidrRes, log: log}, nil
}

// portRange is the node port range as Kubernetes prints it.
func (a *serviceAllocator) portRange() string { return fmt.Sprintf("%d-%d", a.portMin, a.portMax) }

// size is the number of addresses in the range.
func (a *serviceAllocator) size() uint64 { return 1 << (32 - a.cidr.Bits()) }

// addrAt returns the range's address at offset.
func (a *serviceAllocator) addrAt(offset uint64) netip.Addr {
	b := a.cidr.Addr().As4()
	n := uint64(b[0])<<24 | uint64(b[1])<<16 | uint64(b[2])<<8 | uint64(b[3])
	n += offset
	return netip.AddrFrom4([4]byte{byte(n >> 24), byte(n >> 16), byte(n >> 8), byte(n)})
}

// usable reports whether ip is one the range hands out: inside it, neither
// its network nor its broadcast address.
func (a *serviceAllocator) usable(ip netip.Addr) bool {
	return a.cidr.Contains(ip) && ip != a.cidr.Addr() && ip != a.addrAt(a.size()-1)
}

// allocation is what one write of a Service claimed, and undoes it.
type allocation struct {
	a     *serviceAllocator
	ips   []string
	ports []int
	// dryRun: nothing was claimed, so nothing is given back.
	dryRun bool
}

// release gives back what was claimed, on a fresh context so that a
// cancelled request still cleans up.
func (al *allocation) release() {
	if al == nil || al.dryRun || (len(al.ips) == 0 && len(al.ports) == 0) {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, ip := range al.ips {
		al.a.releaseIP(ctx, ip, nil)
	}
	al.a.releasePorts(ctx, al.ports)
}

// needsClusterIP reports whether svc gets cluster IPs (not ExternalName,
// not headless).
func needsClusterIP(svc *corev1.Service) bool {
	return svc.Spec.Type != corev1.ServiceTypeExternalName && svc.Spec.ClusterIP != corev1.ClusterIPNone
}

// needsNodePorts reports whether svc's ports get node ports.
func needsNodePorts(svc *corev1.Service) bool {
	switch svc.Spec.Type {
	case corev1.ServiceTypeNodePort:
		return true
	case corev1.ServiceTypeLoadBalancer:
		return svc.Spec.AllocateLoadBalancerNodePorts == nil || *svc.Spec.AllocateLoadBalancerNodePorts
	}
	return false
}

// allocate claims what svc needs beyond what old (nil on create) holds: a
// cluster IP (the requested one, or a free one) and a node port for each
// port that needs one. It sets them on svc. On error nothing stays claimed.
// In a dry run (isDryRun) it checks and picks the same way, and claims
// nothing.
func (a *serviceAllocator) allocate(ctx context.Context, svc, old *corev1.Service) (_ *allocation, retErr error) {
	al := &allocation{a: a, dryRun: isDryRun(ctx)}
	defer func() {
		if retErr != nil {
			al.release()
		}
	}()
	if needsClusterIP(svc) && (old == nil || !needsClusterIP(old) || old.Spec.ClusterIP == "") {
		ip, err := a.allocateIP(ctx, svc, svc.Spec.ClusterIP)
		if err != nil {
			return nil, err
		}
		if ip != "" {
			al.ips = append(al.ips, ip)
			svc.Spec.ClusterIP = ip
			svc.Spec.ClusterIPs = []string{ip}
		}
	}
	if needsNodePorts(svc) {
		held := map[int]bool{}
		if old != nil && needsNodePorts(old) {
			for _, p := range old.Spec.Ports {
				held[int(p.NodePort)] = p.NodePort != 0
			}
		}
		var err error
		al.ports, err = a.allocatePorts(ctx, svc, held)
		if err != nil {
			return nil, err
		}
	}
	return al, nil
}

// allocateIP claims want (empty: any free address) for svc and returns it.
func (a *serviceAllocator) allocateIP(ctx context.Context, svc *corev1.Service, want string) (string, error) {
	if want != "" {
		ip, err := netip.ParseAddr(want)
		if err != nil {
			// Validation has refused anything that does not parse.
			return "", apierrors.NewInternalError(fmt.Errorf("failed to parse cluster IP %q: %w", want, err))
		}
		if !a.usable(ip) {
			return "", invalidClusterIP(svc, want, fmt.Errorf("the provided IP (%s) is not in the valid range. The range of valid IPs is %s", want, a.cidr))
		}
		err = a.claimIP(ctx, svc, want)
		if errors.Is(err, errIPAllocated) {
			return "", invalidClusterIP(svc, want, err)
		}
		return want, err
	}
	ip, err := a.claimFreeIP(ctx, svc)
	if errors.Is(err, errRangeFull) {
		return "", apierrors.NewInternalError(fmt.Errorf("failed to allocate a serviceIP: %w", err))
	}
	return ip, err
}

func invalidClusterIP(svc *corev1.Service, ip string, err error) error {
	return apierrors.NewInvalid(corev1.SchemeGroupVersion.WithKind("Service").GroupKind(), svc.Name, field.ErrorList{
		field.Invalid(field.NewPath("spec", "clusterIPs"), []string{ip}, fmt.Sprintf("failed to allocate IP %s: %v", ip, err)),
	})
}

// claimFreeIP claims a free address: it reads which are taken, then tries
// the free ones from a random place in the upper part of the range first
// (the lower band is for addresses asked for by name, as kube-apiserver's
// allocator keeps it), a create that finds one taken moving on to the next.
func (a *serviceAllocator) claimFreeIP(ctx context.Context, svc *corev1.Service) (string, error) {
	taken := map[string]bool{}
	prefix := storage.Prefix(a.ipRes.StorageResource, "")
	list, err := a.store.List(ctx, prefix, storage.ListOptions{})
	if err != nil {
		return "", err
	}
	for _, kv := range list.Items {
		taken[strings.TrimPrefix(kv.Key, prefix)] = true
	}
	size := a.size()
	band := min(max(16, size/16), 256)
	if band >= size-2 {
		band = 1
	}
	try := func(lo, hi uint64) (string, error) {
		if hi <= lo {
			return "", errRangeFull
		}
		start := lo + rand.Uint64N(hi-lo)
		for i := range hi - lo {
			offset := lo + (start-lo+i)%(hi-lo)
			ip := a.addrAt(offset).String()
			if offset == dnsServiceOffset || taken[ip] {
				continue
			}
			err := a.claimIP(ctx, svc, ip)
			if errors.Is(err, errIPAllocated) {
				continue
			}
			return ip, err
		}
		return "", errRangeFull
	}
	ip, err := try(band, size-1)
	if errors.Is(err, errRangeFull) {
		ip, err = try(1, band)
	}
	return ip, err
}

// claimIP creates the IPAddress object of ip for svc; errIPAllocated when
// it exists. A dry run only looks whether it exists.
func (a *serviceAllocator) claimIP(ctx context.Context, svc *corev1.Service, ip string) error {
	if isDryRun(ctx) {
		_, err := a.store.Get(ctx, key(a.ipRes, "", ip))
		switch {
		case err == nil:
			return errIPAllocated
		case errors.Is(err, storage.ErrNotFound):
			return nil
		}
		return fmt.Errorf("failed to read IPAddress %q: %w", ip, err)
	}
	addr := &networkingv1.IPAddress{
		ObjectMeta: metav1.ObjectMeta{
			Name:   ip,
			Labels: map[string]string{labelIPFamily: string(corev1.IPv4Protocol), labelManagedBy: ipAllocatorManager},
		},
		Spec: networkingv1.IPAddressSpec{ParentRef: &networkingv1.ParentReference{Resource: "services", Namespace: svc.Namespace, Name: svc.Name}},
	}
	prepareForCreate(a.ipRes, addr)
	value, err := encodeForStorage(a.ipRes, addr)
	if err != nil {
		return fmt.Errorf("failed to encode IPAddress %q: %w", ip, err)
	}
	_, err = a.store.Create(ctx, key(a.ipRes, "", ip), value)
	if errors.Is(err, storage.ErrKeyExists) {
		return errIPAllocated
	}
	if err != nil {
		return fmt.Errorf("failed to create IPAddress %q: %w", ip, err)
	}
	return nil
}

// releaseIP deletes ip's IPAddress object; with svc set, only when it
// belongs to svc.
func (a *serviceAllocator) releaseIP(ctx context.Context, ip string, svc *corev1.Service) {
	k := key(a.ipRes, "", ip)
	kv, err := a.store.Get(ctx, k)
	if err != nil {
		return
	}
	if svc != nil {
		obj, err := decodeStored(a.ipRes, kv.Value, kv.ModRevision)
		if err != nil {
			return
		}
		ref := obj.(*networkingv1.IPAddress).Spec.ParentRef
		if ref == nil || ref.Resource != "services" || ref.Namespace != svc.Namespace || ref.Name != svc.Name {
			return
		}
	}
	if _, _, err := a.store.Delete(ctx, k, kv.ModRevision); err != nil && !errors.Is(err, storage.ErrNotFound) {
		a.log.Warn("failed to release cluster IP", "ip", ip, "err", err)
	}
}

// allocatePorts gives each of svc's ports a node port: a requested one not
// in held is claimed, a missing one is picked. It returns the ports it
// claimed.
func (a *serviceAllocator) allocatePorts(ctx context.Context, svc *corev1.Service, held map[int]bool) ([]int, error) {
	var want []int
	var missing []int
	for i, p := range svc.Spec.Ports {
		port := int(p.NodePort)
		switch {
		case port == 0:
			missing = append(missing, i)
		case held[port]:
		case port < a.portMin || port > a.portMax:
			return nil, invalidNodePort(svc, i, fmt.Errorf("provided port is not in the valid range. The range of valid ports is %s", a.portRange()))
		default:
			want = append(want, i)
		}
	}
	if len(want) == 0 && len(missing) == 0 {
		return nil, nil
	}
	var claimed []int
	err := a.updatePorts(ctx, func(bits *big.Int) error {
		claimed = claimed[:0]
		for _, i := range want {
			port := int(svc.Spec.Ports[i].NodePort)
			if slices.Contains(claimed, port) {
				continue
			}
			if bits.Bit(port-a.portMin) == 1 {
				return invalidNodePort(svc, i, errPortAllocated)
			}
			bits.SetBit(bits, port-a.portMin, 1)
			claimed = append(claimed, port)
		}
		for _, i := range missing {
			// Two ports of one Service with the same number but
			// different protocols share a node port, as upstream's do.
			if shared := sharedNodePort(svc, i); shared != 0 {
				svc.Spec.Ports[i].NodePort = int32(shared)
				continue
			}
			offset, ok := a.freePort(bits)
			if !ok {
				return apierrors.NewInternalError(fmt.Errorf("failed to allocate a nodePort: %w", errRangeFull))
			}
			bits.SetBit(bits, offset, 1)
			claimed = append(claimed, a.portMin+offset)
			svc.Spec.Ports[i].NodePort = int32(a.portMin + offset)
		}
		return nil
	})
	if err != nil {
		for _, i := range missing {
			svc.Spec.Ports[i].NodePort = 0
		}
		return nil, err
	}
	return claimed, nil
}

// freePort returns the offset of a free node port: from a random place in
// the upper part of the range first, the lower band (the range's size / 32,
// 16 to 128 ports) being kept for ports asked for by number, as
// kube-apiserver's allocator does since ServiceNodePortStaticSubrange.
func (a *serviceAllocator) freePort(bits *big.Int) (int, bool) {
	size := a.portMax - a.portMin + 1
	band := min(max(16, size/32), 128)
	if band >= size {
		band = 0
	}
	try := func(lo, hi int) (int, bool) {
		if hi <= lo {
			return 0, false
		}
		start := rand.IntN(hi - lo)
		for i := range hi - lo {
			offset := lo + (start+i)%(hi-lo)
			if bits.Bit(offset) == 0 {
				return offset, true
			}
		}
		return 0, false
	}
	if offset, ok := try(band, size); ok {
		return offset, true
	}
	return try(0, band)
}

// sharedNodePort returns the node port an earlier port of svc with the same
// port number already has, or 0.
func sharedNodePort(svc *corev1.Service, i int) int {
	for j := range i {
		if svc.Spec.Ports[j].Port == svc.Spec.Ports[i].Port && svc.Spec.Ports[j].Protocol != svc.Spec.Ports[i].Protocol && svc.Spec.Ports[j].NodePort != 0 {
			return int(svc.Spec.Ports[j].NodePort)
		}
	}
	return 0
}

func invalidNodePort(svc *corev1.Service, i int, err error) error {
	return apierrors.NewInvalid(corev1.SchemeGroupVersion.WithKind("Service").GroupKind(), svc.Name, field.ErrorList{
		field.Invalid(field.NewPath("spec", "ports").Index(i).Child("nodePort"), svc.Spec.Ports[i].NodePort, err.Error()),
	})
}

// releasePorts clears ports in the bitmap.
func (a *serviceAllocator) releasePorts(ctx context.Context, ports []int) {
	if len(ports) == 0 {
		return
	}
	err := a.updatePorts(ctx, func(bits *big.Int) error {
		for _, p := range ports {
			if p >= a.portMin && p <= a.portMax {
				bits.SetBit(bits, p-a.portMin, 0)
			}
		}
		return nil
	})
	if err != nil {
		a.log.Warn("failed to release node ports", "ports", ports, "err", err)
	}
}

// updatePorts changes the node port bitmap with compare-and-swap; change
// runs again on a fresh copy after a lost swap, and its error writes nothing.
// A dry run's change runs on a copy that is not written.
func (a *serviceAllocator) updatePorts(ctx context.Context, change func(bits *big.Int) error) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	k := storage.Key(nodePortRangeFolder, "", nodePortRangeKey)
	for range maxWriteAttempts {
		kv, err := a.store.Get(ctx, k)
		var bits *big.Int
		switch {
		case errors.Is(err, storage.ErrNotFound):
			bits = new(big.Int)
		case err != nil:
			return fmt.Errorf("failed to read the node port range: %w", err)
		default:
			bits, err = a.decodePorts(kv.Value)
			if err != nil {
				return err
			}
		}
		if err := change(bits); err != nil || isDryRun(ctx) {
			return err
		}
		value, err := json.Marshal(&corev1.RangeAllocation{
			TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "RangeAllocation"},
			ObjectMeta: metav1.ObjectMeta{CreationTimestamp: metav1.Now()},
			Range:      a.portRange(), Data: bits.Bytes(),
		})
		if err != nil {
			return err
		}
		if kv == nil {
			_, err = a.store.Create(ctx, k, value)
		} else {
			_, err = a.store.Update(ctx, k, value, kv.ModRevision)
		}
		if errors.Is(err, storage.ErrKeyExists) || errors.Is(err, storage.ErrConflict) || errors.Is(err, storage.ErrNotFound) {
			continue
		}
		return err
	}
	return fmt.Errorf("failed to update the node port range: %w", storage.ErrConflict)
}

// decodePorts reads the stored bitmap; one kept for another range is
// carried over port by port.
func (a *serviceAllocator) decodePorts(value []byte) (*big.Int, error) {
	var ra corev1.RangeAllocation
	if err := json.Unmarshal(value, &ra); err != nil {
		return nil, fmt.Errorf("failed to decode the node port range: %w", err)
	}
	bits := new(big.Int).SetBytes(ra.Data)
	if ra.Range == a.portRange() {
		return bits, nil
	}
	lo, _, _ := strings.Cut(ra.Range, "-")
	base, err := strconv.Atoi(lo)
	if err != nil {
		return nil, fmt.Errorf("failed to decode the node port range %q: %w", ra.Range, err)
	}
	moved := new(big.Int)
	for i := range bits.BitLen() {
		if p := base + i; bits.Bit(i) == 1 && p >= a.portMin && p <= a.portMax {
			moved.SetBit(moved, p-a.portMin, 1)
		}
	}
	return moved, nil
}

// held returns what svc holds: its cluster IP and its node ports.
func (a *serviceAllocator) held(svc *corev1.Service) (ips []string, ports []int) {
	if needsClusterIP(svc) && svc.Spec.ClusterIP != "" {
		ips = append(ips, svc.Spec.ClusterIP)
	}
	if needsNodePorts(svc) {
		for _, p := range svc.Spec.Ports {
			if p.NodePort != 0 && !slices.Contains(ports, int(p.NodePort)) {
				ports = append(ports, int(p.NodePort))
			}
		}
	}
	return ips, ports
}

// releaseService gives back what a deleted Service held.
func (a *serviceAllocator) releaseService(ctx context.Context, svc *corev1.Service) {
	ips, ports := a.held(svc)
	for _, ip := range ips {
		a.releaseIP(ctx, ip, svc)
	}
	a.releasePorts(ctx, ports)
}

// releaseReplaced gives back what old held and next, its update, does not.
func (a *serviceAllocator) releaseReplaced(ctx context.Context, old, next *corev1.Service) {
	oldIPs, oldPorts := a.held(old)
	nextIPs, nextPorts := a.held(next)
	for _, ip := range oldIPs {
		if !slices.Contains(nextIPs, ip) {
			a.releaseIP(ctx, ip, old)
		}
	}
	var gone []int
	for _, p := range oldPorts {
		if !slices.Contains(nextPorts, p) {
			gone = append(gone, p)
		}
	}
	a.releasePorts(ctx, gone)
}

// beginServiceWrite is the Service's BeginCreate and BeginUpdate: it claims
// what next needs (old nil on create) and returns the function that
// finishes the write: on success it gives back what old held and next does
// not, on failure what was claimed.
func (s *Server) beginServiceWrite(ctx context.Context, next, old runtime.Object) (func(ok bool), error) {
	svc, ok := next.(*corev1.Service)
	if !ok || s.services == nil {
		return func(bool) {}, nil
	}
	var prev *corev1.Service
	if old != nil {
		prev = old.(*corev1.Service)
	}
	al, err := s.services.allocate(ctx, svc, prev)
	if err != nil {
		return nil, err
	}
	return func(ok bool) {
		if !ok {
			al.release()
			return
		}
		if prev != nil {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			s.services.releaseReplaced(ctx, prev, svc)
		}
	}, nil
}

// afterServiceDelete is the Service's AfterDelete: what it held is free.
func (s *Server) afterServiceDelete(obj runtime.Object) {
	svc, ok := obj.(*corev1.Service)
	if !ok || s.services == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s.services.releaseService(ctx, svc)
}
