package web

import (
	"testing"

	"github.com/glassplane/glassplane/web/source"
)

// TestEtcdModelFocus: the tree opens on the namespace of the newest write
// outside the system's namespaces, and on the selected key's.
func TestEtcdModelFocus(t *testing.T) {
	kvs := []source.KeyValue{
		{Key: "/registry/clusterrolebindings/admin", ModRevision: 2},
		{Key: "/registry/leases/team-a/lock", ModRevision: 40},
		{Key: "/registry/pods/default/old", ModRevision: 5},
		{Key: "/registry/pods/kube-system/dns", ModRevision: 30},
		{Key: "/registry/pods/team-a/web", ModRevision: 20},
	}
	tests := []struct {
		name, selected, focus string
		open                  []string // group/namespace pairs open
	}{
		{"newest user write", "", "team-a", []string{"leases/team-a", "pods/team-a"}},
		{"and the selected key", "/registry/clusterrolebindings/admin", "team-a", []string{"clusterrolebindings/", "leases/team-a", "pods/team-a"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			vm := etcdModel(kvs, tt.selected, 0)
			if vm.Focus != tt.focus {
				t.Errorf("focus = %q, want %q", vm.Focus, tt.focus)
			}
			var open []string
			for _, g := range vm.Groups {
				for _, ns := range g.Namespaces {
					if ns.Open {
						open = append(open, g.Resource+"/"+ns.Namespace)
					}
				}
				if want := g.Resource != "clusterrolebindings" || (tt.selected != "" && g.Resource == "clusterrolebindings"); g.Open != want {
					t.Errorf("group %s open = %v, want %v", g.Resource, g.Open, want)
				}
			}
			if len(open) != len(tt.open) {
				t.Fatalf("open = %q, want %q", open, tt.open)
			}
			for i := range open {
				if open[i] != tt.open[i] {
					t.Errorf("open = %q, want %q", open, tt.open)
				}
			}
		})
	}
}
