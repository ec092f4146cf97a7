package e2e

import (
	"encoding/json"
	"os/exec"
	"testing"
)

// pythonPVCScript creates, reads, labels, lists and deletes a
// PersistentVolumeClaim with the official Python client, and asks for one
// with a negative size, printing what it saw as JSON.
const pythonPVCScript = `
import json, sys, time
from kubernetes import client, config
config.load_kube_config(config_file=sys.argv[1])
core = client.CoreV1Api()
ns, name = "default", "py-claim"
body = client.V1PersistentVolumeClaim(
    metadata=client.V1ObjectMeta(name=name),
    spec=client.V1PersistentVolumeClaimSpec(
        access_modes=["ReadWriteOnce"],
        resources=client.V1ResourceRequirements(requests={"storage": "1Gi"})))
out = {"created": core.create_namespaced_persistent_volume_claim(ns, body).metadata.name}
read = core.read_namespaced_persistent_volume_claim(name, ns)
out["class"] = read.spec.storage_class_name
out["mode"] = read.spec.volume_mode
out["phase"] = read.status.phase
out["finalizers"] = read.metadata.finalizers
core.patch_namespaced_persistent_volume_claim(name, ns, {"metadata": {"labels": {"tier": "db"}}})
out["listed"] = [c.metadata.name for c in core.list_namespaced_persistent_volume_claim(ns, label_selector="tier=db").items]
bad = client.V1PersistentVolumeClaim(
    metadata=client.V1ObjectMeta(name="py-bad-claim"),
    spec=client.V1PersistentVolumeClaimSpec(
        access_modes=["ReadWriteOnce"],
        resources=client.V1ResourceRequirements(requests={"storage": "-1Gi"})))
try:
    core.create_namespaced_persistent_volume_claim(ns, bad)
    out["bad"] = "created"
except client.exceptions.ApiException as e:
    out["bad"] = e.status
core.delete_namespaced_persistent_volume_claim(name, ns)
# The kubernetes.io/pvc-protection finalizer holds the claim until the
# controller sees no pod uses it.
deadline = time.time() + 60
out["after_delete"] = "found"
while time.time() < deadline:
    try:
        core.read_namespaced_persistent_volume_claim(name, ns)
        time.sleep(0.5)
    except client.exceptions.ApiException as e:
        out["after_delete"] = e.status
        break
print(json.dumps(out))
`

// TestPythonClientPersistentVolumeClaim runs the official Python client's
// PersistentVolumeClaim CRUD against the shared cluster: the claim gets
// the default StorageClass and waits Pending for its first consumer.
func TestPythonClientPersistentVolumeClaim(t *testing.T) {
	python := requirePythonClient(t)
	c := SharedCluster(t)
	out, err := exec.Command(python, "-c", pythonPVCScript, c.Kubeconfig).CombinedOutput()
	if err != nil {
		t.Fatalf("python client: %v\n%s", err, out)
	}
	var got struct {
		Created     string   `json:"created"`
		Class       string   `json:"class"`
		Mode        string   `json:"mode"`
		Phase       string   `json:"phase"`
		Listed      []string `json:"listed"`
		Bad         any      `json:"bad"`
		Finalizers  []string `json:"finalizers"`
		AfterDelete any      `json:"after_delete"`
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("python client printed %q: %v", out, err)
	}
	if got.Created != "py-claim" || got.Class != "standard" || got.Mode != "Filesystem" || got.Phase != "Pending" ||
		len(got.Listed) != 1 || got.Listed[0] != "py-claim" || got.Bad != float64(422) ||
		len(got.Finalizers) != 1 || got.Finalizers[0] != "kubernetes.io/pvc-protection" || got.AfterDelete != float64(404) {
		t.Errorf("python client saw %+v", got)
	}
}
