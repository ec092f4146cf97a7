package dynamic

import (
	"encoding/json"
	"errors"
	"reflect"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestPolicyStages(t *testing.T) {
	cms := schema.GroupResource{Resource: "configmaps"}
	forbidden := func(msg string) error { return apierrors.NewForbidden(cms, "cm", errors.New(msg)) }
	matched := []policyBinding{{"p", "b1"}, {"p", "b2"}, {"q", "c"}}
	patch := json.RawMessage(`[{"op":"add","path":"/metadata/labels","value":{"a":"b"}}]`)
	stage := func(kind, policy, binding, result, message string, patch json.RawMessage) Stage {
		return Stage{Kind: kind, Configuration: policy, Name: binding, DurationMicros: 1500, Result: result, Message: message, Patch: patch}
	}
	vap, mp := KindValidatingAdmissionPolicy, KindMutatingAdmissionPolicy
	cases := []struct {
		name    string
		kind    string
		matched []policyBinding
		err     error
		patch   json.RawMessage
		want    []Stage
	}{
		{"all allowed", vap, matched, nil, nil, []Stage{
			stage(vap, "p", "b1", ResultAllowed, "", nil), stage(vap, "p", "b2", ResultAllowed, "", nil), stage(vap, "q", "c", ResultAllowed, "", nil)}},
		{"one binding denies", vap, matched, forbidden("ValidatingAdmissionPolicy 'p' with binding 'b2' denied request: too big"), nil, []Stage{
			stage(vap, "p", "b1", ResultAllowed, "", nil), stage(vap, "p", "b2", ResultDenied, "too big", nil), stage(vap, "q", "c", ResultAllowed, "", nil)}},
		{"binding misconfigured", vap, matched[2:], forbidden("ValidatingAdmissionPolicy 'q' with binding 'c' denied request: failed to configure binding: no params found"), nil, []Stage{
			stage(vap, "q", "c", ResultError, "failed to configure binding: no params found", nil)}},
		{"policy misconfigured", vap, matched, forbidden("ValidatingAdmissionPolicy 'p' denied request: failed to configure policy: bad"), nil, []Stage{
			stage(vap, "p", "b1", ResultError, "failed to configure policy: bad", nil), stage(vap, "p", "b2", ResultError, "failed to configure policy: bad", nil),
			stage(vap, "q", "c", ResultAllowed, "", nil)}},
		{"mutation patched", mp, matched[2:], nil, patch, []Stage{stage(mp, "q", "c", ResultPatched, "", patch)}},
		{"mutation failed", mp, matched[2:], forbidden("policy 'q' with binding 'c' denied request: expression failed"), nil, []Stage{
			stage(mp, "q", "c", ResultError, "expression failed", nil)}},
		{"plugin not ready", vap, nil, forbidden("not yet ready to handle request"), nil, []Stage{
			stage(vap, "", "", ResultError, `configmaps "cm" is forbidden: not yet ready to handle request`, nil)}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := policyStages(tc.kind, tc.matched, 1500*time.Microsecond, tc.err, tc.patch)
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("stages =\n%+v\nwant\n%+v", got, tc.want)
			}
		})
	}
}
