package job

import (
	"fmt"
	"strconv"
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
)

// completionIndexEnv is the variable an Indexed job's containers read
// their index from.
const completionIndexEnv = "JOB_COMPLETION_INDEX"

// isIndexed reports whether the job's completionMode is Indexed: each
// pod runs one index in [0, completions), and the job completes when every
// index has succeeded once.
func isIndexed(job *batchv1.Job) bool {
	return job.Spec.CompletionMode != nil && *job.Spec.CompletionMode == batchv1.IndexedCompletion && job.Spec.Completions != nil
}

// podIndex returns the pod's completion index, or -1 when it has none or
// it is out of range.
func podIndex(job *batchv1.Job, p *v1.Pod) int {
	v, ok := p.Annotations[batchv1.JobCompletionIndexAnnotation]
	if !ok {
		return -1
	}
	ix, err := strconv.Atoi(v)
	if err != nil || ix < 0 || ix >= int(*job.Spec.Completions) {
		return -1
	}
	return ix
}

// parseIndexes reads status.completedIndexes ("1,3-5,7").
func parseIndexes(s string) sets.Set[int] {
	out := sets.New[int]()
	for _, part := range strings.Split(s, ",") {
		if part == "" {
			continue
		}
		lo, hi, isRange := strings.Cut(part, "-")
		a, err := strconv.Atoi(lo)
		if err != nil {
			continue
		}
		b := a
		if isRange {
			if b, err = strconv.Atoi(hi); err != nil {
				continue
			}
		}
		for i := a; i <= b; i++ {
			out.Insert(i)
		}
	}
	return out
}

// formatIndexes writes indexes as Kubernetes does: sorted, a run of three
// or more as "a-b", "a,b" for two.
func formatIndexes(set sets.Set[int]) string {
	ixs := sets.List(set)
	var parts []string
	for i := 0; i < len(ixs); {
		j := i
		for j+1 < len(ixs) && ixs[j+1] == ixs[j]+1 {
			j++
		}
		switch j - i {
		case 0:
			parts = append(parts, strconv.Itoa(ixs[i]))
		case 1:
			parts = append(parts, strconv.Itoa(ixs[i]), strconv.Itoa(ixs[j]))
		default:
			parts = append(parts, fmt.Sprintf("%d-%d", ixs[i], ixs[j]))
		}
		i = j + 1
	}
	return strings.Join(parts, ",")
}

// indexesToRun returns up to n indexes that have neither succeeded nor an
// active pod, lowest first.
func indexesToRun(job *batchv1.Job, completed sets.Set[int], active []*v1.Pod, n int) []int {
	running := sets.New[int]()
	for _, p := range active {
		if ix := podIndex(job, p); ix >= 0 {
			running.Insert(ix)
		}
	}
	var out []int
	for ix := 0; ix < int(*job.Spec.Completions) && len(out) < n; ix++ {
		if !completed.Has(ix) && !running.Has(ix) {
			out = append(out, ix)
		}
	}
	return out
}

// surplusIndexedPods returns the active pods an Indexed job must delete:
// those without a valid index, those whose index has succeeded, and all
// but one per index.
func surplusIndexedPods(job *batchv1.Job, completed sets.Set[int], active []*v1.Pod) (keep, surplus []*v1.Pod) {
	seen := sets.New[int]()
	for _, p := range active {
		ix := podIndex(job, p)
		if ix < 0 || completed.Has(ix) || seen.Has(ix) {
			surplus = append(surplus, p)
			continue
		}
		seen.Insert(ix)
		keep = append(keep, p)
	}
	return keep, surplus
}

// setIndex makes pod run index ix, as Kubernetes does: the index
// annotation and label, "<job>-<ix>-" names, hostname "<job>-<ix>", and
// JOB_COMPLETION_INDEX in every container from the annotation.
func setIndex(job *batchv1.Job, pod *v1.Pod, ix int) {
	v := strconv.Itoa(ix)
	if pod.Annotations == nil {
		pod.Annotations = map[string]string{}
	}
	pod.Annotations[batchv1.JobCompletionIndexAnnotation] = v
	if pod.Labels == nil {
		pod.Labels = map[string]string{}
	}
	pod.Labels[batchv1.JobCompletionIndexAnnotation] = v
	pod.GenerateName = fmt.Sprintf("%s-%d-", job.Name, ix)
	if pod.Spec.Hostname == "" {
		pod.Spec.Hostname = fmt.Sprintf("%s-%d", job.Name, ix)
	}
	env := v1.EnvVar{Name: completionIndexEnv, ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{
		APIVersion: "v1", FieldPath: fmt.Sprintf("metadata.annotations['%s']", batchv1.JobCompletionIndexAnnotation),
	}}}
	for _, list := range [][]v1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range list {
			has := false
			for _, e := range list[i].Env {
				has = has || e.Name == completionIndexEnv
			}
			if !has {
				list[i].Env = append(list[i].Env, env)
			}
		}
	}
}
