package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// issue26Controllers are the controllers issue 26 added to the controller
// manager, by their --controllers names.
var issue26Controllers = []string{
	"statefulset-controller", "cronjob-controller", "replicationcontroller-controller",
	"persistentvolume-binder-controller", "persistentvolumeclaim-protection-controller",
	"persistentvolume-protection-controller", "resourcequota-controller",
	"horizontal-pod-autoscaler-controller",
}

// BenchmarkNewControllersMemory reports the resident memory the workload
// controllers of issue 26 add to `glassplane up` (100 simulated nodes), at
// idle and with a Deployment of 1,000 pods: the same start with
// --controllers=*,-<each of them> against one with every controller.
func BenchmarkNewControllersMemory(b *testing.B) {
	without := "*,-" + strings.Join(issue26Controllers, ",-")
	for range b.N {
		idleAll, podsAll := controllerMemory(b, "*")
		idleWithout, podsWithout := controllerMemory(b, without)
		b.ReportMetric(idleAll, "idle-MiB")
		b.ReportMetric(idleAll-idleWithout, "idle-added-MiB")
		b.ReportMetric(podsAll, "1000pods-MiB")
		b.ReportMetric(podsAll-podsWithout, "1000pods-added-MiB")
	}
}

// controllerMemory starts glassplane with --controllers=list and returns
// its RSS in MiB once idle and once a Deployment of 1,000 pods is
// available.
func controllerMemory(b *testing.B, list string) (idle, pods float64) {
	b.Helper()
	c, err := StartCluster(b.TempDir(), "--node-runtime", "none", "--simulated-nodes", "100", "--controllers", list)
	if err != nil {
		b.Fatal(err)
	}
	defer c.Stop()
	time.Sleep(20 * time.Second) // let start-up garbage be collected
	idle = float64(rssKiB(b, c.cmd.Process.Pid)) / 1024
	ctx := context.Background()
	if _, err := c.Client.AppsV1().Deployments("default").Create(ctx, benchDeployment("mem", 1000), metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	if err := waitAvailable(ctx, c, "mem", 1000, 10*time.Minute); err != nil {
		b.Fatal(err)
	}
	time.Sleep(10 * time.Second)
	pods = float64(rssKiB(b, c.cmd.Process.Pid)) / 1024
	return idle, pods
}
