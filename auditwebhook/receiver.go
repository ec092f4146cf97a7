package auditwebhook

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"

	"k8s.io/apimachinery/pkg/runtime/schema"
	auditv1 "k8s.io/apiserver/pkg/apis/audit/v1"
)

// MaxBodyBytes bounds one batch: kube-apiserver's default webhook batch is
// 400 events, a few MiB at the RequestResponse level.
const MaxBodyBytes = 32 << 20

// Receiver is the http.Handler an API server's audit webhook posts to.
type Receiver struct {
	// Deliver gets each batch's events in the order they were sent.
	Deliver func([]auditv1.Event)
}

// ServeHTTP accepts one batch.
func (r *Receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	if req.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "the audit webhook takes POSTs of an audit.k8s.io/v1 EventList", http.StatusMethodNotAllowed)
		return
	}
	events, err := Decode(http.MaxBytesReader(w, req.Body, MaxBodyBytes))
	var tooLarge *http.MaxBytesError
	switch {
	case errors.As(err, &tooLarge):
		http.Error(w, fmt.Sprintf("the batch is over %d bytes", MaxBodyBytes), http.StatusRequestEntityTooLarge)
		return
	case err != nil:
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if r.Deliver != nil && len(events) > 0 {
		r.Deliver(events)
	}
	w.WriteHeader(http.StatusOK)
}

// Decode reads one webhook body: an audit.k8s.io/v1 EventList in JSON.
func Decode(body io.Reader) ([]auditv1.Event, error) {
	var list auditv1.EventList
	if err := json.NewDecoder(body).Decode(&list); err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			return nil, err
		}
		return nil, fmt.Errorf("the body is not an audit.k8s.io/v1 EventList in JSON: %w", err)
	}
	want := auditv1.SchemeGroupVersion.WithKind("EventList")
	if got := schema.FromAPIVersionAndKind(list.APIVersion, list.Kind); got != want {
		return nil, fmt.Errorf("the body is a %s, not an audit.k8s.io/v1 EventList", got)
	}
	for i := range list.Items {
		list.Items[i].APIVersion, list.Items[i].Kind = auditv1.SchemeGroupVersion.String(), "Event"
	}
	return list.Items, nil
}
