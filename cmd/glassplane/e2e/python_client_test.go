package e2e

import (
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// pythonClientScript drives a cluster with the official Python client
// (kubernetes-client/python, Debian's python3-kubernetes), reading the
// kubeconfig given as argv[1]. It creates a ConfigMap, lists it, then
// watches from the list's resourceVersion (the client sends watch=True):
// it creates a second ConfigMap, deletes the first only after the watch
// delivered the second's ADDED, and stops at the first's DELETED, so the
// watch must stream events that happen while it is open. It prints one
// JSON object with what it saw.
const pythonClientScript = `
import json, sys
from kubernetes import client, config, watch

config.load_kube_config(config_file=sys.argv[1])
v1 = client.CoreV1Api()
ns, sel = "default", "e2e-python=" + sys.argv[2]

def cm(name):
    return client.V1ConfigMap(
        metadata=client.V1ObjectMeta(name=name, labels={"e2e-python": sys.argv[2]}),
        data={"from": "python"})

a, b = "py-a-" + sys.argv[2], "py-b-" + sys.argv[2]
created = v1.create_namespaced_config_map(ns, cm(a))
listed = v1.list_namespaced_config_map(ns, label_selector=sel)
out = {
    "created": created.metadata.name,
    "listed": [i.metadata.name for i in listed.items],
    "events": [],
}
v1.create_namespaced_config_map(ns, cm(b))
w = watch.Watch()
for ev in w.stream(v1.list_namespaced_config_map, ns, label_selector=sel,
                   resource_version=listed.metadata.resource_version, timeout_seconds=120):
    name = ev["object"].metadata.name
    out["events"].append([ev["type"], name, ev["object"].data])
    if ev["type"] == "ADDED" and name == b:
        v1.delete_namespaced_config_map(a, ns)
    if ev["type"] == "DELETED" and name == a:
        w.stop()
v1.delete_namespaced_config_map(b, ns)
out["after_delete"] = [i.metadata.name for i in v1.list_namespaced_config_map(ns, label_selector=sel).items]
print(json.dumps(out))
`

// TestOfficialPythonClient runs the official Python client against the
// cluster: create, list, a streaming watch (watch=True) and delete of
// ConfigMaps, with the client's own kubeconfig loading and TLS.
func TestOfficialPythonClient(t *testing.T) {
	// Debian's python3-kubernetes is a module of the system python3, which
	// a pyenv or venv python3 earlier on PATH does not see.
	python := requirePythonClient(t)
	c := SharedCluster(t)
	id := strings.ToLower(strings.ReplaceAll(t.Name(), "Test", ""))
	out, err := exec.Command(python, "-c", pythonClientScript, c.Kubeconfig, id).CombinedOutput()
	if err != nil {
		t.Fatalf("python client: %v\n%s", err, out)
	}
	var got struct {
		Created     string   `json:"created"`
		Listed      []string `json:"listed"`
		Events      [][]any  `json:"events"`
		AfterDelete []string `json:"after_delete"`
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("python client printed %q: %v", out, err)
	}
	a, b := "py-a-"+id, "py-b-"+id
	if got.Created != a {
		t.Errorf("created %q, want %q", got.Created, a)
	}
	if len(got.Listed) != 1 || got.Listed[0] != a {
		t.Errorf("listed %v, want [%s]", got.Listed, a)
	}
	var events []string
	for _, ev := range got.Events {
		events = append(events, ev[0].(string)+" "+ev[1].(string))
		if data, _ := ev[2].(map[string]any); data["from"] != "python" {
			t.Errorf("event %v: data %v, want from=python", ev[:2], ev[2])
		}
	}
	want := []string{"ADDED " + b, "DELETED " + a}
	if strings.Join(events, ", ") != strings.Join(want, ", ") {
		t.Errorf("watch events %v, want %v", events, want)
	}
	if len(got.AfterDelete) != 0 {
		t.Errorf("after deleting both, listed %v", got.AfterDelete)
	}
}

// requirePythonClient returns Debian's python3 with the official
// Kubernetes client (python3-kubernetes); without it the test fails under
// CI and is skipped elsewhere.
func requirePythonClient(t *testing.T) string {
	t.Helper()
	const python = "/usr/bin/python3"
	if err := exec.Command(python, "-c", "import kubernetes").Run(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s with python3-kubernetes is required and is missing (scripts/install-deps.sh installs it): %v", python, err)
		}
		t.Skipf("%s with python3-kubernetes not installed (run scripts/install-deps.sh): %v", python, err)
	}
	return python
}
