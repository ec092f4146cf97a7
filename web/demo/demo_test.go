package demo

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
)

// hangul matches a Korean syllable.
var hangul = regexp.MustCompile(`[\x{AC00}-\x{D7A3}]`)

// TestScriptsShape checks every demo is playable and bilingual: a unique
// name, a title and a narration per step in English and Korean, an action
// per step, and where it runs said in both.
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
			checkText(t, "where", Where(d, ""))
			checkText(t, "where in default", Where(d, "default"))
		})
	}
	for _, want := range []string{"pod-lifecycle", "deployment-rollout", "unschedulable", "toleration", "preemption", "crash-loop", "node-failure", "rbac-denied", "service-dns"} {
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
		{"cron-job", []string{"*/1 * * * *", "timeZone", "successfulJobsHistoryLimit", "cronjob.kubernetes.io/instantiate: manual", "SuccessfulCreate", "SawCompletedJob", "SuccessfulDelete"}},
		{"autoscale", []string{"metrics.glassplane.io/simulated-usage", "--simulated-usage", "metrics.k8s.io", "ScalingLimited", "New size: 4; reason: cpu resource utilization (percentage of request) above target", "All metrics below target"}},
		{"custom-resource", []string{"NamesAccepted", "Established", "x-kubernetes-validations", "422 Invalid", "customresourcecleanup.apiextensions.k8s.io"}},
		{"service-dns", []string{"kubectl expose", "kubernetes.io/service-name=hello", "svc.cluster.local", "10.96.0.10", "EndpointsProgrammed", "terminating", "ServiceReached"}},
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
		return Step{Say: Text{En: "step", Ko: "단계"}, Do: func(context.Context, *Env) (Text, error) {
			ran = append(ran, n)
			return Text{"done", "완료"}, err
		}}
	}
	d := Demo{Name: "t", Steps: []Step{step(1, nil), step(2, errors.New("boom")), step(3, nil)},
		Cleanup: func(context.Context, *Env) { cleaned = true }}
	var lines []Line
	err := Run(context.Background(), d, &Env{Client: fake.NewClientset()}, "ko", func(l Line) { lines = append(lines, l) })
	if err == nil || !strings.Contains(err.Error(), "2단계: boom") {
		t.Fatalf("Run error = %v, want 2단계: boom", err)
	}
	if len(ran) != 2 || !cleaned {
		t.Errorf("ran steps %v, cleaned %v; want [1 2] and a cleanup", ran, cleaned)
	}
	if last := lines[len(lines)-1]; last.Step != 2 || last.Err != "boom" || last.Narration != "단계" || last.Result != "완료" {
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

// apiLikeClient is a fake API that, like the real one, gives every created
// object a uid and refuses a delete whose uid precondition does not match.
func apiLikeClient(objects ...runtime.Object) *fake.Clientset {
	c := fake.NewClientset(objects...)
	c.PrependReactor("create", "*", func(a clienttesting.Action) (bool, runtime.Object, error) {
		if m, err := apimeta.Accessor(a.(clienttesting.CreateAction).GetObject()); err == nil && m.GetUID() == "" {
			m.SetUID(uuid.NewUUID())
		}
		return false, nil, nil
	})
	c.PrependReactor("delete", "*", func(a clienttesting.Action) (bool, runtime.Object, error) {
		d := a.(clienttesting.DeleteActionImpl)
		p := d.GetDeleteOptions().Preconditions
		if p == nil || p.UID == nil {
			return false, nil, nil
		}
		obj, err := c.Tracker().Get(d.GetResource(), d.GetNamespace(), d.GetName())
		if err != nil {
			return false, nil, nil
		}
		if m, _ := apimeta.Accessor(obj); m.GetUID() != *p.UID {
			return true, nil, apierrors.NewConflict(schema.GroupResource{Resource: d.GetResource().Resource}, d.GetName(),
				fmt.Errorf("the UID in the precondition (%s) does not match the UID in record (%s)", *p.UID, m.GetUID()))
		}
		return false, nil, nil
	})
	return c
}

// TestPodLifecycleLeavesTheUsersPodAlone plays pod-lifecycle in default,
// where the README's tour left the user's own mypod: the demo stops at its
// create, says why in the chosen language, and mypod keeps its uid.
func TestPodLifecycleLeavesTheUsersPodAlone(t *testing.T) {
	for _, lang := range []string{"en", "ko"} {
		t.Run(lang, func(t *testing.T) {
			users := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "mypod", Namespace: "default", UID: "users-mypod"}}
			client := apiLikeClient(users)
			d, _ := Find("pod-lifecycle")
			var lines []Line
			err := Run(context.Background(), d, &Env{Client: client, Namespace: "default"}, lang, func(l Line) { lines = append(lines, l) })
			if !apierrors.IsAlreadyExists(err) {
				t.Fatalf("Run = %v, want the AlreadyExists of step 1", err)
			}
			last := lines[len(lines)-1]
			if last.Step != 1 || !strings.Contains(last.Err, `pods "mypod" already exists`) {
				t.Errorf("last line %+v", last)
			}
			if lang == "ko" && !hangul.MatchString(last.Err) || lang == "en" && !strings.Contains(last.Err, "leaves it alone") {
				t.Errorf("the clash is not explained in %s: %q", lang, last.Err)
			}
			p, err := client.CoreV1().Pods("default").Get(context.Background(), "mypod", metav1.GetOptions{})
			if err != nil || p.UID != users.UID {
				t.Errorf("the user's mypod after the demo: %v, %v", p, err)
			}
		})
	}
}

// TestRunUsesANamespaceOfItsOwn: without a namespace, a demo runs in
// glassplane-demo-<name>, created for the run and removed after it; its
// cleanup deletes what it created, but not an object of the same name that
// someone else made meanwhile.
func TestRunUsesANamespaceOfItsOwn(t *testing.T) {
	client := apiLikeClient()
	ctx := context.Background()
	var ranIn string
	var theirs types.UID
	pod := func(name string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1.PodSpec{Containers: []corev1.Container{container("c")}}}
	}
	d := Demo{Name: "t", Steps: []Step{
		{Say: Text{"create", "만들기"}, Do: func(ctx context.Context, env *Env) (Text, error) {
			ranIn = env.Namespace
			_, err := env.createPod(ctx, pod("ours"))
			if err != nil {
				return Text{}, err
			}
			_, err = env.createPod(ctx, pod("replaced"))
			return Text{}, err
		}},
		{Say: Text{"someone else replaces a pod", "다른 사람이 Pod를 바꿉니다"}, Do: func(ctx context.Context, env *Env) (Text, error) {
			pods := env.Client.CoreV1().Pods(env.Namespace)
			if err := pods.Delete(ctx, "replaced", metav1.DeleteOptions{}); err != nil {
				return Text{}, err
			}
			p, err := pods.Create(ctx, pod("replaced"), metav1.CreateOptions{})
			if err == nil {
				theirs = p.UID
			}
			return Text{}, err
		}},
	}}
	env := &Env{Client: client}
	client.PrependReactor("delete", "namespaces", func(a clienttesting.Action) (bool, runtime.Object, error) {
		// The namespace controller is not there: check what the cleanup
		// left before the namespace goes.
		pods := schema.GroupVersionResource{Version: "v1", Resource: "pods"}
		if _, err := client.Tracker().Get(pods, ranIn, "ours"); !apierrors.IsNotFound(err) {
			t.Errorf("the run's pod is still there: %v", err)
		}
		if p, err := client.Tracker().Get(pods, ranIn, "replaced"); err != nil || p.(*corev1.Pod).UID != theirs {
			t.Errorf("the cleanup deleted someone else's pod of the run's name: %v", err)
		}
		return false, nil, nil
	})
	if err := Run(ctx, d, env, "en", func(Line) {}); err != nil {
		t.Fatal(err)
	}
	if ranIn != "glassplane-demo-t" || NamespaceFor(d) != ranIn {
		t.Errorf("ran in %q, want glassplane-demo-t", ranIn)
	}
	if _, err := client.CoreV1().Namespaces().Get(ctx, ranIn, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the run's namespace is still there: %v", err)
	}
}

// TestRunRefusesALeftoverNamespace: a namespace left from another run
// stops the demo before it does anything, with the command that removes
// it, and stays.
func TestRunRefusesALeftoverNamespace(t *testing.T) {
	left := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "glassplane-demo-pod-lifecycle", UID: "left"}}
	client := apiLikeClient(left)
	d, _ := Find("pod-lifecycle")
	for _, lang := range []string{"en", "ko"} {
		ran := false
		err := Run(context.Background(), d, &Env{Client: client}, lang, func(Line) { ran = true })
		var inUse *NamespaceInUseError
		if !errors.As(err, &inUse) || inUse.Namespace != left.Name || !strings.Contains(err.Error(), "kubectl delete namespace "+left.Name) || ran {
			t.Errorf("%s: Run = %v (a step ran: %v), want a refusal naming the namespace and how to remove it", lang, err, ran)
		}
		if lang == "ko" && !hangul.MatchString(err.Error()) {
			t.Errorf("the refusal is not in Korean: %v", err)
		}
	}
	if ns, err := client.CoreV1().Namespaces().Get(context.Background(), left.Name, metav1.GetOptions{}); err != nil || ns.UID != left.UID {
		t.Errorf("the leftover namespace: %v", err)
	}
}

// objectRef matches a reference to an object (pod/mypod, deployment.apps/hello).
var objectRef = regexp.MustCompile(`\b[a-z.]+/[a-z0-9-]+`)

// TestResultsSpeakTheRunsLanguage plays every demo against a fake cluster:
// in Korean each step's result says what happened in Korean, in English
// in English, and both name the same objects, in Kubernetes' words.
func TestResultsSpeakTheRunsLanguage(t *testing.T) {
	results := map[string][]string{}
	for _, d := range All() {
		for _, lang := range []string{"en", "ko"} {
			t.Run(d.Name+"/"+lang, func(t *testing.T) {
				c := newFakeCluster()
				env := &Env{Client: c, Timeout: 15 * time.Second, actAs: c.actAs, extensions: c.extensions}
				d, _ := Find(d.Name)
				var lines []Line
				err := Run(context.Background(), d, env, lang, func(l Line) {
					if l.Result != "" || l.Err != "" {
						lines = append(lines, l)
					}
				})
				if err != nil {
					t.Fatalf("Run = %v", err)
				}
				if len(lines) != len(d.Steps) {
					t.Fatalf("%d results for %d steps: %+v", len(lines), len(d.Steps), lines)
				}
				var refs []string
				for _, l := range lines {
					if korean := hangul.MatchString(l.Result); korean != (lang == "ko") {
						t.Errorf("step %d: the result is not in %s: %q", l.Step, lang, l.Result)
					}
					t.Logf("→ %s", l.Result)
					refs = append(refs, objectRef.FindAllString(l.Result, -1)...)
				}
				results[d.Name+"/"+lang] = refs
			})
		}
		if en, ko := results[d.Name+"/en"], results[d.Name+"/ko"]; !slices.Equal(sorted(en), sorted(ko)) {
			t.Errorf("%s: the English results name %v, the Korean ones %v", d.Name, en, ko)
		}
	}
}

func sorted(s []string) []string {
	s = slices.Clone(s)
	slices.Sort(s)
	return s
}

// TestRunSaysItsOwnFailuresInTheRunsLanguage plays pod-lifecycle where no
// scheduler binds the pod: the demo gives up on step 2 and says so in the
// run's language, on the step's line and in the error.
func TestRunSaysItsOwnFailuresInTheRunsLanguage(t *testing.T) {
	for _, tt := range []struct{ lang, want string }{
		{"en", "step 2: gave up waiting for the pod to be scheduled after 300ms"},
		{"ko", "2단계: Pod 스케줄링: 300ms 동안 기다렸지만 이루어지지 않아 포기했습니다"},
	} {
		t.Run(tt.lang, func(t *testing.T) {
			d, _ := Find("pod-lifecycle")
			var last Line
			err := Run(context.Background(), d, &Env{Client: apiLikeClient(), Timeout: 300 * time.Millisecond}, tt.lang, func(l Line) { last = l })
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("Run = %v, want %q", err, tt.want)
			}
			if last.Step != 2 || !strings.Contains(tt.want, last.Err) {
				t.Errorf("last line %+v", last)
			}
		})
	}
}
