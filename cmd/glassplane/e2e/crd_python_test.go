package e2e

import (
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
)

// pythonCustomObjectsScript drives custom resources with the official
// Python client's CustomObjectsApi, reading the kubeconfig given as
// argv[1]: it creates an object, lists it, watches from the list's
// resourceVersion while it creates a second and deletes the first, and
// prints one JSON object with what it saw.
const pythonCustomObjectsScript = `
import json, sys
from kubernetes import client, config, watch

config.load_kube_config(config_file=sys.argv[1])
api = client.CustomObjectsApi()
g, v, ns, plural = "python.example.com", "v1", "default", "gadgets"

def gadget(name, size):
    return {"apiVersion": g + "/" + v, "kind": "Gadget",
            "metadata": {"name": name}, "spec": {"size": size, "extra": "pruned"}}

created = api.create_namespaced_custom_object(g, v, ns, plural, gadget("py-a", 2))
listed = api.list_namespaced_custom_object(g, v, ns, plural)
out = {
    "created": [created["metadata"]["name"], created["spec"]],
    "listed": [i["metadata"]["name"] for i in listed["items"]],
    "events": [],
}
try:
    api.create_namespaced_custom_object(g, v, ns, plural, gadget("py-bad", -1))
    out["refused"] = None
except client.exceptions.ApiException as e:
    out["refused"] = [e.status, json.loads(e.body)["details"]["causes"][0]["field"]]
api.create_namespaced_custom_object(g, v, ns, plural, gadget("py-b", 3))
w = watch.Watch()
for ev in w.stream(api.list_namespaced_custom_object, g, v, ns, plural,
                   resource_version=listed["metadata"]["resourceVersion"], timeout_seconds=120):
    name = ev["object"]["metadata"]["name"]
    out["events"].append([ev["type"], name])
    if ev["type"] == "ADDED" and name == "py-b":
        api.delete_namespaced_custom_object(g, v, ns, plural, "py-a")
    if ev["type"] == "DELETED" and name == "py-a":
        w.stop()
print(json.dumps(out))
`

const gadgetCRD = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: gadgets.python.example.com
spec:
  group: python.example.com
  scope: Namespaced
  names: {plural: gadgets, singular: gadget, kind: Gadget}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              size: {type: integer, minimum: 0}
`

// TestCustomObjectsWithPythonClient runs the official Python client's
// CustomObjectsApi against a CRD: create (pruned), list, a 422 with its
// field path, and a streaming watch.
func TestCustomObjectsWithPythonClient(t *testing.T) {
	python := requirePythonClient(t)
	c := SharedCluster(t)
	c.MustKubectl(t, gadgetCRD, "apply", "-f", "-")
	t.Cleanup(func() { c.Kubectl(t, "", "delete", "crd", "gadgets.python.example.com", "--wait=false") })
	c.MustKubectl(t, "", "wait", "--for=condition=Established", "--timeout=30s", "crd/gadgets.python.example.com")
	out, err := exec.Command(python, "-c", pythonCustomObjectsScript, c.Kubeconfig).CombinedOutput()
	if err != nil {
		t.Fatalf("python client: %v\n%s", err, out)
	}
	var got struct {
		Created []any      `json:"created"`
		Listed  []string   `json:"listed"`
		Refused []any      `json:"refused"`
		Events  [][]string `json:"events"`
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("python client printed %q: %v", out, err)
	}
	if spec, _ := got.Created[1].(map[string]any); got.Created[0] != "py-a" || spec["extra"] != nil || spec["size"] != float64(2) {
		t.Errorf("created %v, want py-a with spec.size 2 and spec.extra pruned", got.Created)
	}
	if strings.Join(got.Listed, ",") != "py-a" {
		t.Errorf("listed %v", got.Listed)
	}
	if len(got.Refused) != 2 || got.Refused[0] != float64(422) || got.Refused[1] != "spec.size" {
		t.Errorf("size -1: %v, want 422 on spec.size", got.Refused)
	}
	var events []string
	for _, ev := range got.Events {
		events = append(events, strings.Join(ev, " "))
	}
	if want := "ADDED py-b, DELETED py-a"; strings.Join(events, ", ") != want {
		t.Errorf("watch events %v, want %s", events, want)
	}
}
