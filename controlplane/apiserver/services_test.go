package apiserver_test

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http/httptest"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/labstack/echo/v5"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/glassplane/glassplane/controlplane/apiserver"
	"github.com/glassplane/glassplane/controlplane/pki"
	"github.com/glassplane/glassplane/controlplane/storage"
)

var serviceRange = netip.MustParsePrefix(apiserver.DefaultServiceClusterIPRange)

func testService(name string, typ corev1.ServiceType, ports ...int32) *corev1.Service {
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       corev1.ServiceSpec{Type: typ, Selector: map[string]string{"app": name}},
	}
	for i, p := range ports {
		svc.Spec.Ports = append(svc.Spec.Ports, corev1.ServicePort{Name: fmt.Sprintf("p%d", i), Port: p})
	}
	return svc
}

// ipAddressOf returns the namespace/name of the Service the IPAddress
// object of ip names as its parent, and whether it exists.
func ipAddressOf(t *testing.T, client kubernetes.Interface, ip string) (string, bool) {
	t.Helper()
	addr, err := client.NetworkingV1().IPAddresses().Get(ctxT(t), ip, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return "", false
	}
	if err != nil {
		t.Fatalf("get ipaddress %s: %v", ip, err)
	}
	if addr.Labels["ipaddress.kubernetes.io/managed-by"] != "ipallocator.k8s.io" {
		t.Errorf("ipaddress %s labels = %v", ip, addr.Labels)
	}
	ref := addr.Spec.ParentRef
	if ref == nil || ref.Resource != "services" {
		t.Fatalf("ipaddress %s parentRef = %+v", ip, ref)
	}
	return ref.Namespace + "/" + ref.Name, true
}

func TestServiceAllocation(t *testing.T) {
	ns := shared.namespace(t)
	cases := []struct {
		name      string
		svc       *corev1.Service
		wantIP    bool
		wantPorts bool
	}{
		{name: "clusterip", svc: testService("clusterip", corev1.ServiceTypeClusterIP, 80), wantIP: true},
		{name: "default type", svc: testService("defaulttype", "", 80), wantIP: true},
		{name: "nodeport", svc: testService("nodeport", corev1.ServiceTypeNodePort, 80, 443), wantIP: true, wantPorts: true},
		{name: "loadbalancer", svc: testService("loadbalancer", corev1.ServiceTypeLoadBalancer, 80), wantIP: true, wantPorts: true},
		{name: "headless", svc: func() *corev1.Service {
			s := testService("headless", "", 80)
			s.Spec.ClusterIP = corev1.ClusterIPNone
			return s
		}()},
		{name: "externalname", svc: func() *corev1.Service {
			s := testService("externalname", corev1.ServiceTypeExternalName)
			s.Spec.ExternalName = "example.com"
			return s
		}()},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := shared.client.CoreV1().Services(ns).Create(ctxT(t), tc.svc, metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if tc.wantIP {
				ip, err := netip.ParseAddr(got.Spec.ClusterIP)
				if err != nil || !serviceRange.Contains(ip) {
					t.Fatalf("clusterIP = %q, want one in %s", got.Spec.ClusterIP, serviceRange)
				}
				if len(got.Spec.ClusterIPs) != 1 || got.Spec.ClusterIPs[0] != got.Spec.ClusterIP {
					t.Errorf("clusterIPs = %v", got.Spec.ClusterIPs)
				}
				if fmt.Sprint(got.Spec.IPFamilies) != "[IPv4]" || got.Spec.IPFamilyPolicy == nil || *got.Spec.IPFamilyPolicy != corev1.IPFamilyPolicySingleStack {
					t.Errorf("ipFamilies = %v, ipFamilyPolicy = %v", got.Spec.IPFamilies, got.Spec.IPFamilyPolicy)
				}
				if parent, ok := ipAddressOf(t, shared.client, got.Spec.ClusterIP); !ok || parent != ns+"/"+got.Name {
					t.Errorf("ipaddress %s: parent %q, exists %v", got.Spec.ClusterIP, parent, ok)
				}
			} else if got.Spec.ClusterIP != "" && got.Spec.ClusterIP != corev1.ClusterIPNone {
				t.Errorf("clusterIP = %q, want none", got.Spec.ClusterIP)
			}
			for _, p := range got.Spec.Ports {
				if tc.wantPorts && (p.NodePort < 30000 || p.NodePort > 32767) {
					t.Errorf("port %s: nodePort = %d, want one in 30000-32767", p.Name, p.NodePort)
				}
				if !tc.wantPorts && p.NodePort != 0 {
					t.Errorf("port %s: nodePort = %d, want none", p.Name, p.NodePort)
				}
			}
		})
	}
}

// createServicesConcurrently creates n NodePort Services at once and
// returns them.
func createServicesConcurrently(t *testing.T, client kubernetes.Interface, ns, prefix string, n int) []*corev1.Service {
	t.Helper()
	out := make([]*corev1.Service, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			out[i], errs[i] = client.CoreV1().Services(ns).Create(context.Background(), testService(fmt.Sprintf("%s-%d", prefix, i), corev1.ServiceTypeNodePort, 80), metav1.CreateOptions{})
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("create %s-%d: %v", prefix, i, err)
		}
	}
	return out
}

// checkUnique fails when two Services share a cluster IP or a node port.
func checkUnique(t *testing.T, svcs []*corev1.Service) {
	t.Helper()
	ips := map[string]string{}
	ports := map[int32]string{}
	for _, s := range svcs {
		if other, dup := ips[s.Spec.ClusterIP]; dup || s.Spec.ClusterIP == "" {
			t.Errorf("%s and %s share cluster IP %q", s.Name, other, s.Spec.ClusterIP)
		}
		ips[s.Spec.ClusterIP] = s.Name
		for _, p := range s.Spec.Ports {
			if other, dup := ports[p.NodePort]; dup || p.NodePort == 0 {
				t.Errorf("%s and %s share node port %d", s.Name, other, p.NodePort)
			}
			ports[p.NodePort] = s.Name
		}
	}
}

func TestServiceConcurrentCreatesNeverDuplicate(t *testing.T) {
	ns := shared.namespace(t)
	svcs := createServicesConcurrently(t, shared.client, ns, "svc", 50)
	all, err := shared.client.CoreV1().Services("").List(ctxT(t), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var others []*corev1.Service
	for i := range all.Items {
		if s := &all.Items[i]; s.Namespace != ns && s.Spec.ClusterIP != "" && s.Spec.ClusterIP != corev1.ClusterIPNone && s.Spec.Type == corev1.ServiceTypeNodePort {
			others = append(others, s)
		}
	}
	checkUnique(t, append(svcs, others...))
	for _, s := range svcs {
		if parent, ok := ipAddressOf(t, shared.client, s.Spec.ClusterIP); !ok || parent != ns+"/"+s.Name {
			t.Errorf("ipaddress %s: parent %q, exists %v", s.Spec.ClusterIP, parent, ok)
		}
	}
}

func TestServiceDeleteReleases(t *testing.T) {
	ns := shared.namespace(t)
	ctx := ctxT(t)
	svc := testService("first", corev1.ServiceTypeNodePort, 80)
	svc.Spec.ClusterIP = "10.96.0.40"
	svc.Spec.Ports[0].NodePort = 30040
	if _, err := shared.client.CoreV1().Services(ns).Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := shared.client.CoreV1().Services(ns).Delete(ctx, "first", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, ok := ipAddressOf(t, shared.client, "10.96.0.40"); ok {
		t.Fatal("ipaddress 10.96.0.40 outlived its Service")
	}
	again := svc.DeepCopy()
	again.Name = "second"
	got, err := shared.client.CoreV1().Services(ns).Create(ctx, again, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("the released IP and port were not free again: %v", err)
	}
	if got.Spec.ClusterIP != "10.96.0.40" || got.Spec.Ports[0].NodePort != 30040 {
		t.Fatalf("got %s and %d", got.Spec.ClusterIP, got.Spec.Ports[0].NodePort)
	}
}

func TestServiceUpdateKeepsAndReleases(t *testing.T) {
	ns := shared.namespace(t)
	ctx := ctxT(t)
	svcs := shared.client.CoreV1().Services(ns)
	created, err := svcs.Create(ctx, testService("web", corev1.ServiceTypeClusterIP, 80), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// A replace without the allocated values keeps them.
	replace := testService("web", corev1.ServiceTypeNodePort, 80)
	replace.ResourceVersion = created.ResourceVersion
	replace.Spec.Ports[0].NodePort = 30041
	updated, err := svcs.Update(ctx, replace, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if updated.Spec.ClusterIP != created.Spec.ClusterIP || updated.Spec.Ports[0].NodePort != 30041 {
		t.Fatalf("after update: clusterIP %s (was %s), nodePort %d", updated.Spec.ClusterIP, created.Spec.ClusterIP, updated.Spec.Ports[0].NodePort)
	}
	// Back to ClusterIP: the node port is free again.
	back := updated.DeepCopy()
	back.Spec.Type = corev1.ServiceTypeClusterIP
	back.Spec.Ports[0].NodePort = 0
	back.Spec.ExternalTrafficPolicy = ""
	if _, err := svcs.Update(ctx, back, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	other := testService("other", corev1.ServiceTypeNodePort, 80)
	other.Spec.Ports[0].NodePort = 30041
	if _, err := svcs.Create(ctx, other, metav1.CreateOptions{}); err != nil {
		t.Fatalf("node port 30041 was not released by the update: %v", err)
	}
}

func TestKubernetesService(t *testing.T) {
	ctx := ctxT(t)
	svc, err := shared.client.CoreV1().Services(metav1.NamespaceDefault).Get(ctx, "kubernetes", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if svc.Spec.ClusterIP != "10.96.0.1" || len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].Name != "https" || svc.Spec.Ports[0].Port != 443 {
		t.Fatalf("kubernetes service spec = %+v", svc.Spec)
	}
	if parent, ok := ipAddressOf(t, shared.client, "10.96.0.1"); !ok || parent != "default/kubernetes" {
		t.Errorf("ipaddress 10.96.0.1: parent %q, exists %v", parent, ok)
	}
	slice, err := shared.client.DiscoveryV1().EndpointSlices(metav1.NamespaceDefault).Get(ctx, "kubernetes", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if slice.Labels["kubernetes.io/service-name"] != "kubernetes" || len(slice.Endpoints) != 1 || slice.Endpoints[0].Addresses[0] != "127.0.0.1" ||
		len(slice.Ports) != 1 || *slice.Ports[0].Port != int32(svc.Spec.Ports[0].TargetPort.IntValue()) {
		t.Errorf("kubernetes endpointslice = %+v", slice)
	}
	cidr, err := shared.client.NetworkingV1().ServiceCIDRs().Get(ctx, "kubernetes", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(cidr.Spec.CIDRs) != "[10.96.0.0/16]" {
		t.Errorf("servicecidr cidrs = %v", cidr.Spec.CIDRs)
	}
	// servicecidrs/status reads the same object, as upstream's.
	status := struct {
		Kind     string
		Metadata metav1.ObjectMeta
	}{}
	raw, err := shared.client.NetworkingV1().RESTClient().Get().Resource("servicecidrs").Name("kubernetes").SubResource("status").DoRaw(ctx)
	if err != nil || json.Unmarshal(raw, &status) != nil || status.Kind != "ServiceCIDR" || status.Metadata.UID != cidr.UID {
		t.Errorf("servicecidrs/status: %v %s", err, raw)
	}
}

func TestServiceBadInput(t *testing.T) {
	ns := shared.namespace(t)
	ctx := ctxT(t)
	svcs := shared.client.CoreV1().Services(ns)
	taken := testService("taken", corev1.ServiceTypeNodePort, 80)
	taken.Spec.ClusterIP = "10.96.0.50"
	taken.Spec.Ports[0].NodePort = 30080
	takenSvc, err := svcs.Create(ctx, taken, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		svc  *corev1.Service
		// freeIP is an IP the failed request claimed first, which must be
		// free again.
		freeIP   string
		wantCode int32
		wantMsg  string
	}{
		{
			name: "ip taken", wantCode: 422,
			svc: func() *corev1.Service {
				s := testService("iptaken", "", 80)
				s.Spec.ClusterIP = "10.96.0.50"
				return s
			}(),
			wantMsg: `spec.clusterIPs: Invalid value: ["10.96.0.50"]: failed to allocate IP 10.96.0.50: provided IP is already allocated`,
		},
		{
			name: "ip out of range", wantCode: 422,
			svc: func() *corev1.Service {
				s := testService("iprange", "", 80)
				s.Spec.ClusterIP = "1.2.3.4"
				return s
			}(),
			wantMsg: `spec.clusterIPs: Invalid value: ["1.2.3.4"]: failed to allocate IP 1.2.3.4: the provided IP (1.2.3.4) is not in the valid range. The range of valid IPs is 10.96.0.0/16`,
		},
		{
			name: "node port taken", wantCode: 422, freeIP: "10.96.0.51",
			svc: func() *corev1.Service {
				s := testService("porttaken", corev1.ServiceTypeNodePort, 80, 81)
				s.Spec.ClusterIP = "10.96.0.51"
				s.Spec.Ports[1].NodePort = 30080
				return s
			}(),
			wantMsg: `spec.ports[1].nodePort: Invalid value: 30080: provided port is already allocated`,
		},
		{
			name: "node port out of range", wantCode: 422, freeIP: "10.96.0.52",
			svc: func() *corev1.Service {
				s := testService("portrange", corev1.ServiceTypeNodePort, 80)
				s.Spec.ClusterIP = "10.96.0.52"
				s.Spec.Ports[0].NodePort = 80
				return s
			}(),
			wantMsg: `spec.ports[0].nodePort: Invalid value: 80: provided port is not in the valid range. The range of valid ports is 30000-32767`,
		},
		{
			name: "name taken", wantCode: 409, freeIP: "10.96.0.53",
			svc: func() *corev1.Service {
				s := testService("taken", "", 80)
				s.Spec.ClusterIP = "10.96.0.53"
				return s
			}(),
			wantMsg: `services "taken" already exists`,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := svcs.Create(ctx, tc.svc, metav1.CreateOptions{})
			status, ok := err.(apierrors.APIStatus)
			if !ok {
				t.Fatalf("err = %v, want a Status", err)
			}
			if status.Status().Code != tc.wantCode || !strings.Contains(err.Error(), tc.wantMsg) {
				t.Fatalf("err = %d %v, want %d with %q", status.Status().Code, err, tc.wantCode, tc.wantMsg)
			}
			if tc.svc.Name != "taken" {
				if _, err := svcs.Get(ctx, tc.svc.Name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
					t.Errorf("service %s was stored: %v", tc.svc.Name, err)
				}
			}
			if tc.freeIP != "" {
				if _, ok := ipAddressOf(t, shared.client, tc.freeIP); ok {
					t.Errorf("ipaddress %s stayed claimed", tc.freeIP)
				}
			}
		})
	}
	t.Run("cluster ip immutable", func(t *testing.T) {
		change := takenSvc.DeepCopy()
		change.Spec.ClusterIP = "10.96.0.54"
		change.Spec.ClusterIPs = []string{"10.96.0.54"}
		_, err := svcs.Update(ctx, change, metav1.UpdateOptions{})
		if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec.clusterIPs[0]: Invalid value") || !strings.Contains(err.Error(), "may not change once set") {
			t.Fatalf("err = %v, want 422 may not change once set", err)
		}
		if _, ok := ipAddressOf(t, shared.client, "10.96.0.54"); ok {
			t.Error("ipaddress 10.96.0.54 was claimed")
		}
	})
	t.Run("no port left claimed", func(t *testing.T) {
		// The failed creates above claimed no node port: one asked for
		// by each of them is free.
		s := testService("portfree", corev1.ServiceTypeNodePort, 80)
		s.Spec.Ports[0].NodePort = 30081
		if _, err := svcs.Create(ctx, s, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	})
}

// startServerOn serves a second API server over the etcd of env, as a
// restarted kube-apiserver would be, and returns a client of it.
func startServerOn(t *testing.T, env *testEnv) kubernetes.Interface {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	store := storage.New(env.etcd.Client(), storage.Config{CompactionInterval: -1, Logger: log})
	done := make(chan struct{})
	go func() { defer close(done); store.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	<-store.Ready()
	srv, err := apiserver.New(apiserver.Config{Store: store, ClientCA: env.ca.Pool(), Logger: log, NoDynamicAdmission: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Bootstrap(ctx); err != nil {
		t.Fatal(err)
	}
	go srv.Run(ctx)
	e := echo.New()
	srv.Register(e)
	serving, err := env.ca.Serving()
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewUnstartedServer(e)
	ts.TLS = &tls.Config{Certificates: []tls.Certificate{serving}, ClientAuth: tls.VerifyClientCertIfGiven, ClientCAs: env.ca.Pool()}
	ts.StartTLS()
	t.Cleanup(ts.Close)
	cfg, err := env.ca.RESTConfig(ts.URL, pki.AdminUser, pki.AdminGroup)
	if err != nil {
		t.Fatal(err)
	}
	cfg.QPS, cfg.Burst = 1000, 1000
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return client
}

func TestServiceAllocationSurvivesRestart(t *testing.T) {
	env := newEnv(t)
	ns := env.namespace(t)
	ctx := ctxT(t)
	before := createServicesConcurrently(t, env.client, ns, "before", 10)
	restarted := startServerOn(t, env)
	again := testService("again", corev1.ServiceTypeNodePort, 80)
	again.Spec.ClusterIP = before[0].Spec.ClusterIP
	_, err := restarted.CoreV1().Services(ns).Create(ctx, again, metav1.CreateOptions{})
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "provided IP is already allocated") {
		t.Fatalf("a taken IP asked of the restarted server: %v", err)
	}
	again.Spec.ClusterIP = ""
	again.Spec.Ports[0].NodePort = before[0].Spec.Ports[0].NodePort
	_, err = restarted.CoreV1().Services(ns).Create(ctx, again, metav1.CreateOptions{})
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "provided port is already allocated") {
		t.Fatalf("a taken node port asked of the restarted server: %v", err)
	}
	after := createServicesConcurrently(t, restarted, ns, "after", 20)
	checkUnique(t, append(before, after...))
	if _, err := restarted.CoreV1().Services(metav1.NamespaceDefault).Get(ctx, "kubernetes", metav1.GetOptions{}); err != nil {
		t.Fatal(err)
	}
}

// TestServiceDryRun: a dry run shows the cluster IP and node port a create
// would get, refuses a taken one as the create would, and claims nothing,
// as kube-apiserver's dry-run allocators.
func TestServiceDryRun(t *testing.T) {
	ns := shared.namespace(t)
	ctx := ctxT(t)
	svcs := shared.client.CoreV1().Services(ns)
	dry := metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}
	got, err := svcs.Create(ctx, testService("dry", corev1.ServiceTypeNodePort, 80), dry)
	if err != nil {
		t.Fatal(err)
	}
	ip, perr := netip.ParseAddr(got.Spec.ClusterIP)
	if perr != nil || !serviceRange.Contains(ip) || got.Spec.Ports[0].NodePort < 30000 {
		t.Fatalf("dry run got clusterIP %q nodePort %d; want ones from the ranges", got.Spec.ClusterIP, got.Spec.Ports[0].NodePort)
	}
	if owner, ok := ipAddressOf(t, shared.client, got.Spec.ClusterIP); ok {
		t.Fatalf("the dry run claimed %s (for %s)", got.Spec.ClusterIP, owner)
	}
	// The node port is free: a real create can ask for it.
	real := testService("real", corev1.ServiceTypeNodePort, 80)
	real.Spec.ClusterIP = "10.96.0.60"
	real.Spec.Ports[0].NodePort = got.Spec.Ports[0].NodePort
	if _, err := svcs.Create(ctx, real, metav1.CreateOptions{}); err != nil {
		t.Fatalf("the dry run's node port %d was kept: %v", got.Spec.Ports[0].NodePort, err)
	}
	// A dry run asking for what is taken is refused as the create is.
	clash := testService("clash", "", 80)
	clash.Spec.ClusterIP = "10.96.0.60"
	_, err = svcs.Create(ctx, clash, dry)
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "provided IP is already allocated") {
		t.Fatalf("dry run with a taken IP: %v", err)
	}
	// Nor does a dry-run update that adds node ports claim one, or
	// release the Service's IP.
	cur, err := svcs.Get(ctx, "real", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cur.Spec.Ports = append(cur.Spec.Ports, corev1.ServicePort{Name: "extra", Port: 81})
	upd, err := svcs.Update(ctx, cur, metav1.UpdateOptions{DryRun: []string{metav1.DryRunAll}})
	if err != nil {
		t.Fatal(err)
	}
	extra := upd.Spec.Ports[1].NodePort
	if extra == 0 {
		t.Fatal("the dry-run update showed no node port for the new port")
	}
	probe := testService("probe", corev1.ServiceTypeNodePort, 80)
	probe.Spec.Ports[0].NodePort = extra
	if _, err := svcs.Create(ctx, probe, metav1.CreateOptions{}); err != nil {
		t.Fatalf("the dry-run update kept node port %d: %v", extra, err)
	}
	if owner, ok := ipAddressOf(t, shared.client, "10.96.0.60"); !ok || owner != ns+"/real" {
		t.Fatalf("after the dry-run update 10.96.0.60 belongs to %q (%v)", owner, ok)
	}
}

// TestServiceRepair: the repair gives a Service's address back its
// IPAddress, deletes an IPAddress whose Service is gone once it is older
// than the grace, marks a used node port the bitmap lost, and frees a
// marked port no Service uses only on the third pass that finds it so.
func TestServiceRepair(t *testing.T) {
	env := newEnv(t)
	ns := env.namespace(t)
	ctx := ctxT(t)
	svcs := env.client.CoreV1().Services(ns)
	svc := testService("kept", corev1.ServiceTypeNodePort, 80)
	svc.Spec.ClusterIP = "10.96.0.70"
	svc.Spec.Ports[0].NodePort = 30070
	if _, err := svcs.Create(ctx, svc, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := apiserver.SetClusterIPClaim(env.server, "10.96.0.70", "", ""); err != nil {
		t.Fatal(err)
	}
	if err := apiserver.SetClusterIPClaim(env.server, "10.96.0.71", ns, "gone"); err != nil {
		t.Fatal(err)
	}
	if err := apiserver.SetNodePortBit(env.server, 30070, false); err != nil {
		t.Fatal(err)
	}
	if err := apiserver.SetNodePortBit(env.server, 30071, true); err != nil {
		t.Fatal(err)
	}

	// Within the grace the orphan stays; the missing ones are repaired.
	got, err := apiserver.RepairServices(env.server, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(got.IPsClaimed, "10.96.0.70") || len(got.IPsReleased) != 0 || !slices.Contains(got.PortsMarked, 30070) || len(got.PortsReleased) != 0 {
		t.Fatalf("first repair: %+v", got)
	}
	// The orphan's grace ends within a minute: the next pass is due then,
	// not a whole interval later.
	if due := time.Until(got.OrphanDue); due <= 0 || due > time.Minute {
		t.Fatalf("first repair: the orphan is due in %v, want within a minute", due)
	}
	if owner, ok := ipAddressOf(t, env.client, "10.96.0.70"); !ok || owner != ns+"/kept" {
		t.Fatalf("10.96.0.70 belongs to %q (%v) after the repair", owner, ok)
	}
	clash := testService("clash", corev1.ServiceTypeNodePort, 80)
	clash.Spec.Ports[0].NodePort = 30070
	if _, err := svcs.Create(ctx, clash, metav1.CreateOptions{}); !apierrors.IsInvalid(err) {
		t.Fatalf("node port 30070 was not marked again: %v", err)
	}

	later := time.Now().Add(2 * time.Minute)
	if got, err = apiserver.RepairServices(env.server, later); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got.IPsReleased, []string{"10.96.0.71"}) || len(got.PortsReleased) != 0 {
		t.Fatalf("second repair: %+v", got)
	}
	if _, ok := ipAddressOf(t, env.client, "10.96.0.71"); ok {
		t.Fatal("the orphan IPAddress 10.96.0.71 is still there")
	}
	leaked := testService("leaked", corev1.ServiceTypeNodePort, 80)
	leaked.Spec.Ports[0].NodePort = 30071
	if _, err := svcs.Create(ctx, leaked, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}); !apierrors.IsInvalid(err) {
		t.Fatalf("node port 30071 was freed before its third repair: %v", err)
	}
	if got, err = apiserver.RepairServices(env.server, later); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got.PortsReleased, []int{30071}) {
		t.Fatalf("third repair: %+v", got)
	}
	if _, err := svcs.Create(ctx, leaked, metav1.CreateOptions{}); err != nil {
		t.Fatalf("node port 30071 is not free after its third repair: %v", err)
	}
	// Now all is right: a pass changes nothing.
	if got, err = apiserver.RepairServices(env.server, later); err != nil {
		t.Fatal(err)
	}
	if len(got.IPsClaimed)+len(got.IPsReleased)+len(got.PortsMarked)+len(got.PortsReleased) != 0 || !got.OrphanDue.IsZero() {
		t.Fatalf("a repair of a right state did %+v", got)
	}
}

// TestEndpointSliceGeneration: an EndpointSlice starts at generation 1 and
// grows with its endpoints, ports or labels, not with annotations, as
// upstream's strategy has it (the EndpointSlice controller's tracker reads
// it to tell a stale cache).
func TestEndpointSliceGeneration(t *testing.T) {
	ns := shared.namespace(t)
	ctx := ctxT(t)
	slices := shared.client.DiscoveryV1().EndpointSlices(ns)
	ready := true
	s, err := slices.Create(ctx, &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Name: "web-1", Labels: map[string]string{"kubernetes.io/service-name": "web"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{"10.88.0.5"}, Conditions: discoveryv1.EndpointConditions{Ready: &ready}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if s.Generation != 1 {
		t.Fatalf("created at generation %d", s.Generation)
	}
	s.Annotations = map[string]string{"note": "x"}
	if s, err = slices.Update(ctx, s, metav1.UpdateOptions{}); err != nil || s.Generation != 1 {
		t.Fatalf("annotation update: generation %d, %v", s.Generation, err)
	}
	s.Endpoints = append(s.Endpoints, discoveryv1.Endpoint{Addresses: []string{"10.88.0.6"}})
	if s, err = slices.Update(ctx, s, metav1.UpdateOptions{}); err != nil || s.Generation != 2 {
		t.Fatalf("endpoints update: generation %d, %v", s.Generation, err)
	}
	s.Labels["extra"] = "y"
	if s, err = slices.Update(ctx, s, metav1.UpdateOptions{}); err != nil || s.Generation != 3 {
		t.Fatalf("labels update: generation %d, %v", s.Generation, err)
	}
}

// TestNodePortStaticBand: ports picked for a Service come from above the
// lower band of the range (size/32, 16 to 128 ports), which is kept for
// ports asked for by number, as kube-apiserver's allocator does.
func TestNodePortStaticBand(t *testing.T) {
	ns := shared.namespace(t)
	for _, svc := range createServicesConcurrently(t, shared.client, ns, "band", 20) {
		for _, p := range svc.Spec.Ports {
			if p.NodePort < 30000+86 {
				t.Errorf("service %s got node port %d, inside the static band 30000-30085", svc.Name, p.NodePort)
			}
		}
	}
}

// TestServiceTypeChangeDropsItsFields: NodePort → ExternalName succeeds
// with the cluster IPs, families, node ports and externalTrafficPolicy the
// user left as they were dropped (and freed), as upstream's strategy does.
func TestServiceTypeChangeDropsItsFields(t *testing.T) {
	env := shared
	ns := env.namespace(t)
	ctx := ctxT(t)
	svcs := env.client.CoreV1().Services(ns)
	svc, err := svcs.Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "np"},
		Spec:       corev1.ServiceSpec{Type: corev1.ServiceTypeNodePort, Selector: map[string]string{"app": "x"}, Ports: []corev1.ServicePort{{Port: 80}}},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if svc.Spec.ClusterIP == "" || svc.Spec.Ports[0].NodePort == 0 {
		t.Fatalf("created = %+v", svc.Spec)
	}
	svc.Spec.Type = corev1.ServiceTypeExternalName
	svc.Spec.ExternalName = "example.com"
	svc.Spec.Selector = nil
	got, err := svcs.Update(ctx, svc, metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("NodePort → ExternalName: %v", err)
	}
	if got.Spec.ClusterIP != "" || len(got.Spec.ClusterIPs) != 0 || len(got.Spec.IPFamilies) != 0 || got.Spec.IPFamilyPolicy != nil ||
		got.Spec.Ports[0].NodePort != 0 || got.Spec.ExternalTrafficPolicy != "" {
		t.Errorf("after the change: %+v", got.Spec)
	}
	got.Spec.Type = corev1.ServiceTypeClusterIP
	got.Spec.ExternalName = ""
	back, err := svcs.Update(ctx, got, metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("ExternalName → ClusterIP: %v", err)
	}
	if back.Spec.ClusterIP == "" {
		t.Errorf("no cluster IP after ExternalName → ClusterIP: %+v", back.Spec)
	}
}

// TestIPAddressesAreWritable: users may create, patch and delete
// IPAddresses as upstream allows, with upstream's validation.
func TestIPAddressesAreWritable(t *testing.T) {
	ctx := ctxT(t)
	ips := shared.client.NetworkingV1().IPAddresses()
	ref := &networkingv1.ParentReference{Group: "mygroup", Resource: "myresources", Namespace: "foo", Name: "bar"}
	for _, name := range []string{"255.255.255.255", "fe80::42:1dff:fe84:f9e2"} {
		if _, err := ips.Create(ctx, &networkingv1.IPAddress{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: networkingv1.IPAddressSpec{ParentRef: ref}}, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create %s: %v", name, err)
		}
		t.Cleanup(func() { ips.Delete(ctxT(t), name, metav1.DeleteOptions{}) })
	}
	for name, want := range map[string]string{
		"not-an-ip": `metadata.name: Invalid value: "not-an-ip": must be a valid IP address`,
		"fe80:0::1": `must be in canonical form ("fe80::1")`,
	} {
		_, err := ips.Create(ctx, &networkingv1.IPAddress{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: networkingv1.IPAddressSpec{ParentRef: ref}}, metav1.CreateOptions{})
		if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), want) {
			t.Errorf("create %s: %v, want %q", name, err, want)
		}
	}
	_, err := ips.Create(ctx, &networkingv1.IPAddress{ObjectMeta: metav1.ObjectMeta{Name: "10.250.0.1"}}, metav1.CreateOptions{})
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec.parentRef: Required value") {
		t.Errorf("no parentRef: %v", err)
	}
	if _, err := ips.Patch(ctx, "255.255.255.255", types.MergePatchType, []byte(`{"spec":{"parentRef":{"name":"other"}}}`), metav1.PatchOptions{}); !apierrors.IsInvalid(err) {
		t.Errorf("changing parentRef: %v", err)
	}
}

func TestKubernetesServiceIP(t *testing.T) {
	for _, tc := range []struct{ cidr, want, wantErr string }{
		{"", "10.96.0.1", ""},
		{"10.100.8.0/22", "10.100.8.1", ""},
		{"10.0.0.7/24", "10.0.0.1", ""},
		{"fd00::/108", "", "want an IPv4 CIDR"},
		{"10.0.0.0", "", "invalid service cluster IP range"},
	} {
		ip, err := apiserver.KubernetesServiceIP(tc.cidr)
		if tc.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("KubernetesServiceIP(%q) = %v, %v; want an error saying %q", tc.cidr, ip, err, tc.wantErr)
			}
			continue
		}
		if err != nil || ip.String() != tc.want {
			t.Errorf("KubernetesServiceIP(%q) = %v, %v; want %s", tc.cidr, ip, err, tc.want)
		}
	}
}
