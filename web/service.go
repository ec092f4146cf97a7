package web

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/glassplane/glassplane/components"
)

// ClusterDomain is the cluster DNS domain the Service page names records
// in (Kubernetes' default, which Glassplane's cluster DNS serves).
const ClusterDomain = "cluster.local"

// runtimeLabel is the label a node agent puts on its Node naming its
// runtime; realRuntime is the one with a data path.
const (
	runtimeLabel = "node.glassplane.io/runtime"
	realRuntime  = "containerd"
)

// proxyRulesPath is the node proxy's page of the rules it programmed for
// one Service, under the node's proxy subresource.
const proxyRulesPath = "glassplane/proxy-rules"

// rulesTimeout bounds the read of one node's rules.
const rulesTimeout = 5 * time.Second

// apiClient is a typed client acting as the request's user (clientFor);
// the unit tests give one of a fake API server.
type apiClient func(r *http.Request) (kubernetes.Interface, error)

// serviceView reads what a Service's page shows beside the stored object,
// through the API as the page's user, so RBAC decides each part: the
// Service, its EndpointSlices (label kubernetes.io/service-name), the pods
// and nodes they name, and the service proxy's rules on each real node
// (nodes/proxy). What the user may not read shows the API's message.
func (d *Dashboard) serviceView(ctx context.Context, r *http.Request, namespace, name string) *components.Service {
	client, err := d.api(r)
	if err != nil {
		return &components.Service{Error: fmt.Sprintf("failed to read service %q: %v", name, err)}
	}
	svc, err := client.CoreV1().Services(namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return &components.Service{Error: err.Error()}
	}
	vm := serviceSpec(svc)
	var endpoints []discoveryv1.Endpoint
	list, err := client.DiscoveryV1().EndpointSlices(namespace).List(ctx, metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=" + name})
	if err != nil {
		vm.SlicesError = err.Error()
	} else {
		sort.Slice(list.Items, func(i, j int) bool { return list.Items[i].Name < list.Items[j].Name })
		for i := range list.Items {
			vm.Slices = append(vm.Slices, sliceView(&list.Items[i]))
			endpoints = append(endpoints, list.Items[i].Endpoints...)
		}
	}
	vm.DNS = dnsNames(svc, endpoints)
	d.proxyRules(ctx, client, svc, vm)
	return vm
}

// serviceSpec is the Service's spec as the page shows it.
func serviceSpec(svc *corev1.Service) *components.Service {
	s := svc.Spec
	vm := &components.Service{
		Type: string(s.Type), ClusterIPs: s.ClusterIPs, Headless: s.ClusterIP == corev1.ClusterIPNone,
		ExternalName: s.ExternalName, SessionAffinity: string(s.SessionAffinity),
		ExternalTrafficPolicy: string(s.ExternalTrafficPolicy),
	}
	if len(vm.ClusterIPs) == 0 && s.ClusterIP != "" {
		vm.ClusterIPs = []string{s.ClusterIP}
	}
	if s.InternalTrafficPolicy != nil {
		vm.InternalTrafficPolicy = string(*s.InternalTrafficPolicy)
	}
	for _, p := range s.Ports {
		vm.Ports = append(vm.Ports, components.ServicePort{Name: p.Name, Protocol: string(p.Protocol), Port: p.Port, TargetPort: p.TargetPort.String(), NodePort: p.NodePort})
	}
	for _, k := range sortedKeys(s.Selector) {
		vm.Selector = append(vm.Selector, k+"="+s.Selector[k])
	}
	return vm
}

// sliceView is one EndpointSlice with its endpoints' pods and nodes.
func sliceView(sl *discoveryv1.EndpointSlice) components.EndpointSlice {
	v := components.EndpointSlice{Name: sl.Name, Href: objectHref("endpointslices", sl.Namespace, sl.Name), AddressType: string(sl.AddressType)}
	for _, p := range sl.Ports {
		port := ""
		if p.Port != nil {
			port = strconv.Itoa(int(*p.Port))
		}
		proto := string(corev1.ProtocolTCP)
		if p.Protocol != nil {
			proto = string(*p.Protocol)
		}
		s := port + "/" + proto
		if p.Name != nil && *p.Name != "" {
			s = *p.Name + ":" + s
		}
		v.Ports = append(v.Ports, s)
	}
	for _, e := range sl.Endpoints {
		ev := components.Endpoint{
			Addresses: e.Addresses, Ready: condition(e.Conditions.Ready), Serving: condition(e.Conditions.Serving),
			Terminating: condition(e.Conditions.Terminating),
		}
		if e.Hostname != nil {
			ev.Hostname = *e.Hostname
		}
		if e.NodeName != nil && *e.NodeName != "" {
			ev.Node, ev.NodeHref = *e.NodeName, objectHref("nodes", "", *e.NodeName)
		}
		if ref := e.TargetRef; ref != nil {
			ev.Pod = ref.Name
			if ref.Kind == "Pod" {
				ns := ref.Namespace
				if ns == "" {
					ns = sl.Namespace
				}
				ev.PodHref = objectHref("pods", ns, ref.Name)
			}
		}
		v.Endpoints = append(v.Endpoints, ev)
	}
	return v
}

// condition shows an endpoint condition: unset is "unknown" (for ready,
// Kubernetes reads it as ready).
func condition(b *bool) string {
	if b == nil {
		return "unknown"
	}
	return strconv.FormatBool(*b)
}

// dnsNames are the names cluster DNS answers for svc, per Kubernetes' DNS
// specification: the Service's A/AAAA name (its cluster IPs, or for a
// headless Service its ready endpoints' addresses) and its short forms,
// an SRV record per named port, and for a headless Service one name per
// endpoint with a hostname (a pod whose subdomain is the Service's name).
// An ExternalName Service is a CNAME.
func dnsNames(svc *corev1.Service, endpoints []discoveryv1.Endpoint) []components.DNSName {
	full := svc.Name + "." + svc.Namespace + ".svc." + ClusterDomain
	if svc.Spec.Type == corev1.ServiceTypeExternalName {
		return []components.DNSName{{Name: full, Type: "CNAME", Answer: svc.Spec.ExternalName}}
	}
	headless := svc.Spec.ClusterIP == corev1.ClusterIPNone
	var answers []string
	if headless {
		for _, e := range endpoints {
			if e.Conditions.Ready == nil || *e.Conditions.Ready {
				answers = append(answers, e.Addresses...)
			}
		}
		slices.Sort(answers)
		answers = slices.Compact(answers)
	} else {
		answers = svc.Spec.ClusterIPs
	}
	record := "A"
	if len(answers) > 0 && strings.Contains(answers[0], ":") {
		record = "AAAA"
	}
	answer := strings.Join(answers, ", ")
	names := []components.DNSName{
		{Name: full, Type: record, Answer: answer},
		{Name: svc.Name + "." + svc.Namespace, Type: record, Answer: answer, Note: "short form, from any namespace (search path)", NoteKey: "service.dns.namespace"},
		{Name: svc.Name, Type: record, Answer: answer, Note: "short form, from the same namespace (search path)", NoteKey: "service.dns.short"},
	}
	for _, p := range svc.Spec.Ports {
		if p.Name == "" {
			continue
		}
		srv := "_" + p.Name + "._" + strings.ToLower(string(p.Protocol)) + "." + full
		names = append(names, components.DNSName{Name: srv, Type: "SRV", Answer: strconv.Itoa(int(p.Port)) + " " + full})
	}
	if headless {
		seen := map[string]bool{}
		for _, e := range endpoints {
			if e.Hostname == nil || *e.Hostname == "" || seen[*e.Hostname] {
				continue
			}
			seen[*e.Hostname] = true
			names = append(names, components.DNSName{
				Name: *e.Hostname + "." + full, Type: record, Answer: strings.Join(e.Addresses, ", "),
				Note: "a pod with this hostname and subdomain " + svc.Name, NoteKey: "service.dns.pod",
			})
		}
	}
	return names
}

// proxyRules lists the nodes and, on each real one, reads the rules its
// service proxy programmed for svc (GET nodes/<node>/proxy/glassplane/
// proxy-rules), as text. Simulated nodes have no data path.
func (d *Dashboard) proxyRules(ctx context.Context, client kubernetes.Interface, svc *corev1.Service, vm *components.Service) {
	nodes, err := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
	if err != nil {
		vm.NodesError = err.Error()
		return
	}
	sort.Slice(nodes.Items, func(i, j int) bool { return nodes.Items[i].Name < nodes.Items[j].Name })
	for _, n := range nodes.Items {
		if n.Labels[runtimeLabel] != realRuntime {
			continue
		}
		vm.RealNodes = true
		nr := components.NodeRules{Node: n.Name, Href: objectHref("nodes", "", n.Name)}
		rctx, cancel := context.WithTimeout(ctx, rulesTimeout)
		body, err := client.CoreV1().RESTClient().Get().Resource("nodes").Name(n.Name).SubResource("proxy").Suffix(proxyRulesPath).
			Param("namespace", svc.Namespace).Param("name", svc.Name).DoRaw(rctx)
		cancel()
		if err != nil {
			nr.Error = err.Error()
		} else {
			nr.Rules = string(body)
		}
		vm.Rules = append(vm.Rules, nr)
	}
}
