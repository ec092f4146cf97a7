package e2e

import (
	"encoding/json"
	"os/exec"
	"testing"
)

// pythonStatefulSetScript creates, reads, scales (the scale subresource),
// lists and deletes a StatefulSet with the official Python client, waiting
// for its pods to be ready, and prints what it saw as JSON.
const pythonStatefulSetScript = `
import json, sys, time
from kubernetes import client, config
config.load_kube_config(config_file=sys.argv[1])
apps = client.AppsV1Api()
ns, name = "default", "py-sts"
labels = {"app": name}
body = client.V1StatefulSet(
    metadata=client.V1ObjectMeta(name=name),
    spec=client.V1StatefulSetSpec(
        service_name=name, replicas=1,
        selector=client.V1LabelSelector(match_labels=labels),
        template=client.V1PodTemplateSpec(
            metadata=client.V1ObjectMeta(labels=labels),
            spec=client.V1PodSpec(
                node_selector={"node.glassplane.io/runtime": "simulated"},
                containers=[client.V1Container(name="main", image="busybox:1.36", command=["sleep", "3600"])]))))
out = {"created": apps.create_namespaced_stateful_set(ns, body).metadata.name}
read = apps.read_namespaced_stateful_set(name, ns)
out["policy"] = read.spec.pod_management_policy
out["strategy"] = read.spec.update_strategy.type
apps.patch_namespaced_stateful_set_scale(name, ns, {"spec": {"replicas": 2}})
deadline = time.time() + 120
while time.time() < deadline:
    st = apps.read_namespaced_stateful_set_status(name, ns).status
    if st.ready_replicas == 2:
        break
    time.sleep(0.5)
out["ready"] = st.ready_replicas
out["scale"] = apps.read_namespaced_stateful_set_scale(name, ns).spec.replicas
out["listed"] = [s.metadata.name for s in apps.list_namespaced_stateful_set(ns, label_selector="").items if s.metadata.name == name]
apps.delete_namespaced_stateful_set(name, ns)
try:
    apps.read_namespaced_stateful_set(name, ns)
    out["after_delete"] = "found"
except client.exceptions.ApiException as e:
    out["after_delete"] = e.status
print(json.dumps(out))
`

// TestPythonClientStatefulSet runs the official Python client's
// StatefulSet CRUD against the shared cluster.
func TestPythonClientStatefulSet(t *testing.T) {
	python := requirePythonClient(t)
	c := SharedCluster(t)
	out, err := exec.Command(python, "-c", pythonStatefulSetScript, c.Kubeconfig).CombinedOutput()
	if err != nil {
		t.Fatalf("python client: %v\n%s", err, out)
	}
	var got struct {
		Created     string   `json:"created"`
		Policy      string   `json:"policy"`
		Strategy    string   `json:"strategy"`
		Ready       int      `json:"ready"`
		Scale       int      `json:"scale"`
		Listed      []string `json:"listed"`
		AfterDelete any      `json:"after_delete"`
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("python client printed %q: %v", out, err)
	}
	if got.Created != "py-sts" || got.Policy != "OrderedReady" || got.Strategy != "RollingUpdate" || got.Ready != 2 || got.Scale != 2 ||
		len(got.Listed) != 1 || got.AfterDelete != float64(404) {
		t.Errorf("python client saw %+v", got)
	}
}
