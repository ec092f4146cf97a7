package framework

import "k8s.io/apimachinery/pkg/runtime"

// PluginRef enables one plugin in a profile.
type PluginRef struct {
	// Name is the plugin's registry name.
	Name string
	// Weight multiplies the plugin's normalized scores; 0 means 1. It only
	// matters for score plugins.
	Weight int64
	// Args are the plugin's arguments; nil means its defaults.
	Args runtime.Object
	// DisableScore keeps a score plugin out of scoring while its other
	// extension points still run.
	DisableScore bool
}

// Profile is a named set of enabled plugins, like one entry of
// KubeSchedulerConfiguration.profiles with everything under multiPoint: each
// plugin is built once and runs at every extension point it implements, in
// the order listed.
type Profile struct {
	// SchedulerName is the spec.schedulerName the profile answers to.
	SchedulerName string
	Plugins       []PluginRef
}
