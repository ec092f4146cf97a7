package scheduler

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	"sigs.k8s.io/yaml"

	"github.com/glassplane/glassplane/controlplane/scheduler/explain"
	"github.com/glassplane/glassplane/controlplane/scheduler/framework"
)

// agreementCase is one fixture of testdata/agreement: a cluster, a pod, and
// what kube-scheduler's documented algorithm does with it.
type agreementCase struct {
	// Why explains the expected result from kube-scheduler's rules.
	Why   string          `json:"why"`
	Nodes []agreementNode `json:"nodes"`
	Pods  []agreementPod  `json:"existingPods"`
	Pod   agreementPod    `json:"pod"`
	// PDBs are the cluster's PodDisruptionBudgets, which preemption weighs.
	PDBs []policyv1.PodDisruptionBudget `json:"podDisruptionBudgets"`
	Want agreementOutcome               `json:"expect"`
}

type agreementNode struct {
	Name          string              `json:"name"`
	CPU           string              `json:"cpu"`
	Memory        string              `json:"memory"`
	Pods          string              `json:"pods"`
	Labels        map[string]string   `json:"labels"`
	Taints        []v1.Taint          `json:"taints"`
	Unschedulable bool                `json:"unschedulable"`
	Images        []v1.ContainerImage `json:"images"`
}

type agreementPod struct {
	Name     string            `json:"name"`
	Node     string            `json:"node"`
	CPU      string            `json:"cpu"`
	Memory   string            `json:"memory"`
	Image    string            `json:"image"`
	Labels   map[string]string `json:"labels"`
	Priority int32             `json:"priority"`
	Spec     *v1.PodSpec       `json:"spec"`
}

type agreementOutcome struct {
	// Nodes is the set of equally best nodes (any of them is right).
	Nodes []string `json:"nodes"`
	// Message is the FailedScheduling message when no node fits.
	Message string `json:"message"`
	// NominatedNode is where preemption makes room, when no node fits.
	NominatedNode string `json:"nominatedNode"`
}

func (n agreementNode) node() *v1.Node {
	q := func(s, def string) resource.Quantity {
		if s == "" {
			s = def
		}
		return resource.MustParse(s)
	}
	lbls := map[string]string{v1.LabelHostname: n.Name}
	for k, v := range n.Labels {
		lbls[k] = v
	}
	alloc := v1.ResourceList{v1.ResourceCPU: q(n.CPU, "4"), v1.ResourceMemory: q(n.Memory, "16Gi"), v1.ResourcePods: q(n.Pods, "110")}
	return &v1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: n.Name, Labels: lbls},
		Spec:       v1.NodeSpec{Taints: n.Taints, Unschedulable: n.Unschedulable},
		Status:     v1.NodeStatus{Allocatable: alloc, Capacity: alloc, Images: n.Images},
	}
}

func (p agreementPod) pod() *v1.Pod {
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: "default", UID: types.UID("uid-" + p.Name), Labels: p.Labels}}
	if p.Spec != nil {
		pod.Spec = *p.Spec.DeepCopy()
	}
	if len(pod.Spec.Containers) == 0 {
		image := p.Image
		if image == "" {
			image = "busybox"
		}
		c := v1.Container{Name: "app", Image: image, Resources: v1.ResourceRequirements{Requests: v1.ResourceList{}}}
		if p.CPU != "" {
			c.Resources.Requests[v1.ResourceCPU] = resource.MustParse(p.CPU)
		}
		if p.Memory != "" {
			c.Resources.Requests[v1.ResourceMemory] = resource.MustParse(p.Memory)
		}
		pod.Spec.Containers = []v1.Container{c}
	}
	priority := p.Priority
	pod.Spec.Priority = &priority
	pod.Spec.NodeName = p.Node
	if p.Node != "" {
		pod.Status.Phase = v1.PodRunning
	}
	return pod
}

// TestAgreementFixtures runs every fixture through the default profile, the
// scoring and DefaultPreemption's wording, and compares the set of equally
// best nodes, or the FailedScheduling message, with the fixture's.
func TestAgreementFixtures(t *testing.T) {
	files, err := filepath.Glob("testdata/agreement/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 30 {
		t.Fatalf("%d fixtures, want at least 30", len(files))
	}
	for _, file := range files {
		t.Run(strings.TrimSuffix(filepath.Base(file), ".yaml"), func(t *testing.T) {
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			var tc agreementCase
			if err := yaml.UnmarshalStrict(data, &tc); err != nil {
				t.Fatalf("failed to decode %s: %v", file, err)
			}
			if tc.Why == "" || (len(tc.Want.Nodes) == 0) == (tc.Want.Message == "") {
				t.Fatal("a fixture needs why and exactly one of expect.nodes and expect.message")
			}
			nodes, msg, nominated := runAgreementCase(t, tc)
			if tc.Want.Message != "" {
				if msg != tc.Want.Message {
					t.Errorf("message\n got  %q\n want %q\n (why: %s)", msg, tc.Want.Message, tc.Why)
				}
				if tc.Want.NominatedNode != "" && nominated != tc.Want.NominatedNode {
					t.Errorf("nominated node %q, want %q (why: %s)", nominated, tc.Want.NominatedNode, tc.Why)
				}
				return
			}
			want := slices.Clone(tc.Want.Nodes)
			sort.Strings(want)
			if !slices.Equal(nodes, want) {
				t.Errorf("best nodes %v, want %v (message %q; why: %s)", nodes, want, msg, tc.Why)
			}
		})
	}
}

// runAgreementCase schedules the fixture's pod once and returns the sorted
// set of best nodes, or the FailedScheduling message and the node
// preemption nominated, if any.
func runAgreementCase(t *testing.T, tc agreementCase) ([]string, string, string) {
	t.Helper()
	s, err := New(Config{Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}, fake.NewClientset())
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range tc.Nodes {
		s.cache.AddNode(n.node())
	}
	for _, p := range tc.Pods {
		if err := s.cache.AddPod(p.pod()); err != nil {
			t.Fatal(err)
		}
	}
	for i := range tc.PDBs {
		addPDBs(t, s, &tc.PDBs[i])
	}
	s.cache.UpdateSnapshot(s.snapshot)
	pod := tc.Pod.pod()
	prof := s.profileFor(pod)
	state := framework.NewCycleState()
	d := explain.Decision{}
	host, err := s.schedulePod(context.Background(), prof.fwk, state, pod, &d)
	if err != nil {
		var fitErr *framework.FitError
		var nominated string
		if errors.As(err, &fitErr) {
			r := s.preempt(context.Background(), prof, state, pod, fitErr)
			fitErr.Diagnosis.PostFilterMsg = r.message
			nominated = r.nominatedNode
		}
		return nil, err.Error(), nominated
	}
	if len(d.Scores) == 0 {
		return []string{host}, "", ""
	}
	var best []string
	for _, sc := range d.Scores {
		if sc.Total == d.Scores[0].Total {
			best = append(best, sc.Node)
		}
	}
	sort.Strings(best)
	return best, "", ""
}
