package e2e

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// TestNodeEnvAndVolumesFromConfigMapAndSecret: env from a ConfigMap
// (valueFrom and envFrom) and a Secret, and the files of ConfigMap,
// Secret (with modes), downwardAPI and emptyDir volumes are what the
// container sees, read with kubectl exec.
func TestNodeEnvAndVolumesFromConfigMapAndSecret(t *testing.T) {
	requireTool(t, "containerd", "real containers")
	c := SharedCluster(t)
	c.MustKubectl(t, `apiVersion: v1
kind: ConfigMap
metadata: {name: node-cfg, namespace: default}
data: {color: blue, size: large, app.conf: "listen 80\n"}
---
apiVersion: v1
kind: Secret
metadata: {name: node-secret, namespace: default}
data: {password: czNjcjN0, token: YWJj}
`, "apply", "-f", "-")
	t.Cleanup(func() { c.Kubectl(t, "", "delete", "configmap/node-cfg", "secret/node-secret", "--ignore-not-found") })
	pod := onContainerdNode("configured", corev1.RestartPolicyAlways, corev1.Container{
		Name: "main", Image: demoImage,
		EnvFrom: []corev1.EnvFromSource{{Prefix: "CFG_", ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "node-cfg"}}}},
		Env: []corev1.EnvVar{
			{Name: "COLOR", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "node-cfg"}, Key: "color"}}},
			{Name: "PASSWORD", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "node-secret"}, Key: "password"}}},
			{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
			{Name: "GREETING", Value: "$(COLOR) sky"},
		},
		VolumeMounts: []corev1.VolumeMount{
			{Name: "cfg", MountPath: "/etc/cfg"},
			{Name: "sec", MountPath: "/etc/sec"},
			{Name: "info", MountPath: "/etc/info"},
			{Name: "scratch", MountPath: "/scratch"},
			{Name: "cfg", MountPath: "/etc/app.conf", SubPath: "app.conf"},
		},
	})
	pod.Labels = map[string]string{"tier": "web"}
	pod.Spec.Volumes = []corev1.Volume{
		{Name: "cfg", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "node-cfg"}}}},
		{Name: "sec", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "node-secret", DefaultMode: new(int32(0o400))}}},
		{Name: "info", VolumeSource: corev1.VolumeSource{DownwardAPI: &corev1.DownwardAPIVolumeSource{Items: []corev1.DownwardAPIVolumeFile{
			{Path: "labels", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.labels"}},
		}}}},
		{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}},
	}
	createPod(t, c, pod)
	waitPodPhase(t, c, "default", "configured", corev1.PodRunning, 3*time.Minute)

	tests := []struct {
		name string
		cmd  string
		want string
	}{
		{name: "configMapKeyRef", cmd: "echo $COLOR", want: "blue"},
		{name: "envFrom with prefix", cmd: "echo $CFG_size", want: "large"},
		{name: "secretKeyRef", cmd: "echo $PASSWORD", want: "s3cr3t"},
		{name: "fieldRef", cmd: "echo $POD_NAME", want: "configured"},
		{name: "dependent variable", cmd: "echo $GREETING", want: "blue sky"},
		{name: "configMap volume", cmd: "cat /etc/cfg/size", want: "large"},
		{name: "subPath file", cmd: "cat /etc/app.conf", want: "listen 80"},
		{name: "secret volume", cmd: "cat /etc/sec/password", want: "s3cr3t"},
		// The files are links into ..data, as the kubelet lays them out:
		// the modes are the files' (-L).
		{name: "secret file mode", cmd: "ls -lL /etc/sec/token | cut -c1-10", want: "-r--------"},
		{name: "configMap file mode", cmd: "ls -lL /etc/cfg/color | cut -c1-10", want: "-rw-r--r--"},
		{name: "configMap laid out as the kubelet's", cmd: "readlink /etc/cfg/color; readlink /etc/cfg/..data | cut -c1-4", want: "..data/color\n..20"},
		{name: "configMap volume is read-only", cmd: "(echo x > /etc/cfg/new) 2>/dev/null && echo writable || echo read-only", want: "read-only"},
		{name: "downwardAPI labels", cmd: "cat /etc/info/labels", want: `tier="web"`},
		{name: "emptyDir is writable", cmd: "echo ok > /scratch/f && cat /scratch/f", want: "ok"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := c.MustKubectl(t, "", "exec", "configured", "--", "sh", "-c", tt.cmd)
			if strings.TrimSpace(out) != tt.want {
				t.Errorf("%s printed %q, want %q", tt.cmd, out, tt.want)
			}
		})
	}
}
