package apiserver

import (
	"fmt"
	"sort"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/duration"
)

// printer renders a resource's rows as kube-apiserver's table convertors do.
type printer struct {
	columns []metav1.TableColumnDefinition
	cells   func(obj runtime.Object) []any
}

func col(name, typ, desc string, priority int32) metav1.TableColumnDefinition {
	c := metav1.TableColumnDefinition{Name: name, Type: typ, Description: desc, Priority: priority}
	if name == "Name" {
		c.Format = "name"
	}
	return c
}

var nameCol = col("Name", "string", "Name must be unique within a namespace.", 0)
var ageCol = col("Age", "string", "CreationTimestamp is a timestamp representing the server time when this object was created.", 0)

// printers holds the columns of each resource with Kubernetes' own table.
var printers = map[string]printer{
	"pods": {
		columns: []metav1.TableColumnDefinition{nameCol,
			col("Ready", "string", "The aggregate readiness state of this pod for accepting traffic.", 0),
			col("Status", "string", "The aggregate status of the containers in this pod.", 0),
			col("Restarts", "string", "The number of times the containers in this pod have been restarted and when the last container in this pod has restarted.", 0),
			ageCol,
			col("IP", "string", "IP address allocated to the pod. Routable at least within the cluster. Empty if not yet allocated.", 1),
			col("Node", "string", "NodeName is a request to schedule this pod onto a specific node.", 1),
			col("Nominated Node", "string", "nominatedNodeName is set only when this pod preempts other pods on the node.", 1),
			col("Readiness Gates", "string", "If specified, all readiness gates will be evaluated for pod readiness.", 1),
		},
		cells: podCells,
	},
	"nodes": {
		columns: []metav1.TableColumnDefinition{nameCol,
			col("Status", "string", "The status of the node", 0),
			col("Roles", "string", "The roles of the node", 0),
			ageCol,
			col("Version", "string", "Kubelet Version reported by the node.", 0),
			col("Internal-IP", "string", "List of addresses reachable to the node.", 1),
			col("External-IP", "string", "List of addresses reachable to the node.", 1),
			col("OS-Image", "string", "OS Image reported by the node from /etc/os-release (e.g. Debian GNU/Linux 7 (wheezy)).", 1),
			col("Kernel-Version", "string", "Kernel Version reported by the node from 'uname -r' (e.g. 3.16.0-0.bpo.4-amd64).", 1),
			col("Container-Runtime", "string", "ContainerRuntime Version reported by the node through runtime remote API (e.g. containerd://1.4.2).", 1),
		},
		cells: nodeCells,
	},
	"namespaces": {
		columns: []metav1.TableColumnDefinition{nameCol, col("Status", "string", "The status of the namespace", 0), ageCol},
		cells: func(obj runtime.Object) []any {
			ns := obj.(*corev1.Namespace)
			return []any{ns.Name, string(ns.Status.Phase), age(ns.CreationTimestamp)}
		},
	},
	"deployments": {
		columns: []metav1.TableColumnDefinition{nameCol,
			col("Ready", "string", "Number of the pod with ready state", 0),
			col("Up-to-date", "string", "Total number of non-terminated pods targeted by this deployment that have the desired template spec.", 0),
			col("Available", "string", "Total number of available pods (ready for at least minReadySeconds) targeted by this deployment.", 0),
			ageCol,
			col("Containers", "string", "Names of each container in the template.", 1),
			col("Images", "string", "Images referenced by each container in the template.", 1),
			col("Selector", "string", "Label selector for pods. Existing ReplicaSets whose pods are selected by this will be the ones affected by this deployment.", 1),
		},
		cells: func(obj runtime.Object) []any {
			d := obj.(*appsv1.Deployment)
			names, images := containerSummary(d.Spec.Template.Spec.Containers)
			return []any{d.Name, fmt.Sprintf("%d/%d", d.Status.ReadyReplicas, replicas(d.Spec.Replicas)), int64(d.Status.UpdatedReplicas), int64(d.Status.AvailableReplicas), age(d.CreationTimestamp), names, images, selectorString(d.Spec.Selector)}
		},
	},
	"replicasets": {
		columns: []metav1.TableColumnDefinition{nameCol,
			col("Desired", "integer", "Replicas is the number of desired replicas.", 0),
			col("Current", "integer", "Replicas is the most recently observed number of replicas.", 0),
			col("Ready", "integer", "The number of ready replicas for this replica set.", 0),
			ageCol,
			col("Containers", "string", "Names of each container in the template.", 1),
			col("Images", "string", "Images referenced by each container in the template.", 1),
			col("Selector", "string", "Selector is a label query over pods that should match the replica count.", 1),
		},
		cells: func(obj runtime.Object) []any {
			rs := obj.(*appsv1.ReplicaSet)
			names, images := containerSummary(rs.Spec.Template.Spec.Containers)
			return []any{rs.Name, int64(replicas(rs.Spec.Replicas)), int64(rs.Status.Replicas), int64(rs.Status.ReadyReplicas), age(rs.CreationTimestamp), names, images, selectorString(rs.Spec.Selector)}
		},
	},
	"services": {
		columns: []metav1.TableColumnDefinition{nameCol,
			col("Type", "string", "type determines how the Service is exposed.", 0),
			col("Cluster-IP", "string", "clusterIP is the IP address of the service and is usually assigned randomly.", 0),
			col("External-IP", "string", "externalIPs is a list of IP addresses for which nodes in the cluster will also accept traffic for this service.", 0),
			col("Port(s)", "string", "The list of ports that are exposed by this service.", 0),
			ageCol,
			col("Selector", "string", "Route service traffic to pods with label keys and values matching this selector.", 1),
		},
		cells: serviceCells,
	},
	"endpoints": {
		columns: []metav1.TableColumnDefinition{nameCol, col("Endpoints", "string", "Endpoints is the list of endpoints.", 0), ageCol},
		cells:   endpointsCells,
	},
	"configmaps": {
		columns: []metav1.TableColumnDefinition{nameCol, col("Data", "string", "Data contains the configuration data.", 0), ageCol},
		cells: func(obj runtime.Object) []any {
			cm := obj.(*corev1.ConfigMap)
			return []any{cm.Name, int64(len(cm.Data) + len(cm.BinaryData)), age(cm.CreationTimestamp)}
		},
	},
	"secrets": {
		columns: []metav1.TableColumnDefinition{nameCol, col("Type", "string", "The type of the secret", 0), col("Data", "string", "The number of entries in the secret", 0), ageCol},
		cells: func(obj runtime.Object) []any {
			s := obj.(*corev1.Secret)
			return []any{s.Name, string(s.Type), int64(len(s.Data)), age(s.CreationTimestamp)}
		},
	},
	"serviceaccounts": {
		columns: []metav1.TableColumnDefinition{nameCol, col("Secrets", "string", "Secrets is the list of secrets allowed to be used by pods running using this ServiceAccount", 0), ageCol},
		cells: func(obj runtime.Object) []any {
			sa := obj.(*corev1.ServiceAccount)
			return []any{sa.Name, int64(len(sa.Secrets)), age(sa.CreationTimestamp)}
		},
	},
	"leases": {
		columns: []metav1.TableColumnDefinition{nameCol, col("Holder", "string", "The holder of the lease", 0), ageCol},
		cells: func(obj runtime.Object) []any {
			l := obj.(*coordinationv1.Lease)
			holder := "<none>"
			if l.Spec.HolderIdentity != nil {
				holder = *l.Spec.HolderIdentity
			}
			return []any{l.Name, holder, age(l.CreationTimestamp)}
		},
	},
	"events": {
		columns: []metav1.TableColumnDefinition{
			col("Last Seen", "string", "The last time an event was observed.", 0),
			col("Type", "string", "Type of this event (Normal, Warning), new types could be added in the future.", 0),
			col("Reason", "string", "This should be a short, machine understandable string that gives the reason for the transition into the object's current status.", 0),
			col("Object", "string", "The object that this event is about.", 0),
			col("Subobject", "string", "The subobject that this event is about.", 1),
			col("Source", "string", "The component reporting this event.", 1),
			col("Message", "string", "A human-readable description of the status of this operation.", 0),
			col("First Seen", "string", "The first time an event was observed.", 1),
			col("Count", "string", "The number of times this event has occurred.", 1),
			col("Name", "string", "Name must be unique within a namespace.", 1),
		},
		cells: eventCells,
	},
	"jobs":                 jobPrinter,
	"daemonsets":           daemonSetPrinter,
	"statefulsets":         statefulSetPrinter,
	"controllerrevisions":  controllerRevisionPrinter,
	"poddisruptionbudgets": podDisruptionBudgetPrinter,
	"servicecidrs":         serviceCIDRPrinter,
	"ipaddresses":          ipAddressPrinter,

	"cronjobs":               cronJobPrinter,
	"replicationcontrollers": replicationControllerPrinter,
	"podtemplates":           podTemplatePrinter,

	"horizontalpodautoscalers": horizontalPodAutoscalerPrinter,

	"persistentvolumes":      persistentVolumePrinter,
	"persistentvolumeclaims": persistentVolumeClaimPrinter,
	"storageclasses":         storageClassPrinter,
	"csidrivers":             csiDriverPrinter,
	"csinodes":               csiNodePrinter,
	"volumeattachments":      volumeAttachmentPrinter,
	"apiservices":            apiServicePrinter,
}

var genericPrinter = printer{
	columns: []metav1.TableColumnDefinition{nameCol, ageCol},
	cells: func(obj runtime.Object) []any {
		m, _ := meta.Accessor(obj)
		return []any{m.GetName(), age(m.GetCreationTimestamp())}
	},
}

// toTable converts an object or a list to a meta.k8s.io/v1 Table.
func (q *request) toTable(obj runtime.Object) (*metav1.Table, error) {
	if q.res.Custom != nil {
		return q.customTable(obj)
	}
	p, ok := policyPrinters[q.res.GroupResource().String()]
	if !ok {
		p, ok = printers[q.res.Resource]
	}
	if !ok {
		p = genericPrinter
	}
	include := q.r.URL.Query().Get("includeObject")
	if include == "" {
		include = string(metav1.IncludeMetadata)
	}
	table := &metav1.Table{TypeMeta: metav1.TypeMeta{Kind: "Table", APIVersion: "meta.k8s.io/v1"}}
	if q.info.Verb != "watch" || !q.tableColumnsSent {
		table.ColumnDefinitions = p.columns
		q.tableColumnsSent = true
	}
	var items []runtime.Object
	if meta.IsListType(obj) {
		var err error
		if items, err = meta.ExtractList(obj); err != nil {
			return nil, apierrors.NewInternalError(err)
		}
		if lm, err := meta.ListAccessor(obj); err == nil {
			table.ResourceVersion, table.Continue, table.RemainingItemCount = lm.GetResourceVersion(), lm.GetContinue(), lm.GetRemainingItemCount()
		}
	} else {
		items = []runtime.Object{obj}
		if m, err := meta.Accessor(obj); err == nil {
			table.ResourceVersion = m.GetResourceVersion()
		}
	}
	table.Rows = make([]metav1.TableRow, 0, len(items))
	for _, it := range items {
		row := metav1.TableRow{Cells: p.cells(it)}
		switch include {
		case string(metav1.IncludeObject):
			it.GetObjectKind().SetGroupVersionKind(q.res.GVK)
			row.Object.Object = it
		case string(metav1.IncludeMetadata):
			m, err := meta.Accessor(it)
			if err != nil {
				return nil, apierrors.NewInternalError(err)
			}
			pom := meta.AsPartialObjectMetadata(m)
			pom.TypeMeta = metav1.TypeMeta{Kind: "PartialObjectMetadata", APIVersion: "meta.k8s.io/v1"}
			row.Object.Object = pom
		}
		table.Rows = append(table.Rows, row)
	}
	return table, nil
}

// age renders a creation timestamp as kubectl does.
func age(t metav1.Time) string {
	if t.IsZero() {
		return "<unknown>"
	}
	return duration.HumanDuration(time.Since(t.Time))
}

func replicas(r *int32) int32 {
	if r == nil {
		return 1
	}
	return *r
}

func selectorString(sel *metav1.LabelSelector) string {
	s, err := metav1.LabelSelectorAsSelector(sel)
	if err != nil || s.Empty() {
		return "<none>"
	}
	return s.String()
}

func containerSummary(containers []corev1.Container) (string, string) {
	var names, images []string
	for _, c := range containers {
		names = append(names, c.Name)
		images = append(images, c.Image)
	}
	return strings.Join(names, ","), strings.Join(images, ",")
}

func orNone(s string) string {
	if s == "" {
		return "<none>"
	}
	return s
}

// podCells follows kubectl's printPod.
func podCells(obj runtime.Object) []any {
	pod := obj.(*corev1.Pod)
	restarts := 0
	var lastRestart time.Time
	total := len(pod.Spec.Containers)
	ready := 0
	reason := string(pod.Status.Phase)
	if pod.Status.Reason != "" {
		reason = pod.Status.Reason
	}
	// Sidecars (init containers with restartPolicy Always) count among
	// the pod's containers once started, as kubectl shows them.
	sidecars := map[string]bool{}
	for _, c := range pod.Spec.InitContainers {
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			sidecars[c.Name] = true
			total++
		}
	}
	initializing := false
	for i, c := range pod.Status.InitContainerStatuses {
		restarts += int(c.RestartCount)
		if c.LastTerminationState.Terminated != nil && c.LastTerminationState.Terminated.FinishedAt.After(lastRestart) {
			lastRestart = c.LastTerminationState.Terminated.FinishedAt.Time
		}
		switch {
		case c.State.Terminated != nil && c.State.Terminated.ExitCode == 0:
			continue
		case sidecars[c.Name] && c.Started != nil && *c.Started:
			if c.Ready {
				ready++
			}
			continue
		case c.State.Terminated != nil:
			if c.State.Terminated.Reason == "" {
				if c.State.Terminated.Signal != 0 {
					reason = fmt.Sprintf("Init:Signal:%d", c.State.Terminated.Signal)
				} else {
					reason = fmt.Sprintf("Init:ExitCode:%d", c.State.Terminated.ExitCode)
				}
			} else {
				reason = "Init:" + c.State.Terminated.Reason
			}
			initializing = true
		case c.State.Waiting != nil && c.State.Waiting.Reason != "" && c.State.Waiting.Reason != "PodInitializing":
			reason = "Init:" + c.State.Waiting.Reason
			initializing = true
		default:
			reason = fmt.Sprintf("Init:%d/%d", i, len(pod.Spec.InitContainers))
			initializing = true
		}
		break
	}
	if !initializing {
		restarts = 0
		hasRunning := false
		for i := len(pod.Status.ContainerStatuses) - 1; i >= 0; i-- {
			c := pod.Status.ContainerStatuses[i]
			restarts += int(c.RestartCount)
			if c.LastTerminationState.Terminated != nil && c.LastTerminationState.Terminated.FinishedAt.After(lastRestart) {
				lastRestart = c.LastTerminationState.Terminated.FinishedAt.Time
			}
			switch {
			case c.State.Waiting != nil && c.State.Waiting.Reason != "":
				reason = c.State.Waiting.Reason
			case c.State.Terminated != nil && c.State.Terminated.Reason != "":
				reason = c.State.Terminated.Reason
			case c.State.Terminated != nil && c.State.Terminated.Signal != 0:
				reason = fmt.Sprintf("Signal:%d", c.State.Terminated.Signal)
			case c.State.Terminated != nil:
				reason = fmt.Sprintf("ExitCode:%d", c.State.Terminated.ExitCode)
			case c.Ready && c.State.Running != nil:
				hasRunning = true
				ready++
			}
		}
		if reason == "Completed" && hasRunning {
			reason = "NotReady"
			for _, cond := range pod.Status.Conditions {
				if cond.Type == corev1.PodReady && cond.Status == corev1.ConditionTrue {
					reason = "Running"
				}
			}
		}
	}
	if pod.DeletionTimestamp != nil && pod.Status.Reason != "NodeLost" {
		reason = "Terminating"
	}
	restartsText := fmt.Sprint(restarts)
	if restarts != 0 && !lastRestart.IsZero() {
		restartsText = fmt.Sprintf("%d (%s ago)", restarts, duration.HumanDuration(time.Since(lastRestart)))
	}
	gates := "<none>"
	if n := len(pod.Spec.ReadinessGates); n > 0 {
		trueGates := 0
		for _, g := range pod.Spec.ReadinessGates {
			for _, c := range pod.Status.Conditions {
				if c.Type == g.ConditionType && c.Status == corev1.ConditionTrue {
					trueGates++
				}
			}
		}
		gates = fmt.Sprintf("%d/%d", trueGates, n)
	}
	return []any{pod.Name, fmt.Sprintf("%d/%d", ready, total), reason, restartsText, age(pod.CreationTimestamp),
		orNone(pod.Status.PodIP), orNone(pod.Spec.NodeName), orNone(pod.Status.NominatedNodeName), gates}
}

// nodeCells follows kubectl's printNode.
func nodeCells(obj runtime.Object) []any {
	n := obj.(*corev1.Node)
	var status []string
	ready := "Unknown"
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			if c.Status == corev1.ConditionTrue {
				ready = "Ready"
			} else {
				ready = "NotReady"
			}
		}
	}
	status = append(status, ready)
	if n.Spec.Unschedulable {
		status = append(status, "SchedulingDisabled")
	}
	var roles []string
	for k := range n.Labels {
		switch {
		case strings.HasPrefix(k, "node-role.kubernetes.io/"):
			if r := strings.TrimPrefix(k, "node-role.kubernetes.io/"); r != "" {
				roles = append(roles, r)
			}
		case k == "kubernetes.io/role":
			roles = append(roles, n.Labels[k])
		}
	}
	sort.Strings(roles)
	internal, external := "<none>", "<none>"
	for _, a := range n.Status.Addresses {
		if a.Type == corev1.NodeInternalIP && internal == "<none>" {
			internal = a.Address
		}
		if a.Type == corev1.NodeExternalIP && external == "<none>" {
			external = a.Address
		}
	}
	info := n.Status.NodeInfo
	return []any{n.Name, strings.Join(status, ","), orNone(strings.Join(roles, ",")), age(n.CreationTimestamp), info.KubeletVersion,
		internal, external, orNone(info.OSImage), orNone(info.KernelVersion), orNone(info.ContainerRuntimeVersion)}
}

func serviceCells(obj runtime.Object) []any {
	svc := obj.(*corev1.Service)
	typ := svc.Spec.Type
	if typ == "" {
		typ = corev1.ServiceTypeClusterIP
	}
	clusterIP := svc.Spec.ClusterIP
	if clusterIP == "" {
		clusterIP = "<none>"
	}
	external := "<none>"
	switch {
	case len(svc.Spec.ExternalIPs) > 0:
		external = strings.Join(svc.Spec.ExternalIPs, ",")
	case typ == corev1.ServiceTypeLoadBalancer:
		external = "<pending>"
		var ips []string
		for _, in := range svc.Status.LoadBalancer.Ingress {
			if in.IP != "" {
				ips = append(ips, in.IP)
			} else if in.Hostname != "" {
				ips = append(ips, in.Hostname)
			}
		}
		if len(ips) > 0 {
			external = strings.Join(ips, ",")
		}
	case typ == corev1.ServiceTypeExternalName:
		external = svc.Spec.ExternalName
	}
	var ports []string
	for _, p := range svc.Spec.Ports {
		proto := p.Protocol
		if proto == "" {
			proto = corev1.ProtocolTCP
		}
		if p.NodePort > 0 {
			ports = append(ports, fmt.Sprintf("%d:%d/%s", p.Port, p.NodePort, proto))
		} else {
			ports = append(ports, fmt.Sprintf("%d/%s", p.Port, proto))
		}
	}
	selector := "<none>"
	if len(svc.Spec.Selector) > 0 {
		var parts []string
		for k, v := range svc.Spec.Selector {
			parts = append(parts, k+"="+v)
		}
		sort.Strings(parts)
		selector = strings.Join(parts, ",")
	}
	return []any{svc.Name, string(typ), clusterIP, external, orNone(strings.Join(ports, ",")), age(svc.CreationTimestamp), selector}
}

func endpointsCells(obj runtime.Object) []any {
	ep := obj.(*corev1.Endpoints)
	var list []string
	count := 0
	for _, ss := range ep.Subsets {
		for _, addr := range ss.Addresses {
			for _, p := range ss.Ports {
				count++
				if len(list) < 3 {
					list = append(list, fmt.Sprintf("%s:%d", addr.IP, p.Port))
				}
			}
			if len(ss.Ports) == 0 {
				count++
				if len(list) < 3 {
					list = append(list, addr.IP)
				}
			}
		}
	}
	text := strings.Join(list, ",")
	if count > len(list) {
		text += fmt.Sprintf(" + %d more...", count-len(list))
	}
	return []any{ep.Name, orNone(text), age(ep.CreationTimestamp)}
}

func eventCells(obj runtime.Object) []any {
	e := obj.(*corev1.Event)
	first, last := e.FirstTimestamp.Time, e.LastTimestamp.Time
	if e.Series != nil {
		last = e.Series.LastObservedTime.Time
	}
	if last.IsZero() {
		last = e.EventTime.Time
	}
	if first.IsZero() {
		first = e.EventTime.Time
	}
	since := func(t time.Time) string {
		if t.IsZero() {
			return "<unknown>"
		}
		return duration.HumanDuration(time.Since(t))
	}
	object := strings.ToLower(e.InvolvedObject.Kind) + "/" + e.InvolvedObject.Name
	source := e.Source.Component
	if source == "" {
		source = e.ReportingController
	}
	if e.Source.Host != "" {
		source += ", " + e.Source.Host
	}
	count := e.Count
	if e.Series != nil {
		count = e.Series.Count
	}
	return []any{since(last), e.Type, e.Reason, object, e.InvolvedObject.FieldPath, source, strings.TrimSpace(e.Message), since(first), int64(count), e.Name}
}
