// Package controllertest helps the controllers' unit tests: a fake
// clientset that names objects from generateName, and an event recorder
// that keeps what was recorded.
package controllertest

import (
	"fmt"
	"sync"
	"sync/atomic"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
)

// NewClientset returns a fake clientset holding objs that fills in a name
// from generateName on create, as the API server does.
func NewClientset(objs ...runtime.Object) *fake.Clientset {
	client := fake.NewClientset(objs...)
	var n atomic.Int64
	client.PrependReactor("create", "*", func(action clienttesting.Action) (bool, runtime.Object, error) {
		create, ok := action.(clienttesting.CreateAction)
		if !ok {
			return false, nil, nil
		}
		m, err := meta.Accessor(create.GetObject())
		if err == nil && m.GetName() == "" && m.GetGenerateName() != "" {
			m.SetName(fmt.Sprintf("%s%05d", m.GetGenerateName(), n.Add(1)))
		}
		return false, nil, nil
	})
	return client
}

// Recorder is a record.EventRecorder that keeps "Type Reason Message"
// lines.
type Recorder struct {
	mu     sync.Mutex // guards events
	events []string
}

// Event records one event.
func (r *Recorder) Event(_ runtime.Object, eventtype, reason, message string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.events = append(r.events, eventtype+" "+reason+" "+message)
}

// Eventf records one formatted event.
func (r *Recorder) Eventf(obj runtime.Object, eventtype, reason, messageFmt string, args ...any) {
	r.Event(obj, eventtype, reason, fmt.Sprintf(messageFmt, args...))
}

// AnnotatedEventf records one formatted event, ignoring annotations.
func (r *Recorder) AnnotatedEventf(obj runtime.Object, _ map[string]string, eventtype, reason, messageFmt string, args ...any) {
	r.Eventf(obj, eventtype, reason, messageFmt, args...)
}

// Events returns the events recorded so far.
func (r *Recorder) Events() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.events...)
}

// CountActions counts the actions with verb on resource (and subresource
// when not empty).
func CountActions(actions []clienttesting.Action, verb, resource, subresource string) int {
	n := 0
	for _, a := range actions {
		if a.GetVerb() == verb && a.GetResource().Resource == resource && (subresource == "" || a.GetSubresource() == subresource) {
			n++
		}
	}
	return n
}
