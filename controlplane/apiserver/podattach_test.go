package apiserver_test

import (
	"net/http"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestPodsAttachIsServed(t *testing.T) {
	ctx := ctxT(t)
	resources, err := shared.client.Discovery().ServerResourcesForGroupVersion("v1")
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, r := range resources.APIResources {
		if r.Name == "pods/attach" {
			found = r.Kind == "PodAttachOptions" && strings.Join(r.Verbs, ",") == "create,get"
		}
	}
	if !found {
		t.Errorf("discovery of v1 lacks pods/attach (kind PodAttachOptions, verbs create and get)")
	}
	ns := shared.namespace(t)
	if _, err := shared.client.CoreV1().Pods(ns).Create(ctx, testPod("waiting"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// Like exec, attach goes to the pod's node agent (this test server has
	// no client identity for node agents, so both say so).
	for _, method := range []string{http.MethodGet, http.MethodPost} {
		exec, execBody := shared.do(t, method, "/api/v1/namespaces/"+ns+"/pods/waiting/exec?container=c&stdout=true&command=true", "", nil)
		attach, attachBody := shared.do(t, method, "/api/v1/namespaces/"+ns+"/pods/waiting/attach?container=c&stdout=true", "", nil)
		if attach.StatusCode != exec.StatusCode || attachBody != execBody || attach.StatusCode == http.StatusNotFound {
			t.Errorf("%s pods/attach: %d %s; pods/exec: %d %s; want the same way to the node", method, attach.StatusCode, attachBody, exec.StatusCode, execBody)
		}
	}
	resp, body := shared.do(t, http.MethodDelete, "/api/v1/namespaces/"+ns+"/pods/waiting/attach", "", nil)
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("DELETE pods/attach: %d %s, want 405", resp.StatusCode, body)
	}
}
