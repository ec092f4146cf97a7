package web

import (
	"context"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/glassplane/glassplane/web/demo"
)

// TestCustomResourceDemoAgainstAnAPIServer plays the custom-resource demo
// against a real API server, in English and in Korean: the CRD becomes
// Established, discovery lists widgets, a Widget is stored at its
// /registry/<group>/<plural>/ key, the schema refuses a bad one with a
// 422 naming spec.size and spec.color, and deleting the CRD takes it out
// of discovery.
func TestCustomResourceDemoAgainstAnAPIServer(t *testing.T) {
	e := newAPIEnv(t)
	d, ok := demo.Find("custom-resource")
	if !ok {
		t.Fatal("no custom-resource demo")
	}
	for _, lang := range []string{"en", "ko"} {
		t.Run(lang, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*deadline)
			defer cancel()
			var results []string
			err := demo.Run(ctx, d, &demo.Env{Client: e.client, Config: e.cfg, Namespace: "default", Timeout: deadline}, lang, func(l demo.Line) {
				if l.Result != "" || l.Err != "" {
					results = append(results, l.Result+l.Err)
				}
			})
			if err != nil {
				t.Fatalf("Run = %v (results %q)", err, results)
			}
			if len(results) != len(d.Steps) {
				t.Fatalf("results %q", results)
			}
			for i, want := range [][]string{
				{"widgets.demo.glassplane.io", "Established=True"},
				{"demo.glassplane.io/v1", "widgets (kind Widget, shortNames wdg, namespaced true)"},
				{"widget.demo.glassplane.io/small-red", "/registry/demo.glassplane.io/widgets/default/small-red"},
				{"422 Invalid", "spec.size", "spec.color", `"purple"`},
				{"widgets.demo.glassplane.io"},
			} {
				for _, w := range want {
					if !strings.Contains(results[i], w) {
						t.Errorf("step %d: %q lacks %q", i+1, results[i], w)
					}
				}
			}
			// Discovery drops the group soon after the CRD is gone (as in
			// kube-apiserver, not in the same request).
			err = wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, deadline, true, func(context.Context) (bool, error) {
				_, err := e.client.Discovery().ServerResourcesForGroupVersion("demo.glassplane.io/v1")
				return err != nil, nil
			})
			if err != nil {
				t.Errorf("discovery still serves demo.glassplane.io/v1 after the demo: %v", err)
			}
			// The dashboard's kinds follow the CRD's deletion.
			err = wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, deadline, true, func(context.Context) (bool, error) {
				_, known := kinds.byResource("widgets.demo.glassplane.io")
				return !known, nil
			})
			if err != nil {
				t.Errorf("the dashboard still maps widgets.demo.glassplane.io after its CRD went: %v", err)
			}
		})
	}
}
