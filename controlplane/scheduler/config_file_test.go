package scheduler

import (
	"strings"
	"testing"
	"time"

	"github.com/glassplane/glassplane/controlplane/scheduler/framework"
	"github.com/glassplane/glassplane/controlplane/scheduler/plugins/imagelocality"
	"github.com/glassplane/glassplane/controlplane/scheduler/plugins/noderesources"
	"github.com/glassplane/glassplane/controlplane/scheduler/plugins/tainttoleration"
)

func pluginByName(refs []framework.PluginRef, name string) (framework.PluginRef, bool) {
	for _, r := range refs {
		if r.Name == name {
			return r, true
		}
	}
	return framework.PluginRef{}, false
}

func TestApplyConfigFile(t *testing.T) {
	const file = `
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
parallelism: 8
podInitialBackoffSeconds: 2
leaderElection:
  leaderElect: true
  leaseDuration: 5s
profiles:
- schedulerName: default-scheduler
  plugins:
    multiPoint:
      enabled:
      - name: TaintToleration
        weight: 7
    score:
      disabled:
      - name: ImageLocality
  pluginConfig:
  - name: NodeResourcesFit
    args:
      scoringStrategy:
        type: MostAllocated
- schedulerName: bin-packer
  plugins:
    multiPoint:
      disabled:
      - name: NodeResourcesBalancedAllocation
    postFilter:
      disabled:
      - name: DefaultPreemption
`
	var cfg Config
	if err := ApplyConfigFile([]byte(file), &cfg); err != nil {
		t.Fatal(err)
	}
	if cfg.Parallelism != 8 || cfg.PodInitialBackoff != 2*time.Second || !cfg.LeaderElection.LeaderElect || cfg.LeaderElection.LeaseDuration != 5*time.Second {
		t.Errorf("top-level settings not applied: %+v", cfg)
	}
	if len(cfg.Profiles) != 2 {
		t.Fatalf("%d profiles, want 2", len(cfg.Profiles))
	}
	def, packer := cfg.Profiles[0], cfg.Profiles[1]
	t.Run("weights from multiPoint", func(t *testing.T) {
		if r, _ := pluginByName(def.Plugins, tainttoleration.Name); r.Weight != 7 {
			t.Errorf("TaintToleration weight %d, want 7", r.Weight)
		}
	})
	t.Run("score disabled keeps the plugin without scoring", func(t *testing.T) {
		if r, ok := pluginByName(def.Plugins, imagelocality.Name); !ok || !r.DisableScore {
			t.Errorf("ImageLocality = %+v, %v", r, ok)
		}
	})
	t.Run("plugin args", func(t *testing.T) {
		r, _ := pluginByName(def.Plugins, noderesources.Name)
		if raw, ok := r.Args.(*framework.RawArgs); !ok || !strings.Contains(string(raw.Raw), "MostAllocated") {
			t.Errorf("NodeResourcesFit args = %#v", r.Args)
		}
	})
	t.Run("second profile", func(t *testing.T) {
		if packer.SchedulerName != "bin-packer" || !packer.DisablePreemption {
			t.Errorf("profile = %+v", packer)
		}
		if _, ok := pluginByName(packer.Plugins, noderesources.BalancedAllocationName); ok {
			t.Error("NodeResourcesBalancedAllocation still enabled")
		}
	})
	t.Run("the profiles build", func(t *testing.T) {
		client, _ := newFakeClient(t)
		if _, err := New(cfg, client); err != nil {
			t.Fatal(err)
		}
	})
}

func TestApplyConfigFileErrors(t *testing.T) {
	tests := []struct{ name, file, want string }{
		{"wrong kind", "apiVersion: v1\nkind: ConfigMap\n", "want apiVersion"},
		{"unknown field", "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nnope: 1\n", "unknown field"},
		{"unknown extension point", "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nprofiles:\n- plugins:\n    nope: {}\n", "unknown extension point"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var cfg Config
			if err := ApplyConfigFile([]byte(tt.file), &cfg); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v, want %q", err, tt.want)
			}
		})
	}
	t.Run("bad plugin args fail New", func(t *testing.T) {
		var cfg Config
		file := "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nprofiles:\n- pluginConfig:\n  - name: NodeResourcesFit\n    args: {scoringStrategy: {type: Nope}}\n"
		if err := ApplyConfigFile([]byte(file), &cfg); err != nil {
			t.Fatal(err)
		}
		client, _ := newFakeClient(t)
		if _, err := New(cfg, client); err == nil || !strings.Contains(err.Error(), "Nope") {
			t.Errorf("err = %v, want the bad strategy named", err)
		}
	})
}

func TestSecondProfileSchedulesItsPods(t *testing.T) {
	var cfg Config
	file := "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\nprofiles:\n- schedulerName: default-scheduler\n- schedulerName: my-scheduler\n"
	if err := ApplyConfigFile([]byte(file), &cfg); err != nil {
		t.Fatal(err)
	}
	other := testPod("other", "100m")
	other.Spec.SchedulerName = "my-scheduler"
	client, recorded := newFakeClient(t, testNode("node-1", "2"), other, testPod("mine", "100m"))
	s, err := New(cfg, client)
	if err != nil {
		t.Fatal(err)
	}
	runScheduler(t, s)
	eventually(t, "both pods bound", func() bool { return len(recorded.get()) == 2 })
}
