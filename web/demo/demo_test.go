package demo

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

// hangul matches a Korean syllable.
var hangul = regexp.MustCompile(`[\x{AC00}-\x{D7A3}]`)

// TestScriptsShape checks every demo is playable and bilingual: a unique
// name, a title and a narration per step in English and Korean, an action
// per step and a cleanup.
func TestScriptsShape(t *testing.T) {
	seen := map[string]bool{}
	for _, d := range All() {
		t.Run(d.Name, func(t *testing.T) {
			if d.Name == "" || seen[d.Name] {
				t.Fatalf("demo name %q is empty or repeated", d.Name)
			}
			seen[d.Name] = true
			if found, ok := Find(d.Name); !ok || found.Name != d.Name {
				t.Errorf("Find(%q) = %q, %v", d.Name, found.Name, ok)
			}
			checkText(t, "title", d.Title)
			if len(d.Steps) < 2 {
				t.Errorf("%d steps; a demo tells a story of at least two", len(d.Steps))
			}
			for i, s := range d.Steps {
				checkText(t, fmt.Sprintf("step %d", i+1), s.Say)
				if s.Do == nil {
					t.Errorf("step %d does nothing", i+1)
				}
			}
			if d.Cleanup == nil {
				t.Error("no cleanup")
			}
		})
	}
	for _, want := range []string{"pod-lifecycle", "deployment-rollout", "unschedulable", "toleration", "preemption", "crash-loop", "node-failure", "rbac-denied"} {
		if !seen[want] {
			t.Errorf("no demo %s", want)
		}
	}
}

func checkText(t *testing.T, what string, tx Text) {
	t.Helper()
	if tx.En == "" || hangul.MatchString(tx.En) {
		t.Errorf("%s: English text %q is empty or not English", what, tx.En)
	}
	if !hangul.MatchString(tx.Ko) {
		t.Errorf("%s: Korean text %q has no Korean", what, tx.Ko)
	}
	if tx.In("ko") != tx.Ko || tx.In("en") != tx.En {
		t.Errorf("%s: In picks the wrong language", what)
	}
}

// TestNewDemosNameTheirMechanisms checks the narration of the new demos
// uses Kubernetes' own words for what the reader will see.
func TestNewDemosNameTheirMechanisms(t *testing.T) {
	tests := []struct {
		demo string
		want []string
	}{
		{"preemption", []string{"PriorityClass", "DefaultPreemption", "Preempted", "nominatedNodeName"}},
		{"node-failure", []string{"kube-node-lease", "Kubelet stopped posting node status.", "node.kubernetes.io/unreachable", "TaintManagerEviction"}},
		{"crash-loop", []string{"exit 1", "restartCount", "CrashLoopBackOff", "Back-off restarting failed container"}},
	}
	for _, tt := range tests {
		t.Run(tt.demo, func(t *testing.T) {
			d, ok := Find(tt.demo)
			if !ok {
				t.Fatalf("no demo %s", tt.demo)
			}
			var en, ko strings.Builder
			for _, s := range d.Steps {
				en.WriteString(s.Say.En)
				ko.WriteString(s.Say.Ko)
			}
			for _, w := range tt.want {
				if !strings.Contains(en.String(), w) {
					t.Errorf("English narration lacks %q", w)
				}
				if !strings.Contains(ko.String(), w) {
					t.Errorf("Korean narration lacks %q", w)
				}
			}
		})
	}
}

// TestRunStopsAtTheFailingStepAndCleansUp plays a demo whose second step
// fails: the third never runs, the failure is reported on its line and in
// the error, and the cleanup runs.
func TestRunStopsAtTheFailingStepAndCleansUp(t *testing.T) {
	var ran []int
	cleaned := false
	step := func(n int, err error) Step {
		return Step{Say: Text{En: "step", Ko: "단계"}, Do: func(context.Context, *Env) (string, error) {
			ran = append(ran, n)
			return "done", err
		}}
	}
	d := Demo{Name: "t", Steps: []Step{step(1, nil), step(2, errors.New("boom")), step(3, nil)},
		Cleanup: func(context.Context, *Env) { cleaned = true }}
	var lines []Line
	err := Run(context.Background(), d, &Env{Client: fake.NewClientset()}, "ko", func(l Line) { lines = append(lines, l) })
	if err == nil || !strings.Contains(err.Error(), "step 2: boom") {
		t.Fatalf("Run error = %v, want step 2: boom", err)
	}
	if len(ran) != 2 || !cleaned {
		t.Errorf("ran steps %v, cleaned %v; want [1 2] and a cleanup", ran, cleaned)
	}
	if last := lines[len(lines)-1]; last.Step != 2 || last.Err != "boom" || last.Narration != "단계" {
		t.Errorf("last line = %+v", last)
	}
}

// TestPodCPURequest checks the preemption demo counts a pod's CPU as the
// scheduler does.
func TestPodCPURequest(t *testing.T) {
	cpu := func(s string) corev1.ResourceRequirements {
		return corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(s)}}
	}
	tests := []struct {
		name string
		spec corev1.PodSpec
		want string
	}{
		{"no requests", corev1.PodSpec{Containers: []corev1.Container{{Name: "a"}}}, "0"},
		{"containers add up", corev1.PodSpec{Containers: []corev1.Container{{Name: "a", Resources: cpu("250m")}, {Name: "b", Resources: cpu("500m")}}}, "750m"},
		{"a bigger init container wins", corev1.PodSpec{
			InitContainers: []corev1.Container{{Name: "i", Resources: cpu("2")}},
			Containers:     []corev1.Container{{Name: "a", Resources: cpu("500m")}},
		}, "2"},
		{"overhead is added", corev1.PodSpec{
			Containers: []corev1.Container{{Name: "a", Resources: cpu("500m")}},
			Overhead:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")},
		}, "600m"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := podCPURequest(&corev1.Pod{Spec: tt.spec})
			if want := resource.MustParse(tt.want); got.Cmp(want) != 0 {
				t.Errorf("podCPURequest = %s, want %s", got.String(), tt.want)
			}
		})
	}
}

// TestCleanupLeavesWhatAnotherRunMade runs the preemption and node-failure
// demos where their cluster-wide objects already exist (another
// presenter's run): the first step fails with AlreadyExists and the
// cleanup leaves those objects alone.
func TestCleanupLeavesWhatAnotherRunMade(t *testing.T) {
	client := fake.NewClientset(
		&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: FailingNode}},
		&schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: PriorityClassName}, Value: 1000},
	)
	for _, name := range []string{"node-failure", "preemption"} {
		t.Run(name, func(t *testing.T) {
			d, _ := Find(name)
			err := Run(context.Background(), d, &Env{Client: client}, "en", func(Line) {})
			if !apierrors.IsAlreadyExists(errors.Unwrap(err)) {
				t.Fatalf("Run = %v, want AlreadyExists at step 1", err)
			}
		})
	}
	ctx := context.Background()
	if _, err := client.CoreV1().Nodes().Get(ctx, FailingNode, metav1.GetOptions{}); err != nil {
		t.Errorf("the other run's node is gone: %v", err)
	}
	if _, err := client.SchedulingV1().PriorityClasses().Get(ctx, PriorityClassName, metav1.GetOptions{}); err != nil {
		t.Errorf("the other run's PriorityClass is gone: %v", err)
	}
}
