package e2e

import (
	"strings"
	"testing"
)

// TestDemoCustomResource plays the custom-resource demo through the binary
// on the shared cluster: the CRD is Established, discovery lists widgets,
// a Widget is stored under /registry/demo.glassplane.io/widgets/, the
// schema refuses a bad one with a 422 naming its fields, and the CRD is
// gone afterwards (kubectl no longer finds it nor its resource).
func TestDemoCustomResource(t *testing.T) {
	c := SharedCluster(t)
	out, err := playDemo(t, c, "custom-resource")
	if err != nil {
		t.Fatalf("glassplane demo run custom-resource: %v\n%s", err, out)
	}
	for _, want := range []string{
		"customresourcedefinition.apiextensions.k8s.io/widgets.demo.glassplane.io created: NamesAccepted=True, Established=True",
		"api-resources for demo.glassplane.io/v1: widgets (kind Widget, shortNames wdg, namespaced true)",
		"stored at /registry/demo.glassplane.io/widgets/glassplane-demo-custom-resource/small-red",
		"422 Invalid", "spec.size", "spec.color",
		"customresourcedefinition.apiextensions.k8s.io/widgets.demo.glassplane.io deleted",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the demo said:\n%s\nwant %q", out, want)
		}
	}
	if got, err := c.Kubectl(t, "", "get", "crd", "widgets.demo.glassplane.io"); err == nil || !strings.Contains(got, "NotFound") {
		t.Errorf("kubectl get crd after the demo: %v\n%s", err, got)
	}
	if got, _ := c.Kubectl(t, "", "api-resources", "--api-group", "demo.glassplane.io"); strings.Contains(got, "widgets") {
		t.Errorf("kubectl api-resources still lists widgets:\n%s", got)
	}
}
