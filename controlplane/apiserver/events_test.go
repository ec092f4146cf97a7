package apiserver_test

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"
)

func TestEventRecorderCreatesAndAggregatesEvents(t *testing.T) {
	ctx := ctxT(t)
	ns := shared.namespace(t)
	pod, err := shared.client.CoreV1().Pods(ns).Create(ctx, testPod("evented"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	broadcaster := record.NewBroadcaster()
	defer broadcaster.Shutdown()
	broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: shared.client.CoreV1().Events("")})
	recorder := broadcaster.NewRecorder(scheme.Scheme, corev1.EventSource{Component: "default-scheduler"})
	recorder.Event(pod, corev1.EventTypeNormal, "Scheduled", "Successfully assigned "+ns+"/evented to node-1")

	selector := "involvedObject.name=evented,involvedObject.namespace=" + ns + ",involvedObject.kind=Pod,involvedObject.uid=" + string(pod.UID)
	var events *corev1.EventList
	eventually(t, "the Scheduled event", func() bool {
		events, err = shared.client.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: selector})
		return err == nil && len(events.Items) == 1
	})
	recorder.Event(pod, corev1.EventTypeNormal, "Scheduled", "Successfully assigned "+ns+"/evented to node-1")
	eventually(t, "the aggregated count", func() bool {
		events, err = shared.client.CoreV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: selector})
		return err == nil && len(events.Items) == 1 && events.Items[0].Count == 2
	})
	if e := events.Items[0]; e.Reason != "Scheduled" || e.Source.Component != "default-scheduler" {
		t.Errorf("event %+v", e)
	}
}
