package rbac

import (
	"fmt"
	"slices"
	"strings"

	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/glassplane/glassplane/controlplane/apiserver/auth"
)

// RuleAllows reports whether rule allows the request described by a, as
// Kubernetes' rbac.RuleAllows does.
func RuleAllows(a auth.Attributes, rule *rbacv1.PolicyRule) bool {
	if a.ResourceRequest {
		combined := a.Resource
		if a.Subresource != "" {
			combined += "/" + a.Subresource
		}
		return VerbMatches(rule, a.Verb) &&
			APIGroupMatches(rule, a.APIGroup) &&
			ResourceMatches(rule, combined, a.Subresource) &&
			ResourceNameMatches(rule, a.Name)
	}
	return VerbMatches(rule, a.Verb) && NonResourceURLMatches(rule, a.Path)
}

// RulesAllow reports whether any of rules allows a.
func RulesAllow(a auth.Attributes, rules ...rbacv1.PolicyRule) bool {
	for i := range rules {
		if RuleAllows(a, &rules[i]) {
			return true
		}
	}
	return false
}

// VerbMatches reports whether rule names verb or "*".
func VerbMatches(rule *rbacv1.PolicyRule, verb string) bool {
	return slices.Contains(rule.Verbs, rbacv1.VerbAll) || slices.Contains(rule.Verbs, verb)
}

// APIGroupMatches reports whether rule names group or "*".
func APIGroupMatches(rule *rbacv1.PolicyRule, group string) bool {
	return slices.Contains(rule.APIGroups, rbacv1.APIGroupAll) || slices.Contains(rule.APIGroups, group)
}

// ResourceMatches reports whether rule names the combined resource
// ("pods/log"), "*", or "*/<subresource>".
func ResourceMatches(rule *rbacv1.PolicyRule, combined, subresource string) bool {
	for _, r := range rule.Resources {
		switch {
		case r == rbacv1.ResourceAll, r == combined:
			return true
		case subresource != "" && len(r) == len(subresource)+2 && strings.HasPrefix(r, "*/") && strings.HasSuffix(r, subresource):
			return true
		}
	}
	return false
}

// ResourceNameMatches reports whether rule allows name: a rule without
// resourceNames allows every name.
func ResourceNameMatches(rule *rbacv1.PolicyRule, name string) bool {
	return len(rule.ResourceNames) == 0 || slices.Contains(rule.ResourceNames, name)
}

// NonResourceURLMatches reports whether rule names path, "*", or a prefix of
// it ending in "*".
func NonResourceURLMatches(rule *rbacv1.PolicyRule, path string) bool {
	for _, u := range rule.NonResourceURLs {
		switch {
		case u == rbacv1.NonResourceAll, u == path:
			return true
		case strings.HasSuffix(u, "*") && strings.HasPrefix(path, strings.TrimRight(u, "*")):
			return true
		}
	}
	return false
}

// Covers reports whether owner holds every permission of servant, and
// returns the permissions it lacks, each broken down to one verb on one
// resource (or URL), as Kubernetes' validation.Covers does.
func Covers(owner, servant []rbacv1.PolicyRule) (bool, []rbacv1.PolicyRule) {
	var missing []rbacv1.PolicyRule
	for _, rule := range servant {
		for _, sub := range breakdownRule(rule) {
			if !slices.ContainsFunc(owner, func(o rbacv1.PolicyRule) bool { return ruleCovers(o, sub) }) {
				missing = append(missing, sub)
			}
		}
	}
	return len(missing) == 0, missing
}

// breakdownRule splits rule into rules of one group, resource, verb and name
// (or one URL and verb).
func breakdownRule(rule rbacv1.PolicyRule) []rbacv1.PolicyRule {
	var out []rbacv1.PolicyRule
	for _, group := range rule.APIGroups {
		for _, resource := range rule.Resources {
			for _, verb := range rule.Verbs {
				if len(rule.ResourceNames) == 0 {
					out = append(out, rbacv1.PolicyRule{APIGroups: []string{group}, Resources: []string{resource}, Verbs: []string{verb}})
					continue
				}
				for _, name := range rule.ResourceNames {
					out = append(out, rbacv1.PolicyRule{APIGroups: []string{group}, Resources: []string{resource}, ResourceNames: []string{name}, Verbs: []string{verb}})
				}
			}
		}
	}
	for _, u := range rule.NonResourceURLs {
		for _, verb := range rule.Verbs {
			out = append(out, rbacv1.PolicyRule{NonResourceURLs: []string{u}, Verbs: []string{verb}})
		}
	}
	return out
}

// ruleCovers reports whether owner covers the broken-down rule sub.
func ruleCovers(owner, sub rbacv1.PolicyRule) bool {
	verbs := slices.Contains(owner.Verbs, rbacv1.VerbAll) || containsAll(owner.Verbs, sub.Verbs)
	groups := slices.Contains(owner.APIGroups, rbacv1.APIGroupAll) || containsAll(owner.APIGroups, sub.APIGroups)
	resources := resourcesCover(owner.Resources, sub.Resources)
	urls := urlsCover(owner.NonResourceURLs, sub.NonResourceURLs)
	names := len(owner.ResourceNames) == 0 || (len(sub.ResourceNames) > 0 && containsAll(owner.ResourceNames, sub.ResourceNames))
	return verbs && groups && resources && urls && names
}

func containsAll(have, want []string) bool {
	for _, w := range want {
		if !slices.Contains(have, w) {
			return false
		}
	}
	return true
}

// resourcesCover reports whether owner covers every resource in want,
// honouring "*", "*/sub" and "res/*".
func resourcesCover(owner, want []string) bool {
	if slices.Contains(owner, rbacv1.ResourceAll) {
		return true
	}
	for _, w := range want {
		if slices.Contains(owner, w) {
			continue
		}
		res, sub, hasSub := strings.Cut(w, "/")
		if hasSub && (slices.Contains(owner, res+"/*") || slices.Contains(owner, "*/"+sub)) {
			continue
		}
		return false
	}
	return true
}

// urlsCover reports whether owner covers every URL in want, honouring "*"
// and trailing-"*" prefixes.
func urlsCover(owner, want []string) bool {
	for _, w := range want {
		if !slices.ContainsFunc(owner, func(o string) bool {
			return o == rbacv1.NonResourceAll || o == w || (strings.HasSuffix(o, "*") && strings.HasPrefix(w, strings.TrimRight(o, "*")))
		}) {
			return false
		}
	}
	return true
}

// CompactRules merges rules that differ only in their verbs, as Kubernetes'
// CompactRules does for the escalation message.
func CompactRules(rules []rbacv1.PolicyRule) []rbacv1.PolicyRule {
	var out []rbacv1.PolicyRule
	index := map[string]int{}
	for _, r := range rules {
		k := fmt.Sprintf("%q|%q|%q|%q", r.APIGroups, r.Resources, r.ResourceNames, r.NonResourceURLs)
		if i, ok := index[k]; ok {
			for _, v := range r.Verbs {
				if !slices.Contains(out[i].Verbs, v) {
					out[i].Verbs = append(out[i].Verbs, v)
				}
			}
			continue
		}
		index[k] = len(out)
		out = append(out, *r.DeepCopy())
	}
	return out
}

// CompactString renders a rule as Kubernetes' rbac CompactString does:
// {APIGroups:[""], Resources:["pods"], Verbs:["get"]}.
func CompactString(r rbacv1.PolicyRule) string {
	var parts []string
	if len(r.APIGroups) > 0 {
		parts = append(parts, fmt.Sprintf("APIGroups:%q", r.APIGroups))
	}
	if len(r.Resources) > 0 {
		parts = append(parts, fmt.Sprintf("Resources:%q", r.Resources))
	}
	if len(r.NonResourceURLs) > 0 {
		parts = append(parts, fmt.Sprintf("NonResourceURLs:%q", r.NonResourceURLs))
	}
	if len(r.ResourceNames) > 0 {
		parts = append(parts, fmt.Sprintf("ResourceNames:%q", r.ResourceNames))
	}
	if len(r.Verbs) > 0 {
		parts = append(parts, fmt.Sprintf("Verbs:%q", r.Verbs))
	}
	return "{" + strings.Join(parts, ", ") + "}"
}
