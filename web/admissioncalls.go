package web

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/glassplane/glassplane/api/v1alpha1"

	"github.com/glassplane/glassplane/components"
)

// AnnotationDynamicAdmission is the audit annotation in which the API
// server records every admission webhook call and admission policy
// evaluation of a request, in call order, as a JSON array of
// AdmissionCall (v1alpha1.AnnotationDynamicAdmission).
const AnnotationDynamicAdmission = v1alpha1.AnnotationDynamicAdmission

// AdmissionCall is one webhook call or policy evaluation during a
// request's admission, as the API server records it under
// AnnotationDynamicAdmission.
type AdmissionCall struct {
	// Kind is MutatingWebhook, ValidatingWebhook, MutatingAdmissionPolicy
	// or ValidatingAdmissionPolicy.
	Kind string `json:"kind"`
	// Configuration names the webhook configuration or the policy.
	Configuration string `json:"configuration"`
	// Name is the webhook's name, or the policy binding's.
	Name           string `json:"name"`
	DurationMicros int64  `json:"durationMicros"`
	// Result is allowed, denied, patched, error-ignored or error.
	Result string `json:"result"`
	// Message is the denial or the error, when there is one.
	Message string `json:"message,omitempty"`
	// Patch is the JSON patch a mutating call applied (result patched).
	Patch json.RawMessage `json:"patch,omitempty"`
}

// maxAdmissionCalls bounds the calls shown for one request.
const maxAdmissionCalls = 100

// decodeAdmissionCalls reads AnnotationDynamicAdmission's value: nil for
// an empty value, an error for one that is not a JSON array of calls.
func decodeAdmissionCalls(value string) ([]AdmissionCall, error) {
	if strings.TrimSpace(value) == "" {
		return nil, nil
	}
	var calls []AdmissionCall
	dec := json.NewDecoder(strings.NewReader(value))
	if err := dec.Decode(&calls); err != nil {
		return nil, fmt.Errorf("failed to decode %s: %w", AnnotationDynamicAdmission, err)
	}
	if dec.More() {
		return nil, fmt.Errorf("failed to decode %s: data after the array", AnnotationDynamicAdmission)
	}
	if len(calls) > maxAdmissionCalls {
		calls = calls[:maxAdmissionCalls]
	}
	return calls, nil
}

// admissionCallsOf reads a request's admission calls from its audit
// annotations; note says why none are shown when the annotation is there
// but unreadable.
func admissionCallsOf(annotations map[string]string) (calls []AdmissionCall, note string) {
	v, ok := annotations[AnnotationDynamicAdmission]
	if !ok {
		return nil, ""
	}
	calls, err := decodeAdmissionCalls(v)
	if err != nil {
		return nil, "the webhook and policy calls could not be read: " + err.Error()
	}
	return calls, ""
}

// admissionCallRows is the calls as the pipeline page shows them: the
// duration in readable units, a patch indented.
func admissionCallRows(calls []AdmissionCall) []components.AdmissionCall {
	var out []components.AdmissionCall
	for _, c := range calls {
		row := components.AdmissionCall{
			Kind: c.Kind, Configuration: c.Configuration, Name: c.Name, Result: c.Result, Message: c.Message,
			Duration: (time.Duration(max(c.DurationMicros, 0)) * time.Microsecond).String(),
		}
		if p := bytes.TrimSpace(c.Patch); len(p) > 0 && !bytes.Equal(p, []byte("null")) {
			row.Patch = prettyJSON(p)
		}
		out = append(out, row)
	}
	return out
}
