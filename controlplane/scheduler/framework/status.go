package framework

import (
	"errors"
	"strings"
)

// Code is the outcome class of a plugin call.
type Code int

// These are the Codes a plugin may return; they match kube-scheduler's.
const (
	// Success means the plugin ran and the pod may proceed. A nil *Status is
	// also Success.
	Success Code = iota
	// Error is an internal failure; the pod is retried after a backoff.
	Error
	// Unschedulable means the pod does not fit this node now, but it might
	// after a change such as preempting a lower-priority pod.
	Unschedulable
	// UnschedulableAndUnresolvable means the pod does not fit this node and
	// preemption cannot change that (a taint, a name mismatch, ...).
	UnschedulableAndUnresolvable
)

var codeNames = []string{"Success", "Error", "Unschedulable", "UnschedulableAndUnresolvable"}

// String returns the name of the code as kube-scheduler spells it.
func (c Code) String() string {
	if int(c) >= 0 && int(c) < len(codeNames) {
		return codeNames[c]
	}
	return "Unknown"
}

// Status is the result of one plugin call: a Code, the human reasons that
// go straight to events and the dashboard, an optional error, and the name of
// the plugin that returned it. A nil *Status means Success.
type Status struct {
	code    Code
	reasons []string
	err     error
	plugin  string
}

// NewStatus returns a Status with the given code and reasons.
func NewStatus(code Code, reasons ...string) *Status {
	return &Status{code: code, reasons: reasons}
}

// AsStatus wraps err in a Status with code Error; a nil err gives nil.
func AsStatus(err error) *Status {
	if err == nil {
		return nil
	}
	return &Status{code: Error, reasons: []string{err.Error()}, err: err}
}

// Code returns the status code; a nil Status is Success.
func (s *Status) Code() Code {
	if s == nil {
		return Success
	}
	return s.code
}

// Reasons returns the human reasons, one per failed check.
func (s *Status) Reasons() []string {
	if s == nil {
		return nil
	}
	return s.reasons
}

// Message joins the reasons with ", ".
func (s *Status) Message() string {
	if s == nil {
		return ""
	}
	return strings.Join(s.reasons, ", ")
}

// Plugin names the plugin that returned this status, if recorded.
func (s *Status) Plugin() string {
	if s == nil {
		return ""
	}
	return s.plugin
}

// WithPlugin records the plugin that returned this status and returns s.
func (s *Status) WithPlugin(name string) *Status {
	if s != nil {
		s.plugin = name
	}
	return s
}

// IsSuccess reports whether the status is nil or has code Success.
func (s *Status) IsSuccess() bool { return s.Code() == Success }

// IsRejected reports whether the pod was found not to fit (Unschedulable or
// UnschedulableAndUnresolvable), as opposed to an internal error.
func (s *Status) IsRejected() bool {
	c := s.Code()
	return c == Unschedulable || c == UnschedulableAndUnresolvable
}

// AsError returns nil for success and an error carrying the message otherwise.
func (s *Status) AsError() error {
	if s.IsSuccess() {
		return nil
	}
	if s.err != nil {
		return s.err
	}
	return errors.New(s.Message())
}
