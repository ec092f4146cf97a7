package e2e

import (
	"strings"
	"testing"
)

// TestQueryParametersAsKubeReadsThem drives kubectl at the queries
// kube-apiserver decodes with its parameter codec: watch=True streams a
// watch, a bad resourceVersion on a GET is a 400, and a create whose
// object carries a resourceVersion is refused.
func TestQueryParametersAsKubeReadsThem(t *testing.T) {
	c := SharedCluster(t)
	c.MustKubectl(t, "", "create", "configmap", "e2e-query", "-n", "default")
	t.Cleanup(func() { c.Kubectl(t, "", "delete", "configmap", "e2e-query", "-n", "default") })

	out := c.MustKubectl(t, "", "get", "--raw", "/api/v1/namespaces/default/configmaps?watch=True&timeoutSeconds=1")
	if !strings.Contains(out, `"type":"ADDED"`) || !strings.Contains(out, `"e2e-query"`) {
		t.Errorf("watch=True did not stream a watch: %.300s", out)
	}
	out, err := c.Kubectl(t, "", "get", "--raw", "/api/v1/namespaces/default/configmaps/e2e-query?resourceVersion=garbage")
	if err == nil || !strings.Contains(out, "invalid resource version") {
		t.Errorf("GET with resourceVersion=garbage: %v %s", err, out)
	}
	// kubectl create -f clears the resourceVersion itself: --raw sends it.
	manifest := `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"e2e-query-rv","resourceVersion":"5"}}`
	out, err = c.Kubectl(t, manifest, "create", "--raw", "/api/v1/namespaces/default/configmaps", "-f", "-")
	if err == nil || !strings.Contains(out, "resourceVersion should not be set on objects to be created") {
		t.Errorf("create with a resourceVersion: %v %s", err, out)
	}
}
