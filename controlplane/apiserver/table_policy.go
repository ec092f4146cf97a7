package apiserver

import (
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// kubectl's columns for ResourceQuotas, LimitRanges, the networking.k8s.io
// Ingress kinds and NetworkPolicies, and events.k8s.io Events (the core
// Event columns over the converted object), as kube-apiserver's printers
// give them.
var (
	resourceQuotaPrinter = printer{
		columns: []metav1.TableColumnDefinition{nameCol, ageCol,
			col("Request", "string", "Request represents a minimum amount of cpu/memory that a container may consume.", 0),
			col("Limit", "string", "Limits control the maximum amount of cpu/memory that a container may use independent of contention on the node.", 0),
		},
		cells: resourceQuotaCells,
	}
	limitRangePrinter = printer{
		columns: []metav1.TableColumnDefinition{nameCol,
			col("Created At", "date", "CreationTimestamp is a timestamp representing the server time when this object was created.", 0),
		},
		cells: func(obj runtime.Object) []any {
			lr := obj.(*corev1.LimitRange)
			return []any{lr.Name, lr.CreationTimestamp.UTC().Format(time.RFC3339)}
		},
	}
	ingressPrinter = printer{
		columns: []metav1.TableColumnDefinition{nameCol,
			col("Class", "string", "The name of the IngressClass resource that should be used for this Ingress", 0),
			col("Hosts", "string", "Hosts that incoming requests are matched against before the ingress rule", 0),
			col("Address", "string", "Address is a list containing ingress points for the load-balancer", 0),
			col("Ports", "string", "Ports of TLS configurations that open", 0),
			ageCol,
		},
		cells: ingressCells,
	}
	ingressClassPrinter = printer{
		columns: []metav1.TableColumnDefinition{nameCol,
			col("Controller", "string", "Controller that is responsible for handling this class", 0),
			col("Parameters", "string", "A reference to a resource with additional parameters", 0),
			ageCol,
		},
		cells: func(obj runtime.Object) []any {
			c := obj.(*networkingv1.IngressClass)
			parameters := "<none>"
			if p := c.Spec.Parameters; p != nil {
				parameters = p.Kind
				if p.APIGroup != nil {
					parameters += "." + *p.APIGroup
				}
				parameters += "/" + p.Name
			}
			return []any{c.Name, c.Spec.Controller, parameters, age(c.CreationTimestamp)}
		},
	}
	networkPolicyPrinter = printer{
		columns: []metav1.TableColumnDefinition{nameCol,
			col("Pod-Selector", "string", "Selects the pods to which this NetworkPolicy object applies.", 0),
			ageCol,
		},
		cells: func(obj runtime.Object) []any {
			np := obj.(*networkingv1.NetworkPolicy)
			return []any{np.Name, metav1.FormatLabelSelector(&np.Spec.PodSelector), age(np.CreationTimestamp)}
		},
	}
	eventsV1Printer = printer{
		columns: printers["events"].columns,
		cells: func(obj runtime.Object) []any {
			return eventCells(eventToCore(obj.(*eventsv1.Event)))
		},
	}
)

// policyPrinters are the printers above by the group resource they serve.
var policyPrinters = map[string]printer{
	"resourcequotas":                    resourceQuotaPrinter,
	"limitranges":                       limitRangePrinter,
	"ingresses.networking.k8s.io":       ingressPrinter,
	"ingressclasses.networking.k8s.io":  ingressClassPrinter,
	"networkpolicies.networking.k8s.io": networkPolicyPrinter,
	"events.events.k8s.io":              eventsV1Printer,
}

// resourceQuotaCells lists used/hard of each resource, the limits.* ones
// under Limit and the rest under Request, as printResourceQuota.
func resourceQuotaCells(obj runtime.Object) []any {
	q := obj.(*corev1.ResourceQuota)
	names := make([]string, 0, len(q.Status.Hard))
	for name := range q.Status.Hard {
		names = append(names, string(name))
	}
	sort.Strings(names)
	var requests, limits []string
	for _, name := range names {
		used, hard := q.Status.Used[corev1.ResourceName(name)], q.Status.Hard[corev1.ResourceName(name)]
		text := fmt.Sprintf("%s: %s/%s", name, used.String(), hard.String())
		if strings.HasPrefix(name, "limits") {
			limits = append(limits, text)
		} else {
			requests = append(requests, text)
		}
	}
	return []any{q.Name, age(q.CreationTimestamp), strings.Join(requests, ", "), strings.Join(limits, ", ")}
}

// ingressCells is printIngress: at most four hosts, the load balancer's
// addresses, and 443 beside 80 when the Ingress has TLS.
func ingressCells(obj runtime.Object) []any {
	ing := obj.(*networkingv1.Ingress)
	class := "<none>"
	if ing.Spec.IngressClassName != nil {
		class = *ing.Spec.IngressClassName
	}
	var hosts []string
	for _, r := range ing.Spec.Rules {
		if r.Host != "" {
			hosts = append(hosts, r.Host)
		}
	}
	hostText := "*"
	if len(hosts) > 0 {
		shown := hosts
		if len(shown) > 4 {
			shown = shown[:4]
		}
		hostText = strings.Join(shown, ",")
		if more := len(hosts) - len(shown); more > 0 {
			hostText += fmt.Sprintf(" + %d more...", more)
		}
	}
	var addresses []string
	for _, lb := range ing.Status.LoadBalancer.Ingress {
		if lb.IP != "" {
			addresses = append(addresses, lb.IP)
		} else if lb.Hostname != "" {
			addresses = append(addresses, lb.Hostname)
		}
	}
	ports := "80"
	if len(ing.Spec.TLS) != 0 {
		ports = "80, 443"
	}
	return []any{ing.Name, class, hostText, strings.Join(addresses, ","), ports, age(ing.CreationTimestamp)}
}
