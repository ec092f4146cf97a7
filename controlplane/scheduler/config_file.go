package scheduler

import (
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/glassplane/glassplane/controlplane/scheduler/framework"
)

// The API version and kind of a scheduler configuration file.
const (
	ConfigAPIVersion = "kubescheduler.config.k8s.io/v1"
	ConfigKind       = "KubeSchedulerConfiguration"
)

// defaultPreemptionName is the PostFilter plugin a profile may disable.
const defaultPreemptionName = "DefaultPreemption"

// extension points of KubeSchedulerConfiguration's plugins, besides
// multiPoint.
var extensionPoints = []string{"queueSort", "preFilter", "filter", "postFilter", "preScore", "score", "reserve", "permit", "preBind", "bind", "postBind"}

// fileConfiguration is the part of kubescheduler.config.k8s.io/v1
// KubeSchedulerConfiguration that Glassplane reads.
type fileConfiguration struct {
	APIVersion               string                 `json:"apiVersion"`
	Kind                     string                 `json:"kind"`
	Parallelism              *int32                 `json:"parallelism,omitempty"`
	PercentageOfNodesToScore *int32                 `json:"percentageOfNodesToScore,omitempty"`
	PodInitialBackoffSeconds *int64                 `json:"podInitialBackoffSeconds,omitempty"`
	PodMaxBackoffSeconds     *int64                 `json:"podMaxBackoffSeconds,omitempty"`
	LeaderElection           *fileLeaderElection    `json:"leaderElection,omitempty"`
	ClientConnection         map[string]interface{} `json:"clientConnection,omitempty"`
	Profiles                 []fileProfile          `json:"profiles,omitempty"`
}

type fileLeaderElection struct {
	LeaderElect       *bool  `json:"leaderElect,omitempty"`
	LeaseDuration     string `json:"leaseDuration,omitempty"`
	RenewDeadline     string `json:"renewDeadline,omitempty"`
	RetryPeriod       string `json:"retryPeriod,omitempty"`
	ResourceLock      string `json:"resourceLock,omitempty"`
	ResourceName      string `json:"resourceName,omitempty"`
	ResourceNamespace string `json:"resourceNamespace,omitempty"`
}

type fileProfile struct {
	SchedulerName string                   `json:"schedulerName,omitempty"`
	Plugins       map[string]filePluginSet `json:"plugins,omitempty"`
	PluginConfig  []filePluginConfig       `json:"pluginConfig,omitempty"`
}

type filePluginSet struct {
	Enabled  []filePlugin `json:"enabled,omitempty"`
	Disabled []filePlugin `json:"disabled,omitempty"`
}

type filePlugin struct {
	Name   string `json:"name"`
	Weight *int32 `json:"weight,omitempty"`
}

type filePluginConfig struct {
	Name string          `json:"name"`
	Args json.RawMessage `json:"args,omitempty"`
}

// LoadConfigFile reads a KubeSchedulerConfiguration
// (kubescheduler.config.k8s.io/v1, YAML or JSON) and applies it to cfg:
// parallelism, percentageOfNodesToScore, the pod backoffs, leader election
// and the profiles. Each profile starts from DefaultPlugins; plugins.multiPoint
// enables (or re-weighs) and disables plugins ("*" disables every default),
// score.enabled sets weights, a plugin disabled at every extension point it
// has is dropped, and disabling postFilter's DefaultPreemption turns
// preemption off. pluginConfig args are handed to each plugin to decode.
func LoadConfigFile(path string, cfg *Config) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("failed to read scheduler config %q: %w", path, err)
	}
	if err := ApplyConfigFile(data, cfg); err != nil {
		return fmt.Errorf("failed to load scheduler config %q: %w", path, err)
	}
	return nil
}

// ApplyConfigFile is LoadConfigFile on the file's contents.
func ApplyConfigFile(data []byte, cfg *Config) error {
	var fc fileConfiguration
	if err := yaml.UnmarshalStrict(data, &fc); err != nil {
		return err
	}
	if fc.APIVersion != ConfigAPIVersion || fc.Kind != ConfigKind {
		return fmt.Errorf("want apiVersion %s and kind %s, got %q and %q", ConfigAPIVersion, ConfigKind, fc.APIVersion, fc.Kind)
	}
	if fc.Parallelism != nil {
		cfg.Parallelism = int(*fc.Parallelism)
	}
	if fc.PercentageOfNodesToScore != nil {
		cfg.PercentageOfNodesToScore = int(*fc.PercentageOfNodesToScore)
	}
	if fc.PodInitialBackoffSeconds != nil {
		cfg.PodInitialBackoff = time.Duration(*fc.PodInitialBackoffSeconds) * time.Second
	}
	if fc.PodMaxBackoffSeconds != nil {
		cfg.PodMaxBackoff = time.Duration(*fc.PodMaxBackoffSeconds) * time.Second
	}
	if le := fc.LeaderElection; le != nil {
		if le.LeaderElect != nil {
			cfg.LeaderElection.LeaderElect = *le.LeaderElect
		}
		if le.ResourceLock != "" && le.ResourceLock != "leases" {
			return fmt.Errorf("leaderElection.resourceLock: Unsupported value: %q: supported values: \"leases\"", le.ResourceLock)
		}
		for _, d := range []struct {
			s   string
			dst *time.Duration
		}{{le.LeaseDuration, &cfg.LeaderElection.LeaseDuration}, {le.RenewDeadline, &cfg.LeaderElection.RenewDeadline}, {le.RetryPeriod, &cfg.LeaderElection.RetryPeriod}} {
			if d.s == "" {
				continue
			}
			v, err := time.ParseDuration(d.s)
			if err != nil {
				return fmt.Errorf("leaderElection: %w", err)
			}
			*d.dst = v
		}
		if le.ResourceName != "" {
			cfg.LeaderElection.ResourceName = le.ResourceName
		}
		if le.ResourceNamespace != "" {
			cfg.LeaderElection.ResourceNamespace = le.ResourceNamespace
		}
	}
	if len(fc.Profiles) == 0 {
		fc.Profiles = []fileProfile{{}}
	}
	cfg.Profiles = nil
	for i, fp := range fc.Profiles {
		p, err := fp.toProfile()
		if err != nil {
			return fmt.Errorf("profiles[%d]: %w", i, err)
		}
		cfg.Profiles = append(cfg.Profiles, p)
	}
	return nil
}

func (fp fileProfile) toProfile() (Profile, error) {
	p := Profile{SchedulerName: fp.SchedulerName}
	if p.SchedulerName == "" {
		p.SchedulerName = DefaultSchedulerName
	}
	for name := range fp.Plugins {
		if name != "multiPoint" && !slices.Contains(extensionPoints, name) {
			return p, fmt.Errorf("plugins: unknown extension point %q", name)
		}
	}
	plugins := DefaultPlugins()
	indexOf := func(name string) int {
		return slices.IndexFunc(plugins, func(r framework.PluginRef) bool { return r.Name == name })
	}
	enable := func(fpl filePlugin) {
		i := indexOf(fpl.Name)
		if i < 0 {
			plugins = append(plugins, framework.PluginRef{Name: fpl.Name})
			i = len(plugins) - 1
		}
		if fpl.Weight != nil {
			plugins[i].Weight = int64(*fpl.Weight)
		}
	}
	mp := fp.Plugins["multiPoint"]
	for _, d := range mp.Disabled {
		if d.Name == "*" {
			plugins = nil
			continue
		}
		if i := indexOf(d.Name); i >= 0 {
			plugins = slices.Delete(plugins, i, i+1)
		}
	}
	for _, e := range mp.Enabled {
		enable(e)
	}
	// Per extension point: Glassplane runs a plugin at every point it
	// implements, so disabling one point drops the plugin, except score,
	// which only stops it scoring.
	for _, point := range extensionPoints {
		set := fp.Plugins[point]
		for _, d := range set.Disabled {
			switch {
			case point == "postFilter" && (d.Name == defaultPreemptionName || d.Name == "*"):
				p.DisablePreemption = true
			case point == "score" && d.Name == "*":
				for i := range plugins {
					plugins[i].DisableScore = true
				}
			case point == "score":
				if i := indexOf(d.Name); i >= 0 {
					plugins[i].DisableScore = true
				}
			case d.Name == "*":
				return p, fmt.Errorf("plugins.%s.disabled: \"*\" is only supported in multiPoint, postFilter and score", point)
			default:
				if i := indexOf(d.Name); i >= 0 {
					plugins = slices.Delete(plugins, i, i+1)
				}
			}
		}
		for _, e := range set.Enabled {
			if point == "postFilter" && e.Name == defaultPreemptionName {
				p.DisablePreemption = false
				continue
			}
			if i := indexOf(e.Name); i >= 0 && point == "score" {
				plugins[i].DisableScore = false
			}
			enable(e)
		}
	}
	args := map[string]*framework.RawArgs{}
	for _, pc := range fp.PluginConfig {
		if _, dup := args[pc.Name]; dup {
			return p, fmt.Errorf("pluginConfig: duplicate entry for %q", pc.Name)
		}
		args[pc.Name] = &framework.RawArgs{Raw: pc.Args}
	}
	for i := range plugins {
		if a, ok := args[plugins[i].Name]; ok {
			plugins[i].Args = a
		}
	}
	p.Plugins = plugins
	return p, nil
}
