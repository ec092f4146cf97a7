package dns

import (
	"context"
	"fmt"
	"maps"
	"net/netip"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
)

const (
	// ServiceName is the DNS add-on's Service in kube-system, named as
	// kubeadm's CoreDNS manifest names it.
	ServiceName = "kube-dns"
	// ManagedBy is the endpointslice.kubernetes.io/managed-by value of the
	// EndpointSlice this package keeps, so the EndpointSlice controller
	// leaves it alone.
	ManagedBy = "dns.glassplane.io"
	// PortName and TCPPortName name the Service's and EndpointSlice's ports.
	PortName    = "dns"
	TCPPortName = "dns-tcp"
)

// serviceLabels are the labels of kubeadm's kube-dns Service.
func serviceLabels() map[string]string {
	return map[string]string{
		"k8s-app":                       "kube-dns",
		"kubernetes.io/cluster-service": "true",
		"kubernetes.io/name":            "CoreDNS",
	}
}

// applyService creates kube-system/kube-dns (without selector, at
// cfg.ServiceIP) and its EndpointSlice pointing at addr, or brings them
// back to that.
func (s *Server) applyService(ctx context.Context, addr netip.AddrPort) error {
	svc, err := s.applyKubeDNSService(ctx)
	if err != nil {
		return err
	}
	return s.applyEndpointSlice(ctx, svc, addr)
}

func (s *Server) applyKubeDNSService(ctx context.Context) (*corev1.Service, error) {
	want := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: ServiceName, Namespace: metav1.NamespaceSystem, Labels: serviceLabels()},
		Spec: corev1.ServiceSpec{
			Type:      corev1.ServiceTypeClusterIP,
			ClusterIP: s.cfg.ServiceIP.String(),
			Ports: []corev1.ServicePort{
				{Name: PortName, Protocol: corev1.ProtocolUDP, Port: 53, TargetPort: intstr.FromString(PortName)},
				{Name: TCPPortName, Protocol: corev1.ProtocolTCP, Port: 53, TargetPort: intstr.FromString(TCPPortName)},
			},
		},
	}
	services := s.client.CoreV1().Services(metav1.NamespaceSystem)
	// Get first: creating a Service that exists with its cluster IP is
	// refused for the IP (422, already allocated) before its name (409).
	// What it reads is what the update starts from; it reads again only
	// after a conflict.
	cur, err := services.Get(ctx, ServiceName, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		created, err := services.Create(ctx, want, metav1.CreateOptions{FieldManager: ManagedBy})
		if err == nil {
			return created, nil
		}
		if !apierrors.IsAlreadyExists(err) {
			return nil, fmt.Errorf("failed to create Service %s/%s: %w", metav1.NamespaceSystem, ServiceName, err)
		}
		cur = nil
	case err != nil:
		return nil, fmt.Errorf("failed to read Service %s/%s: %w", metav1.NamespaceSystem, ServiceName, err)
	}
	var svc *corev1.Service
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if cur == nil {
			var err error
			if cur, err = services.Get(ctx, ServiceName, metav1.GetOptions{}); err != nil {
				return err
			}
		}
		if cur.Spec.ClusterIP != want.Spec.ClusterIP {
			// The ClusterIP is immutable: the Service was made with
			// another range or by someone else; pods are told
			// cfg.ServiceIP, so say so loudly.
			s.log.Warn("the kube-dns Service has another cluster IP than pods are given; delete it to have it made again",
				"clusterIP", cur.Spec.ClusterIP, "want", want.Spec.ClusterIP)
		}
		upd := cur.DeepCopy()
		if upd.Labels == nil {
			upd.Labels = map[string]string{}
		}
		maps.Copy(upd.Labels, want.Labels)
		upd.Spec.Ports = want.Spec.Ports
		upd.Spec.Selector = nil
		if equality.Semantic.DeepEqual(cur, upd) {
			svc = cur
			return nil
		}
		var err error
		if svc, err = services.Update(ctx, upd, metav1.UpdateOptions{FieldManager: ManagedBy}); err != nil {
			cur = nil
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("failed to update Service %s/%s: %w", metav1.NamespaceSystem, ServiceName, err)
	}
	return svc, nil
}

func (s *Server) applyEndpointSlice(ctx context.Context, svc *corev1.Service, addr netip.AddrPort) error {
	want := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{
			Name:      ServiceName,
			Namespace: metav1.NamespaceSystem,
			Labels: map[string]string{
				discoveryv1.LabelServiceName: ServiceName,
				discoveryv1.LabelManagedBy:   ManagedBy,
			},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "v1", Kind: "Service", Name: svc.Name, UID: svc.UID,
				Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
			}},
		},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints: []discoveryv1.Endpoint{{
			Addresses: []string{addr.Addr().String()},
			Conditions: discoveryv1.EndpointConditions{
				Ready: ptr.To(true), Serving: ptr.To(true), Terminating: ptr.To(false),
			},
		}},
		Ports: []discoveryv1.EndpointPort{
			{Name: ptr.To(PortName), Protocol: ptr.To(corev1.ProtocolUDP), Port: ptr.To(int32(addr.Port()))},
			{Name: ptr.To(TCPPortName), Protocol: ptr.To(corev1.ProtocolTCP), Port: ptr.To(int32(addr.Port()))},
		},
	}
	slices := s.client.DiscoveryV1().EndpointSlices(metav1.NamespaceSystem)
	// Get first, as for the Service: a create every resync would be
	// refused (409) once a minute in the audit log and on the dashboard,
	// as the admin's request.
	cur, err := slices.Get(ctx, ServiceName, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		_, err := slices.Create(ctx, want, metav1.CreateOptions{FieldManager: ManagedBy})
		if err == nil {
			return nil
		}
		if !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("failed to create EndpointSlice %s/%s: %w", metav1.NamespaceSystem, ServiceName, err)
		}
		cur = nil
	case err != nil:
		return fmt.Errorf("failed to read EndpointSlice %s/%s: %w", metav1.NamespaceSystem, ServiceName, err)
	}
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if cur == nil {
			var err error
			if cur, err = slices.Get(ctx, ServiceName, metav1.GetOptions{}); err != nil {
				return err
			}
		}
		upd := cur.DeepCopy()
		if upd.Labels == nil {
			upd.Labels = map[string]string{}
		}
		maps.Copy(upd.Labels, want.Labels)
		upd.OwnerReferences = want.OwnerReferences
		upd.AddressType = want.AddressType
		upd.Endpoints = want.Endpoints
		upd.Ports = want.Ports
		if equality.Semantic.DeepEqual(cur, upd) {
			return nil
		}
		_, err := slices.Update(ctx, upd, metav1.UpdateOptions{FieldManager: ManagedBy})
		if err != nil {
			cur = nil
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("failed to update EndpointSlice %s/%s: %w", metav1.NamespaceSystem, ServiceName, err)
	}
	return nil
}
