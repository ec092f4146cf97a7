package scheduler

import (
	"context"
	"encoding/json"
	"fmt"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/glassplane/glassplane/api/v1alpha1"
)

// restDecisions is a decisionClient over the REST client of the
// scheduler's clientset, which has no typed client for glassplane.io: it
// sends and reads the records' JSON at their paths itself.
type restDecisions struct {
	rest rest.Interface
}

var _ decisionClient = restDecisions{}

// newDecisionClient returns the decisionClient of client, nil when client
// has no REST client (a fake clientset).
func newDecisionClient(client kubernetes.Interface) decisionClient {
	rc, ok := client.CoreV1().RESTClient().(*rest.RESTClient)
	if !ok || rc == nil {
		return nil
	}
	return restDecisions{rest: rc}
}

// decisionsPath is the resource's path in namespace, or one record's.
func decisionsPath(namespace string, name ...string) []string {
	return append([]string{"/apis", v1alpha1.GroupName, v1alpha1.SchemeGroupVersion.Version, "namespaces", namespace, "schedulingdecisions"}, name...)
}

func (c restDecisions) Get(ctx context.Context, namespace, name string) (*v1alpha1.SchedulingDecision, error) {
	raw, err := result(c.rest.Get().AbsPath(decisionsPath(namespace, name)...).SetHeader("Accept", "application/json").Do(ctx))
	if err != nil {
		return nil, err
	}
	var r v1alpha1.SchedulingDecision
	if err := json.Unmarshal(raw, &r); err != nil {
		return nil, fmt.Errorf("failed to decode decision record %q: %w", namespace+"/"+name, err)
	}
	return &r, nil
}

func (c restDecisions) Create(ctx context.Context, r *v1alpha1.SchedulingDecision) error {
	return c.send(ctx, c.rest.Post().AbsPath(decisionsPath(r.Namespace)...), r)
}

func (c restDecisions) Update(ctx context.Context, r *v1alpha1.SchedulingDecision) error {
	return c.send(ctx, c.rest.Put().AbsPath(decisionsPath(r.Namespace, r.Name)...), r)
}

// send sends r as req's JSON body; the answer is not read beyond its
// status.
func (c restDecisions) send(ctx context.Context, req *rest.Request, r *v1alpha1.SchedulingDecision) error {
	body, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("failed to encode decision record %q: %w", r.Namespace+"/"+r.Name, err)
	}
	_, err = result(req.SetHeader("Content-Type", "application/json").SetHeader("Accept", "application/json").Body(body).Do(ctx))
	return err
}

// result returns res's body, or its error with the Status the API server
// answered (DoRaw's errors lack it: an AlreadyExists reads as a Conflict).
func result(res rest.Result) ([]byte, error) {
	if err := res.Error(); err != nil {
		return nil, err
	}
	return res.Raw()
}
