package demo

import (
	"context"
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8stypes "k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
)

// TestPrunedByHistoryLimit: the cron-job demo's Job made by hand may be
// deleted by the history limit as soon as it completes (a scheduled run
// completed just before); the demo takes that for its completion only when
// the controller's SuccessfulDelete Event of the CronJob names it.
func TestPrunedByHistoryLimit(t *testing.T) {
	cj := &batchv1.CronJob{ObjectMeta: metav1.ObjectMeta{Name: "tick", Namespace: "d", UID: "cj-uid"}}
	event := func(name, reason, uid, msg string) *corev1.Event {
		return &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "d"}, Reason: reason, Message: msg,
			InvolvedObject: corev1.ObjectReference{Kind: "CronJob", Name: "tick", Namespace: "d", UID: k8stypes.UID(uid)}}
	}
	for _, tc := range []struct {
		name    string
		events  []*corev1.Event
		want    bool
		wantErr string
	}{
		{"pruned", []*corev1.Event{event("e1", "SuccessfulCreate", "cj-uid", "Created job tick-1"), event("e2", "SuccessfulDelete", "cj-uid", "Deleted job tick-by-hand")}, true, ""},
		{"another job pruned", []*corev1.Event{event("e1", "SuccessfulDelete", "cj-uid", "Deleted job tick-1")}, false, "is gone, and not by the CronJob's history limit"},
		{"an earlier CronJob of the name", []*corev1.Event{event("e1", "SuccessfulDelete", "old-uid", "Deleted job tick-by-hand")}, false, "is gone"},
		{"no events", nil, false, "is gone"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			client := fake.NewClientset()
			for _, e := range tc.events {
				if _, err := client.CoreV1().Events("d").Create(context.Background(), e, metav1.CreateOptions{}); err != nil {
					t.Fatal(err)
				}
			}
			got, err := prunedByHistoryLimit(context.Background(), &Env{Client: client, Namespace: "d"}, cj, "tick-by-hand")
			if got != tc.want || (tc.wantErr == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tc.wantErr)) {
				t.Errorf("got %v, %v; want %v and an error saying %q", got, err, tc.want, tc.wantErr)
			}
		})
	}
}
