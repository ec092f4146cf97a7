package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// claimPod is a pod on the containerd node that mounts claim at /data and
// runs script.
func claimPod(name, claim, script string, policy corev1.RestartPolicy) *corev1.Pod {
	pod := onContainerdNode(name, policy, corev1.Container{Name: "main", Image: demoImage,
		Command:      []string{"sh", "-c", script},
		VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}})
	pod.Spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
		PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim}}}}
	return pod
}

func claimManifest(name, class, size string) string {
	m := "apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata:\n  name: " + name + "\nspec:\n  accessModes: [ReadWriteOnce]\n  resources:\n    requests:\n      storage: " + size + "\n"
	if class != "" {
		m += "  storageClassName: " + class + "\n"
	}
	return m
}

func getClaim(c *Cluster, name string) (*corev1.PersistentVolumeClaim, error) {
	return c.Client.CoreV1().PersistentVolumeClaims("default").Get(context.Background(), name, metav1.GetOptions{})
}

// TestStorageLocalPathClaim: a claim without a class gets the default
// class standard and waits for its first consumer; the pod that uses it is
// scheduled to the containerd node, the local-path provisioner makes a
// volume in that node's data directory, the pod writes a file, and a new
// pod reads it after the first is deleted. Deleting the claim releases the
// volume, which is deleted (reclaim Delete) with its directory.
func TestStorageLocalPathClaim(t *testing.T) {
	requireTool(t, "containerd", "real containers")
	c := SharedCluster(t)
	c.MustKubectl(t, claimManifest("notes", "", "64Mi"), "apply", "-f", "-")
	t.Cleanup(func() {
		_, _ = c.Kubectl(t, "", "delete", "pvc", "notes", "--ignore-not-found", "--wait=false")
	})
	if out := c.MustKubectl(t, "", "get", "pvc", "notes", "-o", "jsonpath={.spec.storageClassName} {.status.phase}"); out != "standard Pending" {
		t.Fatalf("new claim: class and phase %q, want \"standard Pending\"", out)
	}
	Eventually(t, 30*time.Second, "the WaitForFirstConsumer event", func() error {
		out := c.MustKubectl(t, "", "get", "events", "--field-selector", "involvedObject.name=notes", "-o", "jsonpath={range .items[*]}{.reason}: {.message}{\"\\n\"}{end}")
		if !strings.Contains(out, "WaitForFirstConsumer: waiting for first consumer to be created before binding") {
			return fmt.Errorf("events: %q", out)
		}
		return nil
	})

	createPod(t, c, claimPod("notes-writer", "notes", "echo written-by-notes-writer > /data/msg && sleep 3600", corev1.RestartPolicyAlways))
	waitPodPhase(t, c, "default", "notes-writer", corev1.PodRunning, 3*time.Minute)
	claim, err := getClaim(c, "notes")
	if err != nil {
		t.Fatal(err)
	}
	if claim.Status.Phase != corev1.ClaimBound || claim.Spec.VolumeName != "pvc-"+string(claim.UID) {
		t.Fatalf("claim after the pod started: phase %s, volume %q", claim.Status.Phase, claim.Spec.VolumeName)
	}
	pv, err := c.Client.CoreV1().PersistentVolumes().Get(context.Background(), claim.Spec.VolumeName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	writer, err := getPod(t, c, "notes-writer")
	if err != nil {
		t.Fatal(err)
	}
	node, err := c.Client.CoreV1().Nodes().Get(context.Background(), writer.Spec.NodeName, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	dir := pv.Spec.HostPath.Path
	if want := filepath.Join(node.Annotations["glassplane.io/local-path-dir"], pv.Name); dir != want || claim.Annotations["volume.kubernetes.io/selected-node"] != node.Name {
		t.Errorf("volume at %q (want %q), selected node %q (want %q)", dir, want, claim.Annotations["volume.kubernetes.io/selected-node"], node.Name)
	}
	Eventually(t, 30*time.Second, "the file on the node", func() error {
		b, err := os.ReadFile(filepath.Join(dir, "msg"))
		if err != nil {
			return err
		}
		if strings.TrimSpace(string(b)) != "written-by-notes-writer" {
			return fmt.Errorf("msg holds %q", b)
		}
		return nil
	})

	out := c.MustKubectl(t, "", "get", "pv,pvc,sc")
	words := strings.Join(strings.Fields(out), " ")
	for _, want := range []string{
		"NAME CAPACITY ACCESS MODES RECLAIM POLICY STATUS CLAIM STORAGECLASS VOLUMEATTRIBUTESCLASS REASON AGE",
		"64Mi RWO Delete Bound default/notes standard <unset>",
		"NAME STATUS VOLUME CAPACITY ACCESS MODES STORAGECLASS VOLUMEATTRIBUTESCLASS AGE",
		"persistentvolumeclaim/notes Bound " + pv.Name + " 64Mi RWO standard <unset>",
		"NAME PROVISIONER RECLAIMPOLICY VOLUMEBINDINGMODE ALLOWVOLUMEEXPANSION AGE",
		"storageclass.storage.k8s.io/standard (default) glassplane.io/local-path Delete WaitForFirstConsumer false",
	} {
		if !strings.Contains(words, want) {
			t.Errorf("kubectl get pv,pvc,sc lacks %q:\n%s", want, out)
		}
	}

	c.MustKubectl(t, "", "delete", "pod", "notes-writer", "--wait=true")
	createPod(t, c, claimPod("notes-reader", "notes", "cat /data/msg", corev1.RestartPolicyNever))
	waitPodPhase(t, c, "default", "notes-reader", corev1.PodSucceeded, 3*time.Minute)
	if logs := c.MustKubectl(t, "", "logs", "notes-reader"); strings.TrimSpace(logs) != "written-by-notes-writer" {
		t.Errorf("the second pod read %q", logs)
	}

	c.MustKubectl(t, "", "delete", "pod", "notes-reader", "--wait=true")
	c.MustKubectl(t, "", "delete", "pvc", "notes", "--wait=true", "--timeout=60s")
	Eventually(t, time.Minute, "the volume and its directory gone", func() error {
		if _, err := c.Client.CoreV1().PersistentVolumes().Get(context.Background(), pv.Name, metav1.GetOptions{}); err == nil {
			return fmt.Errorf("volume %s still exists", pv.Name)
		}
		if _, err := os.Stat(dir); !os.IsNotExist(err) {
			return fmt.Errorf("directory %s: %v", dir, err)
		}
		return nil
	})
}

// TestStorageStaticBinding: a claim asking more than the only volume of
// its class holds stays Pending; a volume big enough binds to it (the
// claim shows the volume's capacity); deleting the claim releases a
// Retain volume.
func TestStorageStaticBinding(t *testing.T) {
	c := SharedCluster(t)
	pv := func(name, size string) string {
		return "apiVersion: v1\nkind: PersistentVolume\nmetadata:\n  name: " + name + "\nspec:\n  capacity:\n    storage: " + size +
			"\n  accessModes: [ReadWriteOnce]\n  storageClassName: manual\n  hostPath:\n    path: /tmp/" + name + "\n"
	}
	c.MustKubectl(t, pv("static-small", "10Mi"), "apply", "-f", "-")
	t.Cleanup(func() {
		_, _ = c.Kubectl(t, "", "delete", "pvc", "static-claim", "--ignore-not-found", "--wait=false")
		_, _ = c.Kubectl(t, "", "delete", "pv", "static-small", "static-big", "--ignore-not-found", "--wait=false")
	})
	c.MustKubectl(t, claimManifest("static-claim", "manual", "100Mi"), "apply", "-f", "-")
	time.Sleep(3 * time.Second)
	if out := c.MustKubectl(t, "", "get", "pvc", "static-claim", "-o", "jsonpath={.status.phase} {.spec.volumeName}"); strings.TrimSpace(out) != "Pending" {
		t.Fatalf("claim of 100Mi with only a 10Mi volume: %q, want Pending", out)
	}
	if out := c.MustKubectl(t, "", "get", "pv", "static-small", "-o", "jsonpath={.status.phase}"); out != "Available" {
		t.Errorf("the small volume is %q, want Available", out)
	}

	c.MustKubectl(t, pv("static-big", "1Gi"), "apply", "-f", "-")
	Eventually(t, 30*time.Second, "the claim bound to the big volume", func() error {
		out := c.MustKubectl(t, "", "get", "pvc", "static-claim", "-o", "jsonpath={.status.phase} {.spec.volumeName} {.status.capacity.storage}")
		if out != "Bound static-big 1Gi" {
			return fmt.Errorf("claim: %q", out)
		}
		return nil
	})
	if out := c.MustKubectl(t, "", "get", "pv", "static-big", "-o", "jsonpath={.status.phase} {.spec.claimRef.name}"); out != "Bound static-claim" {
		t.Errorf("big volume: %q", out)
	}
	c.MustKubectl(t, "", "delete", "pvc", "static-claim", "--wait=true", "--timeout=60s")
	Eventually(t, 30*time.Second, "the Retain volume released", func() error {
		out := c.MustKubectl(t, "", "get", "pv", "static-big", "-o", "jsonpath={.status.phase}")
		if out != "Released" {
			return fmt.Errorf("phase %q", out)
		}
		return nil
	})
}

// TestStorageBadClaims: invalid claims are refused with Kubernetes' 422
// and field paths, and nothing is stored.
func TestStorageBadClaims(t *testing.T) {
	c := SharedCluster(t)
	cases := []struct {
		name, manifest, want string
	}{
		{"no-size", "apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata:\n  name: bad-no-size\nspec:\n  accessModes: [ReadWriteOnce]\n",
			`PersistentVolumeClaim "bad-no-size" is invalid: spec.resources[storage]: Required value`},
		{"no-modes", "apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata:\n  name: bad-no-modes\nspec:\n  resources:\n    requests:\n      storage: 1Gi\n",
			`PersistentVolumeClaim "bad-no-modes" is invalid: spec.accessModes: Required value: at least 1 access mode is required`},
		{"bad-mode", strings.Replace(claimManifest("bad-mode", "", "1Gi"), "ReadWriteOnce", "ReadWriteSometimes", 1),
			`spec.accessModes: Unsupported value: "ReadWriteSometimes": supported values: "ReadOnlyMany", "ReadWriteMany", "ReadWriteOnce", "ReadWriteOncePod"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			out, err := c.Kubectl(t, tc.manifest, "apply", "-f", "-")
			if err == nil || !strings.Contains(out, tc.want) {
				t.Errorf("kubectl apply: err %v, output %q, want %q", err, out, tc.want)
			}
			name := "bad-" + tc.name
			if tc.name == "bad-mode" {
				name = "bad-mode"
			}
			if _, err := getClaim(c, name); err == nil {
				t.Errorf("claim %s was stored", name)
			}
		})
	}
	sc := "apiVersion: storage.k8s.io/v1\nkind: StorageClass\nmetadata:\n  name: standard\nprovisioner: example.com/other\n"
	if out, err := c.Kubectl(t, sc, "apply", "-f", "-"); err == nil || !strings.Contains(out, "provisioner: Invalid value: \"example.com/other\": field is immutable") {
		t.Errorf("changing the default class's provisioner: err %v, output %q", err, out)
	}
}

// TestStorageSurvivesRestart: a file a pod wrote to its claim is read by a
// new pod after `glassplane up` is stopped and started again on the same
// data directory.
func TestStorageSurvivesRestart(t *testing.T) {
	requireTool(t, "containerd", "real containers")
	dir, err := os.MkdirTemp("", "gp-storage-restart-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	c, err := StartCluster(dir, "--node-runtime", "containerd")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Stop() })
	c.MustKubectl(t, claimManifest("keep", "", "16Mi"), "apply", "-f", "-")
	createPod(t, c, claimPod("keep-writer", "keep", "echo kept-across-restarts > /data/msg", corev1.RestartPolicyNever))
	waitPodPhase(t, c, "default", "keep-writer", corev1.PodSucceeded, 3*time.Minute)
	c.MustKubectl(t, "", "delete", "pod", "keep-writer", "--wait=true")
	c.Stop()
	if err := os.Remove(filepath.Join(c.DataDir, "kubeconfig")); err != nil {
		t.Fatal(err)
	}

	c2, err := StartCluster(dir, "--node-runtime", "containerd")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("restarted cluster's log:\n%s", tail(c2.Log(), 60))
		}
		c2.Stop()
	})
	if out := c2.MustKubectl(t, "", "get", "pvc", "keep", "-o", "jsonpath={.status.phase}"); out != "Bound" {
		t.Fatalf("claim after the restart: %q", out)
	}
	createPod(t, c2, claimPod("keep-reader", "keep", "cat /data/msg", corev1.RestartPolicyNever))
	waitPodPhase(t, c2, "default", "keep-reader", corev1.PodSucceeded, 3*time.Minute)
	if logs := c2.MustKubectl(t, "", "logs", "keep-reader"); strings.TrimSpace(logs) != "kept-across-restarts" {
		t.Errorf("after the restart the pod read %q", logs)
	}
}
