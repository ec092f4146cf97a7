package apiserver

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	apiresource "k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/kubernetes/scheme"
	statsv1alpha1 "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
	metricsv1beta1 "k8s.io/metrics/pkg/apis/metrics/v1beta1"

	"github.com/glassplane/glassplane/controlplane/storage"
	"github.com/glassplane/glassplane/controlplane/usage"
)

// metrics.k8s.io/v1beta1 NodeMetrics and PodMetrics are answered here, as
// metrics-server answers them behind kube-apiserver's aggregation layer:
// each request reads the node agents' /stats/summary (the kubelet's
// Summary API), and CPU is the rate between that reading and an earlier
// one of the same node (at least metricsMinWindow and at most
// metricsMaxWindow older; without one the node is read twice,
// metricsMinWindow apart), reported with its timestamp and window.
// Memory is the working set. Simulated nodes run no processes: their
// containers report the usage of their pod's
// usage.AnnotationSimulatedUsage annotation, else the Node's (set by its
// agent from --simulated-usage), and the node the sum of its pods'.

const (
	metricsMinWindow = time.Second
	metricsMaxWindow = time.Minute
	// metricsSimulatedWindow is the window synthetic usage is reported
	// over: metrics-server's default resolution.
	metricsSimulatedWindow = 15 * time.Second
	// metricsScrapeTimeout bounds the reading of one node agent.
	metricsScrapeTimeout = 10 * time.Second
	// metricsScrapeParallelism is how many nodes are read at once.
	metricsScrapeParallelism = 16
)

// The metrics types join client-go's scheme, which the registry finds Go
// types in (for OpenAPI, tables and codecs).
func init() { utilruntime.Must(metricsv1beta1.AddToScheme(scheme.Scheme)) }

// metricsResources are the registry entries of metrics.k8s.io: read-only,
// never stored.
func metricsResources() []*resource {
	gv := metricsv1beta1.SchemeGroupVersion
	verbs := []string{"get", "list"}
	return []*resource{
		{GVK: gv.WithKind("NodeMetrics"), Resource: "nodes", Verbs: verbs, Serve: (*request).serveNodeMetrics},
		{GVK: gv.WithKind("PodMetrics"), Resource: "pods", Namespaced: true, Verbs: verbs, Serve: (*request).servePodMetrics},
	}
}

// metricsScraper keeps each node's recent summaries, the earlier readings
// CPU rates are computed from.
type metricsScraper struct {
	mu sync.Mutex
	// history holds each node's readings of the last metricsMaxWindow,
	// oldest first; guarded by mu.
	history map[string][]*nodeSample
}

// nodeSample is one reading of a node agent's summary.
type nodeSample struct {
	time time.Time
	node usage.Sample
	// memory is the node's working set.
	memory uint64
	// pods are the containers' readings by pod UID, then container name.
	pods map[string]map[string]containerSample
}

type containerSample struct {
	cpu    usage.Sample
	memory uint64
	start  time.Time
}

// nodeUsage is what a node and its pods used over one window.
type nodeUsage struct {
	timestamp time.Time
	window    time.Duration
	node      corev1.ResourceList
	// pods are the containers' usage by pod UID, in the order the node
	// reported them.
	pods map[string][]metricsv1beta1.ContainerMetrics
}

// validateMetricsRequest answers what metrics-server refuses: verbs other
// than get and list, and subresources.
func (q *request) validateMetricsRequest() error {
	if q.info.Subresource != "" {
		return errNoRoute()
	}
	if q.info.Verb != "get" && q.info.Verb != "list" {
		return apierrors.NewMethodNotSupported(q.res.GroupResource(), q.info.Verb)
	}
	return nil
}

// serveNodeMetrics serves GET nodes and nodes/<name> of metrics.k8s.io.
func (q *request) serveNodeMetrics() error {
	if err := q.validateMetricsRequest(); err != nil {
		return err
	}
	sel, err := q.selection()
	if err != nil {
		return err
	}
	nodes, err := q.s.metricsNodes(q.ctx, sel)
	if err != nil {
		return err
	}
	pods, err := q.s.metricsPods(q.ctx, "", nil)
	if err != nil {
		return err
	}
	usages := q.s.nodeUsages(q.ctx, nodes, pods)
	list := &metricsv1beta1.NodeMetricsList{TypeMeta: metav1.TypeMeta{Kind: "NodeMetricsList", APIVersion: metricsv1beta1.SchemeGroupVersion.String()}}
	for _, n := range nodes {
		u, ok := usages[n.Name]
		if !ok {
			continue
		}
		list.Items = append(list.Items, metricsv1beta1.NodeMetrics{
			ObjectMeta: metav1.ObjectMeta{Name: n.Name, Labels: n.Labels, CreationTimestamp: metav1.NewTime(time.Now())},
			Timestamp:  metav1.NewTime(u.timestamp), Window: metav1.Duration{Duration: u.window}, Usage: u.node,
		})
	}
	return q.respondMetrics(list, len(list.Items), func(i int) runtime.Object {
		item := list.Items[i]
		item.TypeMeta = metav1.TypeMeta{Kind: "NodeMetrics", APIVersion: metricsv1beta1.SchemeGroupVersion.String()}
		return &item
	})
}

// servePodMetrics serves GET pods and pods/<name> of metrics.k8s.io, in a
// namespace or in all.
func (q *request) servePodMetrics() error {
	if err := q.validateMetricsRequest(); err != nil {
		return err
	}
	sel, err := q.selection()
	if err != nil {
		return err
	}
	pods, err := q.s.metricsPods(q.ctx, q.info.Namespace, sel)
	if err != nil {
		return err
	}
	var names []string
	for _, p := range pods {
		if !slices.Contains(names, p.Spec.NodeName) {
			names = append(names, p.Spec.NodeName)
		}
	}
	nodes, err := q.s.metricsNodes(q.ctx, nil)
	if err != nil {
		return err
	}
	nodes = slices.DeleteFunc(nodes, func(n *corev1.Node) bool { return !slices.Contains(names, n.Name) })
	usages := q.s.nodeUsages(q.ctx, nodes, pods)
	list := &metricsv1beta1.PodMetricsList{TypeMeta: metav1.TypeMeta{Kind: "PodMetricsList", APIVersion: metricsv1beta1.SchemeGroupVersion.String()}}
	for _, p := range pods {
		u, ok := usages[p.Spec.NodeName]
		if !ok || len(u.pods[string(p.UID)]) == 0 {
			continue
		}
		list.Items = append(list.Items, metricsv1beta1.PodMetrics{
			ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace, Labels: p.Labels, CreationTimestamp: metav1.NewTime(time.Now())},
			Timestamp:  metav1.NewTime(u.timestamp), Window: metav1.Duration{Duration: u.window}, Containers: u.pods[string(p.UID)],
		})
	}
	return q.respondMetrics(list, len(list.Items), func(i int) runtime.Object {
		item := list.Items[i]
		item.TypeMeta = metav1.TypeMeta{Kind: "PodMetrics", APIVersion: metricsv1beta1.SchemeGroupVersion.String()}
		return &item
	})
}

// respondMetrics answers a list, or for a get its one item (404 in
// metrics-server's words when there is none), as a Table when asked
// (metrics-server's columns: name, CPU, memory, window).
func (q *request) respondMetrics(list runtime.Object, n int, item func(int) runtime.Object) error {
	if q.info.Name != "" && n == 0 {
		return apierrors.NewNotFound(q.res.GroupResource(), q.info.Name)
	}
	if q.info.Name != "" {
		n = 1
	}
	if wantsAs(q.r.Header.Get("Accept")) == asTable {
		table := &metav1.Table{TypeMeta: metav1.TypeMeta{Kind: "Table", APIVersion: "meta.k8s.io/v1"}, ColumnDefinitions: metricsColumns}
		for i := range n {
			obj := item(i)
			var cpu, mem apiresource.Quantity
			var window time.Duration
			switch m := obj.(type) {
			case *metricsv1beta1.NodeMetrics:
				cpu, mem, window = m.Usage[corev1.ResourceCPU], m.Usage[corev1.ResourceMemory], m.Window.Duration
			case *metricsv1beta1.PodMetrics:
				for _, c := range m.Containers {
					cpu.Add(c.Usage[corev1.ResourceCPU])
					mem.Add(c.Usage[corev1.ResourceMemory])
				}
				window = m.Window.Duration
			}
			m, err := meta.Accessor(obj)
			if err != nil {
				return apierrors.NewInternalError(err)
			}
			partial := meta.AsPartialObjectMetadata(m)
			partial.TypeMeta = metav1.TypeMeta{Kind: "PartialObjectMetadata", APIVersion: "meta.k8s.io/v1"}
			row := metav1.TableRow{Cells: []any{m.GetName(), fmt.Sprintf("%dm", cpu.MilliValue()), fmt.Sprintf("%dMi", mem.Value()>>20), window.String()}}
			row.Object.Object = partial
			table.Rows = append(table.Rows, row)
		}
		q.writeJSON(http.StatusOK, table)
		return nil
	}
	if q.info.Name == "" {
		q.respond(http.StatusOK, list)
		return nil
	}
	q.respond(http.StatusOK, item(0))
	return nil
}

var metricsColumns = []metav1.TableColumnDefinition{nameCol,
	col("CPU", "string", "CPU usage", 0),
	col("Memory", "string", "Memory usage", 0),
	col("Window", "string", "The window the CPU usage was measured over", 0),
}

// metricsNodes lists the nodes sel selects (all with nil).
func (s *Server) metricsNodes(ctx context.Context, sel *selection) ([]*corev1.Node, error) {
	res := s.byPath[corev1.SchemeGroupVersion.WithResource("nodes")]
	objs, err := s.listStored(ctx, res, "")
	if err != nil {
		return nil, err
	}
	var nodes []*corev1.Node
	for _, obj := range objs {
		if sel == nil || sel.matches(res, obj) {
			nodes = append(nodes, obj.(*corev1.Node))
		}
	}
	return nodes, nil
}

// metricsPods lists the running pods of namespace ("" for all) that sel
// selects (all with nil).
func (s *Server) metricsPods(ctx context.Context, namespace string, sel *selection) ([]*corev1.Pod, error) {
	objs, err := s.listStored(ctx, s.podsRes, namespace)
	if err != nil {
		return nil, err
	}
	var pods []*corev1.Pod
	for _, obj := range objs {
		p := obj.(*corev1.Pod)
		if p.Spec.NodeName == "" || p.Status.Phase != corev1.PodRunning || (sel != nil && !sel.matches(s.podsRes, obj)) {
			continue
		}
		pods = append(pods, p)
	}
	return pods, nil
}

// listStored reads every object of res in namespace from storage.
func (s *Server) listStored(ctx context.Context, res *resource, namespace string) ([]runtime.Object, error) {
	list, err := s.store.List(ctx, storage.Prefix(res.StorageResource, namespace), storage.ListOptions{})
	if err != nil {
		return nil, storageError(res, "", err)
	}
	out := make([]runtime.Object, 0, len(list.Items))
	for _, kv := range list.Items {
		obj, err := decodeStored(res, kv.Value, kv.ModRevision)
		if err != nil {
			s.log.Error("skipping undecodable object", "key", kv.Key, "err", err)
			continue
		}
		out = append(out, obj)
	}
	return out, nil
}

// nodeUsages reads each node's usage, a few nodes at a time; nodes that
// could not be read are left out (and logged), as metrics-server leaves
// them out.
func (s *Server) nodeUsages(ctx context.Context, nodes []*corev1.Node, pods []*corev1.Pod) map[string]*nodeUsage {
	byNode := map[string][]*corev1.Pod{}
	for _, p := range pods {
		byNode[p.Spec.NodeName] = append(byNode[p.Spec.NodeName], p)
	}
	out := make(map[string]*nodeUsage, len(nodes))
	var mu sync.Mutex
	var wg sync.WaitGroup
	sem := make(chan struct{}, metricsScrapeParallelism)
	for _, n := range nodes {
		if simulatedNode(n) {
			out[n.Name] = simulatedUsage(n, byNode[n.Name], time.Now())
			continue
		}
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			u, err := s.metrics.usage(ctx, s.cfg.KubeletClient, n)
			if err != nil {
				s.log.Debug("no metrics from node", "node", n.Name, "err", err)
				return
			}
			mu.Lock()
			out[n.Name] = u
			mu.Unlock()
		}()
	}
	wg.Wait()
	return out
}

// simulatedNode reports whether a node runs no real processes.
func simulatedNode(n *corev1.Node) bool {
	return n.Labels["node.glassplane.io/runtime"] == "simulated"
}

// simulatedUsage is the synthetic usage of a simulated node's running
// pods and, summed, of the node.
func simulatedUsage(n *corev1.Node, pods []*corev1.Pod, now time.Time) *nodeUsage {
	def, err := usage.ParseSimulated(n.Annotations[usage.AnnotationSimulatedUsage])
	if err != nil || n.Annotations[usage.AnnotationSimulatedUsage] == "" {
		def, _ = usage.ParseSimulated(usage.DefaultSimulatedUsage)
	}
	u := &nodeUsage{timestamp: now, window: metricsSimulatedWindow, pods: map[string][]metricsv1beta1.ContainerMetrics{}}
	var cpu, mem apiresource.Quantity
	for _, p := range pods {
		each := def
		if v, ok := p.Annotations[usage.AnnotationSimulatedUsage]; ok {
			if pu, err := usage.ParseSimulated(v); err == nil {
				each = pu
			}
		}
		for _, c := range p.Spec.Containers {
			u.pods[string(p.UID)] = append(u.pods[string(p.UID)], metricsv1beta1.ContainerMetrics{
				Name: c.Name, Usage: corev1.ResourceList{corev1.ResourceCPU: each.CPU.DeepCopy(), corev1.ResourceMemory: each.Memory.DeepCopy()},
			})
			cpu.Add(each.CPU)
			mem.Add(each.Memory)
		}
	}
	u.node = corev1.ResourceList{corev1.ResourceCPU: cpu, corev1.ResourceMemory: mem}
	return u
}

// usage reads a node agent's summary and makes rates against an earlier
// reading of the node.
func (m *metricsScraper) usage(ctx context.Context, client *KubeletClient, n *corev1.Node) (*nodeUsage, error) {
	cur, err := scrapeNode(ctx, client, n)
	if err != nil {
		return nil, err
	}
	prev := m.remember(n.Name, cur)
	if prev == nil || !prev.covers(cur) {
		select {
		case <-time.After(metricsMinWindow):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		prev = cur
		if cur, err = scrapeNode(ctx, client, n); err != nil {
			return nil, err
		}
		m.remember(n.Name, cur)
	}
	return ratesBetween(prev, cur), nil
}

// remember keeps cur in the node's history and returns the newest earlier
// reading at least metricsMinWindow older, or nil.
func (m *metricsScraper) remember(node string, cur *nodeSample) *nodeSample {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.history == nil {
		m.history = map[string][]*nodeSample{}
	}
	h := slices.DeleteFunc(m.history[node], func(s *nodeSample) bool { return cur.time.Sub(s.time) > metricsMaxWindow })
	var prev *nodeSample
	for _, s := range h {
		if cur.time.Sub(s.time) >= metricsMinWindow {
			prev = s
		}
	}
	// Readings closer together than the minimum window add nothing a
	// later rate would use.
	if len(h) == 0 || cur.time.Sub(h[len(h)-1].time) >= metricsMinWindow {
		h = append(h, cur)
	}
	m.history[node] = h
	return prev
}

// covers reports whether s has a reading of every container cur has (a
// container started since has no rate against s).
func (s *nodeSample) covers(cur *nodeSample) bool {
	for uid, containers := range cur.pods {
		for name, c := range containers {
			if p, ok := s.pods[uid][name]; !ok || !p.start.Equal(c.start) {
				return false
			}
		}
	}
	return true
}

// ratesBetween is the usage between two readings of one node: CPU rates
// of the containers (and the node) present in both, memory of the later.
func ratesBetween(prev, cur *nodeSample) *nodeUsage {
	u := &nodeUsage{timestamp: cur.time, window: cur.time.Sub(prev.time), pods: map[string][]metricsv1beta1.ContainerMetrics{}}
	if cpu, _, ok := usage.CPURate(prev.node, cur.node); ok {
		u.node = corev1.ResourceList{corev1.ResourceCPU: cpu, corev1.ResourceMemory: *apiresource.NewQuantity(int64(cur.memory), apiresource.BinarySI)}
	}
	for uid, containers := range cur.pods {
		names := make([]string, 0, len(containers))
		for name := range containers {
			names = append(names, name)
		}
		slices.Sort(names)
		for _, name := range names {
			c := containers[name]
			p, ok := prev.pods[uid][name]
			if !ok || !p.start.Equal(c.start) {
				continue
			}
			cpu, _, ok := usage.CPURate(p.cpu, c.cpu)
			if !ok {
				continue
			}
			u.pods[uid] = append(u.pods[uid], metricsv1beta1.ContainerMetrics{Name: name, Usage: corev1.ResourceList{
				corev1.ResourceCPU: cpu, corev1.ResourceMemory: *apiresource.NewQuantity(int64(c.memory), apiresource.BinarySI),
			}})
		}
	}
	return u
}

// scrapeNode reads a node agent's /stats/summary.
func scrapeNode(ctx context.Context, client *KubeletClient, n *corev1.Node) (*nodeSample, error) {
	host, port := nodeAddress(n), n.Status.DaemonEndpoints.KubeletEndpoint.Port
	if client == nil || host == "" || port <= 0 {
		return nil, fmt.Errorf("node %s serves no stats", n.Name)
	}
	ctx, cancel := context.WithTimeout(ctx, metricsScrapeTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "https://"+net.JoinHostPort(host, strconv.Itoa(int(port)))+"/stats/summary", nil)
	if err != nil {
		return nil, err
	}
	hc := &http.Client{Transport: &http.Transport{TLSClientConfig: client.TLS.Clone()}}
	defer hc.CloseIdleConnections()
	resp, err := hc.Do(req)
	if err != nil {
		return nil, fmt.Errorf("failed to read the stats of node %s: %w", n.Name, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("failed to read the stats of node %s: %s", n.Name, resp.Status)
	}
	var summary statsv1alpha1.Summary
	if err := json.NewDecoder(resp.Body).Decode(&summary); err != nil {
		return nil, fmt.Errorf("failed to decode the stats of node %s: %w", n.Name, err)
	}
	return sampleOf(&summary, time.Now()), nil
}

// sampleOf keeps what rates need from a summary read at now. The reading
// is timed by the API server's clock when the answer arrived: the
// summary's own times are whole seconds (metav1.Time), too coarse for
// windows of a few seconds.
func sampleOf(summary *statsv1alpha1.Summary, now time.Time) *nodeSample {
	s := &nodeSample{time: now, pods: map[string]map[string]containerSample{}}
	if cpu := summary.Node.CPU; cpu != nil && cpu.UsageCoreNanoSeconds != nil {
		s.node = usage.Sample{Time: now, CPUNanoSeconds: *cpu.UsageCoreNanoSeconds}
	}
	if mem := summary.Node.Memory; mem != nil && mem.WorkingSetBytes != nil {
		s.memory = *mem.WorkingSetBytes
	}
	for _, p := range summary.Pods {
		for _, c := range p.Containers {
			if c.CPU == nil || c.CPU.UsageCoreNanoSeconds == nil || c.Memory == nil || c.Memory.WorkingSetBytes == nil {
				continue
			}
			if s.pods[p.PodRef.UID] == nil {
				s.pods[p.PodRef.UID] = map[string]containerSample{}
			}
			s.pods[p.PodRef.UID][c.Name] = containerSample{
				cpu:    usage.Sample{Time: now, CPUNanoSeconds: *c.CPU.UsageCoreNanoSeconds},
				memory: *c.Memory.WorkingSetBytes, start: c.StartTime.Time,
			}
		}
	}
	return s
}
