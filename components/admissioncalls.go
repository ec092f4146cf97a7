package components

// AdmissionCall is one admission webhook call or admission policy
// evaluation of a request: a sub-stage of its admission stage.
type AdmissionCall struct {
	// Kind is MutatingWebhook, ValidatingWebhook, MutatingAdmissionPolicy
	// or ValidatingAdmissionPolicy.
	Kind string `json:"kind"`
	// Configuration is the webhook configuration or policy; Name the
	// webhook or the policy binding.
	Configuration string `json:"configuration"`
	Name          string `json:"name"`
	// Duration reads like "1.52ms".
	Duration string `json:"duration"`
	// Result is allowed, denied, patched, error-ignored or error.
	Result  string `json:"result"`
	Message string `json:"message,omitempty"`
	// Patch is the JSON patch applied, indented; empty unless patched.
	Patch string `json:"patch,omitempty"`
}
