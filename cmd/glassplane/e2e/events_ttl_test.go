package e2e

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
)

// TestEventsExpireAfterEventTTL creates an Event on a cluster started with a
// short --event-ttl and checks that etcd deletes it once the time is up: a
// watcher sees it DELETED and a GET finds it gone, while a ConfigMap written
// at the same time stays. A negative --event-ttl is refused.
func TestEventsExpireAfterEventTTL(t *testing.T) {
	out, err := exec.Command(binary, "up", "--data-dir", t.TempDir(), "--event-ttl", "-1s").CombinedOutput()
	if err == nil || !strings.Contains(string(out), "--event-ttl must not be negative") {
		t.Errorf("up --event-ttl -1s: %v\n%s", err, out)
	}

	c := NewCluster(t, "--node-runtime", "none", "--scheduler=false", "--web-listen", "", "--event-ttl", "3s")
	ctx := context.Background()
	ev, err := c.Client.CoreV1().Events("default").Create(ctx, &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Name: "short-lived"},
		InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: "default", Name: "web"},
		Reason:         "Testing", Message: "gone in three seconds", Type: corev1.EventTypeNormal,
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Client.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "stays"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	w, err := c.Client.CoreV1().Events("default").Watch(ctx, metav1.ListOptions{ResourceVersion: ev.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	timeout := time.After(time.Minute)
	for deleted := false; !deleted; {
		select {
		case e, ok := <-w.ResultChan():
			if !ok {
				t.Fatal("the watch ended before the Event expired")
			}
			got, isEvent := e.Object.(*corev1.Event)
			deleted = e.Type == watch.Deleted && isEvent && got.Name == "short-lived"
		case <-timeout:
			t.Fatal("the Event was not deleted a minute after its 3 s time to live")
		}
	}
	if _, err := c.Client.CoreV1().Events("default").Get(ctx, "short-lived", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("GET of the expired Event: %v, want NotFound", err)
	}
	if _, err := c.Client.CoreV1().ConfigMaps("default").Get(ctx, "stays", metav1.GetOptions{}); err != nil {
		t.Errorf("the ConfigMap written with it: %v", err)
	}
}
