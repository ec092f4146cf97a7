package controllers

import (
	"strings"
	"testing"
)

// TestEnabledControllers reads --controllers as kube-controller-manager
// does.
func TestEnabledControllers(t *testing.T) {
	for _, tc := range []struct {
		list     []string
		on, off  []string
		errorHas string
	}{
		{list: nil, on: []string{"deployment-controller", "statefulset-controller"}},
		{list: []string{"*"}, on: []string{"cronjob-controller"}},
		{list: []string{"*", "-cronjob-controller"}, on: []string{"job-controller"}, off: []string{"cronjob-controller"}},
		{list: []string{"job-controller"}, on: []string{"job-controller"}, off: []string{"deployment-controller"}},
		{list: []string{"-job-controller", "job-controller"}, off: []string{"job-controller"}},
		{list: []string{"*", "-statefulset"}, errorHas: `"statefulset" is not in the list of known controllers`},
	} {
		enabled, err := enabledControllers(tc.list)
		if tc.errorHas != "" {
			if err == nil || !strings.Contains(err.Error(), tc.errorHas) {
				t.Errorf("%q: err = %v, want %q", tc.list, err, tc.errorHas)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%q: %v", tc.list, err)
		}
		for _, n := range tc.on {
			if !enabled(n) {
				t.Errorf("%q: %s off, want on", tc.list, n)
			}
		}
		for _, n := range tc.off {
			if enabled(n) {
				t.Errorf("%q: %s on, want off", tc.list, n)
			}
		}
	}
	if n := len(KnownControllers()); n != 21 {
		t.Errorf("KnownControllers() has %d names, want 21", n)
	}
}
