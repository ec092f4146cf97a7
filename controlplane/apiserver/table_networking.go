package apiserver

import (
	"strings"

	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// serviceCIDRPrinter and ipAddressPrinter are kubectl's columns for the
// networking.k8s.io kinds, as kube-apiserver's printers give them.
var (
	serviceCIDRPrinter = printer{
		columns: []metav1.TableColumnDefinition{nameCol,
			col("CIDRs", "string", "CIDRs defines the IP blocks in CIDR notation (e.g. \"192.168.0.0/24\" or \"2001:db8::/64\") from which to assign service cluster IPs.", 0),
			ageCol,
		},
		cells: func(obj runtime.Object) []any {
			c := obj.(*networkingv1.ServiceCIDR)
			return []any{c.Name, strings.Join(c.Spec.CIDRs, ","), age(c.CreationTimestamp)}
		},
	}
	ipAddressPrinter = printer{
		columns: []metav1.TableColumnDefinition{nameCol,
			col("ParentRef", "string", "ParentRef references the resource that an IPAddress is attached to.", 0),
		},
		cells: func(obj runtime.Object) []any {
			a := obj.(*networkingv1.IPAddress)
			parent := "<none>"
			if ref := a.Spec.ParentRef; ref != nil {
				parent = strings.ToLower(schema.GroupResource{Group: ref.Group, Resource: ref.Resource}.String())
				if ref.Namespace != "" {
					parent += "/" + ref.Namespace
				}
				parent += "/" + ref.Name
			}
			return []any{a.Name, parent}
		},
	}
)
