package audit

import (
	"fmt"
	"net/url"
	"os"
	"slices"
	"strings"

	"sigs.k8s.io/yaml"
)

// Policy is an audit.k8s.io/v1 Policy: the first rule matching a request
// decides its level; a request no rule matches is not recorded (level None).
type Policy struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	// Rules are tried in order.
	Rules []PolicyRule `json:"rules"`
	// OmitStages are never recorded, whatever the rule.
	OmitStages []Stage `json:"omitStages,omitempty"`
	// OmitManagedFields is accepted for compatibility; Glassplane keeps no
	// managed fields.
	OmitManagedFields bool `json:"omitManagedFields,omitempty"`
}

// PolicyRule maps requests to a level. Every field set must match; a rule
// with neither resources, namespaces nor nonResourceURLs matches both kinds
// of request.
type PolicyRule struct {
	Level      Level            `json:"level"`
	Users      []string         `json:"users,omitempty"`
	UserGroups []string         `json:"userGroups,omitempty"`
	Verbs      []string         `json:"verbs,omitempty"`
	Resources  []GroupResources `json:"resources,omitempty"`
	// Namespaces match resource requests in them; "" matches cluster-scoped
	// resources.
	Namespaces []string `json:"namespaces,omitempty"`
	// NonResourceURLs match non-resource paths exactly or, ending in "*",
	// by prefix.
	NonResourceURLs   []string `json:"nonResourceURLs,omitempty"`
	OmitStages        []Stage  `json:"omitStages,omitempty"`
	OmitManagedFields *bool    `json:"omitManagedFields,omitempty"`
}

// GroupResources names resources of one API group: "pods", "pods/log",
// "pods/*", "*/scale" or "*"; none means all of the group.
type GroupResources struct {
	Group         string   `json:"group"`
	Resources     []string `json:"resources,omitempty"`
	ResourceNames []string `json:"resourceNames,omitempty"`
}

// LoadPolicy reads an audit policy file (YAML or JSON).
func LoadPolicy(path string) (*Policy, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("failed to read audit policy %q: %w", path, err)
	}
	p, err := ParsePolicy(b)
	if err != nil {
		return nil, fmt.Errorf("failed to load audit policy %q: %w", path, err)
	}
	return p, nil
}

// ParsePolicy parses and validates an audit.k8s.io/v1 Policy.
func ParsePolicy(b []byte) (*Policy, error) {
	var p Policy
	if err := yaml.UnmarshalStrict(b, &p); err != nil {
		return nil, err
	}
	if p.APIVersion != "audit.k8s.io/v1" || p.Kind != "Policy" {
		return nil, fmt.Errorf("want apiVersion audit.k8s.io/v1 and kind Policy, got %q %q", p.APIVersion, p.Kind)
	}
	if len(p.Rules) == 0 {
		return nil, fmt.Errorf("rules: Required value: at least one rule is required")
	}
	for _, st := range p.OmitStages {
		if !validStage(st) {
			return nil, fmt.Errorf("omitStages: Unsupported value: %q", st)
		}
	}
	for i, r := range p.Rules {
		switch r.Level {
		case LevelNone, LevelMetadata, LevelRequest, LevelRequestResponse:
		default:
			return nil, fmt.Errorf("rules[%d].level: Unsupported value: %q: supported values: \"None\", \"Metadata\", \"Request\", \"RequestResponse\"", i, r.Level)
		}
		if len(r.NonResourceURLs) > 0 && (len(r.Resources) > 0 || len(r.Namespaces) > 0) {
			return nil, fmt.Errorf("rules[%d].nonResourceURLs: Invalid value: rules cannot apply to both regular resources and non-resource URLs", i)
		}
		for _, st := range r.OmitStages {
			if !validStage(st) {
				return nil, fmt.Errorf("rules[%d].omitStages: Unsupported value: %q", i, st)
			}
		}
	}
	return &p, nil
}

func validStage(st Stage) bool {
	switch st {
	case StageRequestReceived, StageResponseStarted, StageResponseComplete, StagePanic:
		return true
	}
	return false
}

// LevelFor returns the level of ev's request and the stages not to record.
func (p *Policy) LevelFor(ev *Event) (Level, []Stage) {
	for i := range p.Rules {
		r := &p.Rules[i]
		if r.matches(ev) {
			return r.Level, append(slices.Clone(p.OmitStages), r.OmitStages...)
		}
	}
	return LevelNone, nil
}

// Apply sets ev's level by the policy and drops what the level does not
// record (request and response bodies). It returns false when ev is not to
// be recorded at all.
func (p *Policy) Apply(ev *Event) bool {
	level, omit := p.LevelFor(ev)
	if level == LevelNone || slices.Contains(omit, ev.Stage) {
		return false
	}
	ev.Level = level
	if level == LevelMetadata {
		ev.RequestObject = nil
	}
	if level != LevelRequestResponse {
		ev.ResponseObject = nil
	}
	return true
}

func (r *PolicyRule) matches(ev *Event) bool {
	if len(r.Users) > 0 && !slices.Contains(r.Users, ev.User.Username) {
		return false
	}
	if len(r.UserGroups) > 0 && !slices.ContainsFunc(ev.User.Groups, func(g string) bool { return slices.Contains(r.UserGroups, g) }) {
		return false
	}
	if len(r.Verbs) > 0 && !slices.Contains(r.Verbs, ev.Verb) {
		return false
	}
	if len(r.Namespaces) > 0 || len(r.Resources) > 0 {
		return r.matchesResource(ev.ObjectRef)
	}
	if len(r.NonResourceURLs) > 0 {
		return ev.ObjectRef == nil && r.matchesPath(ev.RequestURI)
	}
	return true
}

func (r *PolicyRule) matchesPath(requestURI string) bool {
	path := requestURI
	if u, err := url.ParseRequestURI(requestURI); err == nil {
		path = u.Path
	}
	for _, spec := range r.NonResourceURLs {
		if spec == "*" || spec == path || (strings.HasSuffix(spec, "*") && strings.HasPrefix(path, strings.TrimRight(spec, "*"))) {
			return true
		}
	}
	return false
}

func (r *PolicyRule) matchesResource(ref *ObjectReference) bool {
	if ref == nil {
		return false
	}
	if len(r.Namespaces) > 0 && !slices.Contains(r.Namespaces, ref.Namespace) {
		return false
	}
	if len(r.Resources) == 0 {
		return true
	}
	combined := ref.Resource
	if ref.Subresource != "" {
		combined += "/" + ref.Subresource
	}
	for _, gr := range r.Resources {
		if gr.Group != ref.APIGroup {
			continue
		}
		if len(gr.Resources) == 0 {
			return true
		}
		if len(gr.ResourceNames) > 0 && !slices.Contains(gr.ResourceNames, ref.Name) {
			continue
		}
		for _, res := range gr.Resources {
			switch {
			case res == "*" || res == combined:
				return true
			case ref.Subresource != "" && strings.HasPrefix(res, "*/") && ref.Subresource == strings.TrimPrefix(res, "*/"):
				return true
			case strings.HasSuffix(res, "/*") && ref.Resource == strings.TrimSuffix(res, "/*"):
				return true
			}
		}
	}
	return false
}

// SetPolicy makes the ring record events by p (nil: every event, at
// Metadata with the request body of writes).
func (r *Ring) SetPolicy(p *Policy) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.policy = p
}

// WantsResponse reports whether ev's request is recorded at
// RequestResponse, so that the API server keeps the response body.
func (r *Ring) WantsResponse(ev *Event) bool {
	r.mu.Lock()
	p := r.policy
	r.mu.Unlock()
	if p == nil {
		return false
	}
	level, _ := p.LevelFor(ev)
	return level == LevelRequestResponse
}
