package web

import "k8s.io/apimachinery/pkg/runtime/schema"

// dataPathNotes are what the pages of the kinds Glassplane stores and
// serves but does not act on say of them, as README's "What Glassplane
// does not do" does, each with its i18n key.
var dataPathNotes = map[schema.GroupResource]struct{ text, key string }{
	{Group: "networking.k8s.io", Resource: "ingresses"}: {
		"Glassplane stores and serves Ingresses but does not implement their data path: no ingress controller runs, so no traffic is routed by their rules.",
		"datapath.ingress",
	},
	{Group: "networking.k8s.io", Resource: "networkpolicies"}: {
		"Glassplane stores and serves NetworkPolicies but does not implement their data path: the pod network does not filter traffic by them.",
		"datapath.networkpolicy",
	},
}

// dataPathNote is the note of a resource's pages and its i18n key, or ""
// for a resource whose objects the cluster acts on.
func dataPathNote(group, resource string) (text, key string) {
	n := dataPathNotes[schema.GroupResource{Group: group, Resource: resource}]
	return n.text, n.key
}
