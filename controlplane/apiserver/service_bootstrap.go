package apiserver

import (
	"context"
	"errors"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/glassplane/glassplane/controlplane/storage"
)

const (
	// KubernetesServiceName is the Service in default that fronts the API.
	KubernetesServiceName = "kubernetes"
	// DefaultAdvertisePort is the kubernetes Service's targetPort when
	// Config.AdvertisePort is unset.
	DefaultAdvertisePort = 6443
	// labelSkipMirror keeps the EndpointSlice mirroring controller off the
	// kubernetes Endpoints, as kube-apiserver's endpoint reconciler sets it.
	labelSkipMirror = "endpointslice.kubernetes.io/skip-mirror"
)

// bootstrapServices creates the default ServiceCIDR and the kubernetes
// Service (the range's first address, port 443 named https) when they are
// missing, and points the kubernetes Endpoints and EndpointSlice at the
// advertised address, as kube-apiserver's bootstrap controller and endpoint
// reconciler do.
func (s *Server) bootstrapServices(ctx context.Context) error {
	a := s.services
	cidr := &networkingv1.ServiceCIDR{
		ObjectMeta: metav1.ObjectMeta{Name: DefaultServiceCIDRName},
		Spec:       networkingv1.ServiceCIDRSpec{CIDRs: []string{a.cidr.String()}},
	}
	cidr.Status.Conditions = []metav1.Condition{{
		Type: networkingv1.ServiceCIDRConditionReady, Status: metav1.ConditionTrue,
		Message: "Kubernetes Service CIDR is ready", LastTransitionTime: metav1.Now(),
	}}
	if err := s.ensureObject(ctx, networkingv1.SchemeGroupVersion.WithResource("servicecidrs"), cidr, func(cur runtime.Object) bool {
		return slices.Equal(cur.(*networkingv1.ServiceCIDR).Spec.CIDRs, cidr.Spec.CIDRs)
	}); err != nil {
		return err
	}
	if err := s.bootstrapKubernetesService(ctx); err != nil {
		return err
	}
	if s.cfg.AdvertiseAddress == "" {
		return nil
	}
	return s.reconcileKubernetesEndpoints(ctx)
}

// advertisePort is the port the kubernetes Service targets.
func (s *Server) advertisePort() int32 {
	if s.cfg.AdvertisePort > 0 {
		return int32(s.cfg.AdvertisePort)
	}
	return DefaultAdvertisePort
}

// bootstrapKubernetesService creates default/kubernetes at the range's
// first address unless it exists.
func (s *Server) bootstrapKubernetesService(ctx context.Context) error {
	res := s.byPath[corev1.SchemeGroupVersion.WithResource("services")]
	if _, err := s.getFromStore(ctx, res, metav1.NamespaceDefault, KubernetesServiceName); !apierrors.IsNotFound(err) {
		return err
	}
	ip := s.services.addrAt(1).String()
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{
			Name: KubernetesServiceName, Namespace: metav1.NamespaceDefault,
			Labels: map[string]string{"component": "apiserver", "provider": "kubernetes"},
		},
		Spec: corev1.ServiceSpec{
			Type: corev1.ServiceTypeClusterIP, ClusterIP: ip, ClusterIPs: []string{ip},
			Ports: []corev1.ServicePort{{
				Name: "https", Protocol: corev1.ProtocolTCP, Port: 443, TargetPort: intstr.FromInt32(s.advertisePort()),
			}},
			SessionAffinity:       corev1.ServiceAffinityNone,
			IPFamilies:            []corev1.IPFamily{corev1.IPv4Protocol},
			IPFamilyPolicy:        ptr.To(corev1.IPFamilyPolicySingleStack),
			InternalTrafficPolicy: ptr.To(corev1.ServiceInternalTrafficPolicyCluster),
		},
	}
	prepareForCreate(res, svc)
	finish, err := s.beginServiceWrite(ctx, svc, nil)
	if apierrors.IsInvalid(err) {
		// The address is held by a kubernetes Service that is gone (its
		// delete stopped before its IPAddress went): take it back.
		s.services.releaseIP(ctx, ip, svc)
		finish, err = s.beginServiceWrite(ctx, svc, nil)
	}
	if err != nil {
		// Another Service holds the address: the API runs on without
		// its Service rather than not at all.
		s.log.Error("failed to create the kubernetes service", "clusterIP", ip, "err", err)
		return nil
	}
	_, err = s.createInStore(ctx, res, svc)
	finish(err == nil)
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("failed to create service default/kubernetes: %w", err)
	}
	if err == nil {
		s.log.Info("created the kubernetes service", "clusterIP", ip)
	}
	return nil
}

// reconcileKubernetesEndpoints writes the kubernetes Endpoints and
// EndpointSlice as kube-apiserver's endpoint reconciler does.
func (s *Server) reconcileKubernetesEndpoints(ctx context.Context) error {
	port := s.advertisePort()
	name, proto := "https", corev1.ProtocolTCP
	ready := true
	ep := &corev1.Endpoints{
		ObjectMeta: metav1.ObjectMeta{
			Name: KubernetesServiceName, Namespace: metav1.NamespaceDefault,
			Labels: map[string]string{labelSkipMirror: "true"},
		},
		Subsets: []corev1.EndpointSubset{{
			Addresses: []corev1.EndpointAddress{{IP: s.cfg.AdvertiseAddress}},
			Ports:     []corev1.EndpointPort{{Name: name, Port: port, Protocol: proto}},
		}},
	}
	slice := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{
			Name: KubernetesServiceName, Namespace: metav1.NamespaceDefault,
			Labels: map[string]string{discoveryv1.LabelServiceName: KubernetesServiceName},
		},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{s.cfg.AdvertiseAddress}, Conditions: discoveryv1.EndpointConditions{Ready: &ready}}},
		Ports:       []discoveryv1.EndpointPort{{Name: &name, Port: &port, Protocol: &proto}},
	}
	if err := s.ensureObject(ctx, corev1.SchemeGroupVersion.WithResource("endpoints"), ep, func(cur runtime.Object) bool {
		c := cur.(*corev1.Endpoints)
		return equality.Semantic.DeepEqual(c.Subsets, ep.Subsets) && c.Labels[labelSkipMirror] == "true"
	}); err != nil {
		return err
	}
	return s.ensureObject(ctx, discoveryv1.SchemeGroupVersion.WithResource("endpointslices"), slice, func(cur runtime.Object) bool {
		c := cur.(*discoveryv1.EndpointSlice)
		return equality.Semantic.DeepEqual(c.Endpoints, slice.Endpoints) && equality.Semantic.DeepEqual(c.Ports, slice.Ports) &&
			c.AddressType == slice.AddressType && c.Labels[discoveryv1.LabelServiceName] == KubernetesServiceName
	})
}

// ensureObject creates want, or replaces the stored object (keeping its
// uid and creation time) when same says it differs.
func (s *Server) ensureObject(ctx context.Context, gvr schema.GroupVersionResource, want runtime.Object, same func(cur runtime.Object) bool) error {
	res := s.byPath[gvr]
	m, err := meta.Accessor(want)
	if err != nil {
		return err
	}
	k := key(res, m.GetNamespace(), m.GetName())
	for range maxWriteAttempts {
		kv, err := s.store.Get(ctx, k)
		if errors.Is(err, storage.ErrNotFound) {
			obj := want.DeepCopyObject()
			prepareForCreate(res, obj)
			_, err = s.createInStore(ctx, res, obj)
			if apierrors.IsAlreadyExists(err) {
				continue
			}
			if err != nil {
				return fmt.Errorf("failed to create %s %s/%s: %w", res.Resource, m.GetNamespace(), m.GetName(), err)
			}
			return nil
		}
		if err != nil {
			return fmt.Errorf("failed to read %s %s/%s: %w", res.Resource, m.GetNamespace(), m.GetName(), err)
		}
		cur, err := decodeStored(res, kv.Value, kv.ModRevision)
		if err != nil {
			return err
		}
		if same(cur) {
			return nil
		}
		next := want.DeepCopyObject()
		preserveMetadata(cur, next)
		value, err := encodeForStorage(res, next)
		if err != nil {
			return err
		}
		_, err = s.store.Update(ctx, k, value, kv.ModRevision)
		if errors.Is(err, storage.ErrConflict) {
			continue
		}
		if err != nil {
			return fmt.Errorf("failed to update %s %s/%s: %w", res.Resource, m.GetNamespace(), m.GetName(), err)
		}
		return nil
	}
	return fmt.Errorf("failed to update %s %s/%s: %w", res.Resource, m.GetNamespace(), m.GetName(), storage.ErrConflict)
}
