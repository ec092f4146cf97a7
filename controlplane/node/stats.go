package node

import (
	"context"
	"encoding/json"
	"net/http"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	statsv1alpha1 "k8s.io/kubelet/pkg/apis/stats/v1alpha1"

	"github.com/glassplane/glassplane/controlplane/node/runtime"
)

// statsRuntime is what serving resource stats needs from a runtime: one
// container's CPU and memory, read from its cgroup.
type statsRuntime interface {
	ContainerStats(ctx context.Context, id string) (runtime.ContainerStats, error)
}

// serveStatsSummary answers GET /stats/summary in the kubelet's Summary API
// shape (stats/v1alpha1), with what metrics-server reads from it: the
// node's and each running container's cumulative CPU time and memory
// working set. The API server's metrics.k8s.io computes rates from two
// of these.
func (a *Agent) serveStatsSummary(w http.ResponseWriter, r *http.Request) {
	summary, err := a.statsSummary(r.Context())
	if err != nil {
		writeAPIError(w, err)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(summary)
}

// statsSummary reads the node's and its running containers' usage.
func (a *Agent) statsSummary(ctx context.Context) (*statsv1alpha1.Summary, error) {
	rt, ok := a.cfg.Runtime.(statsRuntime)
	if !ok {
		return nil, apierrors.NewNotFound(corev1.Resource("nodes/proxy"), "stats/summary")
	}
	nodeStats, err := runtime.ReadNodeStats("/proc")
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	cpu, mem := statsOf(nodeStats)
	summary := &statsv1alpha1.Summary{Node: statsv1alpha1.NodeStats{NodeName: a.cfg.NodeName, CPU: cpu, Memory: mem}}
	containers, err := a.cfg.Runtime.ListContainers(ctx, "")
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	pods := map[string]int{}
	for _, c := range containers {
		if c.State != runtime.StateRunning {
			continue
		}
		st, err := rt.ContainerStats(ctx, c.ID)
		if err != nil {
			a.log.Debug("no stats for container", "container", c.ID, "err", err)
			continue
		}
		i, ok := pods[c.PodUID]
		if !ok {
			i = len(summary.Pods)
			pods[c.PodUID] = i
			summary.Pods = append(summary.Pods, statsv1alpha1.PodStats{
				PodRef: statsv1alpha1.PodReference{Name: c.PodName, Namespace: c.PodNamespace, UID: c.PodUID},
			})
		}
		cpu, mem := statsOf(st)
		summary.Pods[i].Containers = append(summary.Pods[i].Containers, statsv1alpha1.ContainerStats{
			Name: c.Name, StartTime: metav1.NewTime(c.StartedAt), CPU: cpu, Memory: mem,
		})
	}
	return summary, nil
}

func statsOf(st runtime.ContainerStats) (*statsv1alpha1.CPUStats, *statsv1alpha1.MemoryStats) {
	t := metav1.NewTime(st.Time)
	cpu, usage, ws := st.CPUNanoSeconds, st.MemoryUsage, st.MemoryWorkingSet
	return &statsv1alpha1.CPUStats{Time: t, UsageCoreNanoSeconds: &cpu},
		&statsv1alpha1.MemoryStats{Time: t, UsageBytes: &usage, WorkingSetBytes: &ws}
}
