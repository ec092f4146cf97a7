package apiserver

import (
	"context"
	"net/http"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/glassplane/glassplane/controlplane/apiserver/audit"
)

// TestMissedAuditEvents: a watcher the ring skipped for falling behind (its
// subscription's buffer was full) gets what it missed from what the ring
// keeps, in order, and 410 Expired once the ring no longer keeps it; the
// audit watch sent nothing for the gap before, and its client never knew.
func TestMissedAuditEvents(t *testing.T) {
	ring := audit.NewRing(1000)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	live := ring.Subscribe(ctx)
	for range 600 { // more than a subscription holds
		ring.Add(&audit.Event{Verb: "get"})
	}
	var sent int64
	for len(live) > 0 {
		rec := <-live
		recs, err := missedAuditEvents(ring, sent, rec)
		if err != nil || len(recs) != 1 || recs[0].Seq != sent+1 {
			t.Fatalf("in order after %d: %d records, err %v", sent, len(recs), err)
		}
		sent = recs[0].Seq
	}
	if sent >= 600 {
		t.Fatalf("the subscription held all %d events; the test needs a gap", sent)
	}
	ring.Add(&audit.Event{Verb: "get"})
	rec := <-live
	if rec.Seq != 601 {
		t.Fatalf("after the gap the subscription got %d, want 601", rec.Seq)
	}
	recs, err := missedAuditEvents(ring, sent, rec)
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != int(601-sent) || recs[0].Seq != sent+1 || recs[len(recs)-1].Seq != 601 {
		t.Fatalf("after sending %d and receiving 601: %d records from %d to %d", sent, len(recs), recs[0].Seq, recs[len(recs)-1].Seq)
	}

	// Once the ring has dropped what the watcher missed, it is told so.
	small := audit.NewRing(10)
	for range 30 {
		small.Add(&audit.Event{Verb: "get"})
	}
	last := small.SinceEncoded(29)[0]
	_, err = missedAuditEvents(small, 5, last)
	if !apierrors.IsResourceExpired(err) && !apierrors.IsGone(err) {
		t.Fatalf("a gap the ring no longer keeps: %v, want 410 Expired", err)
	}
	if st := toStatus(err); st.Code != http.StatusGone {
		t.Errorf("status %d, want 410", st.Code)
	}
}
