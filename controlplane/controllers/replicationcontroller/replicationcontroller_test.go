package replicationcontroller

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"reflect"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"

	"github.com/glassplane/glassplane/controlplane/controllers/internal/controllertest"
)

func newRC(replicas int32) *corev1.ReplicationController {
	return &corev1.ReplicationController{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: "rc-uid", Generation: 2, Labels: map[string]string{"app": "web"}},
		Spec: corev1.ReplicationControllerSpec{
			Replicas: &replicas, MinReadySeconds: 5,
			Selector: map[string]string{"app": "web"},
			Template: &corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}},
			},
		},
		Status: corev1.ReplicationControllerStatus{Replicas: 1, ReadyReplicas: 1, ObservedGeneration: 1, Conditions: []corev1.ReplicationControllerCondition{
			{Type: corev1.ReplicationControllerReplicaFailure, Status: corev1.ConditionTrue, Reason: "FailedCreate", Message: "quota"},
		}},
	}
}

func TestConversionRoundTrip(t *testing.T) {
	rc := newRC(3)
	rs := rcToRS(rc)
	if rs.Spec.Selector.MatchLabels["app"] != "web" || *rs.Spec.Replicas != 3 || rs.UID != rc.UID || rs.Spec.Template.Labels["app"] != "web" ||
		rs.Status.Conditions[0].Type != appsv1.ReplicaSetReplicaFailure {
		t.Fatalf("rcToRS = %+v", rs)
	}
	back, err := rsToRC(rs)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back, rc) {
		t.Errorf("round trip changed the RC:\n got %+v\nwant %+v", back, rc)
	}
	rs.Spec.Selector.MatchExpressions = []metav1.LabelSelectorRequirement{{Key: "a", Operator: metav1.LabelSelectorOpExists}}
	if _, err := rsToRC(rs); err == nil {
		t.Error("an RS with match expressions converted to an RC")
	}
}

// kindRecorder keeps the kind and name of each event's object.
type kindRecorder struct {
	controllertest.Recorder
	mu      sync.Mutex // guards objects
	objects []string
}

func (r *kindRecorder) Eventf(obj runtime.Object, eventtype, reason, messageFmt string, args ...any) {
	r.mu.Lock()
	r.objects = append(r.objects, fmt.Sprintf("%T %s", obj, reason))
	r.mu.Unlock()
	r.Recorder.Eventf(obj, eventtype, reason, messageFmt, args...)
}

func (r *kindRecorder) Objects() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.objects...)
}

// TestRunsReplicaSetLogicOnRCs runs the controller on a fake clientset:
// the RC of 3 gets 3 pods owned by it, its status counts them, and its
// events are about the RC.
func TestRunsReplicaSetLogicOnRCs(t *testing.T) {
	rc := newRC(3)
	rc.Status = corev1.ReplicationControllerStatus{}
	client := controllertest.NewClientset(rc)
	factory := informers.NewSharedInformerFactory(client, 0)
	rec := &kindRecorder{}
	c, err := New(slog.New(slog.NewTextHandler(io.Discard, nil)), client, rec, factory.Core().V1().ReplicationControllers(), factory.Core().V1().Pods())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	factory.Start(ctx.Done())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx, 2) }()
	defer func() { cancel(); <-done }()

	deadline := time.Now().Add(10 * time.Second)
	for {
		pods, err := client.CoreV1().Pods("default").List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		got, err := client.CoreV1().ReplicationControllers("default").Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(pods.Items) == 3 && got.Status.Replicas == 3 {
			for _, p := range pods.Items {
				ref := metav1.GetControllerOf(&p)
				if ref == nil || ref.Kind != "ReplicationController" || ref.APIVersion != "v1" || ref.UID != rc.UID {
					t.Errorf("pod %s controller = %+v, want the RC", p.Name, ref)
				}
			}
			if got.Status.ObservedGeneration != rc.Generation || got.Spec.Template == nil || got.Spec.Selector["app"] != "web" {
				t.Errorf("RC after status update = %+v", got)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d pods and status.replicas %d, want 3 and 3", len(pods.Items), got.Status.Replicas)
		}
		time.Sleep(50 * time.Millisecond)
	}
	objs := rec.Objects()
	if len(objs) < 3 {
		t.Fatalf("events = %v, want 3 SuccessfulCreate", objs)
	}
	for _, o := range objs {
		if o != "*v1.ReplicationController SuccessfulCreate" {
			t.Errorf("event about %s, want *v1.ReplicationController SuccessfulCreate", o)
		}
	}
}
