package main

import (
	"strings"
	"testing"
)

const sampleJUnit = `<?xml version="1.0" encoding="UTF-8"?>
<testsuites tests="5" failures="1">
  <testsuite name="Kubernetes e2e suite" tests="5" failures="1" time="120.5">
    <testcase name="[SynchronizedBeforeSuite]" status="passed" time="1"></testcase>
    <testcase name="[It] [sig-apps] Job should run a job to completion [Conformance]" status="passed" time="12.5"></testcase>
    <testcase name="[It] [sig-node] Pods should be updated [NodeConformance] [Conformance]" status="failed" time="30">
      <failure message="[FAILED] timed out waiting for the pod&#xA;more detail" type="failed">long body</failure>
    </testcase>
    <testcase name="[It] [sig-network] Services should serve a LoadBalancer [Conformance]" status="failed" time="3">
      <failure message="no load balancer" type="failed"></failure>
    </testcase>
    <testcase name="[It] [sig-apps] Job should not be conformance" status="passed" time="1"></testcase>
    <testcase name="[It] [sig-apps] Daemon set should rollback [Conformance] [sig-apps, Conformance]" status="skipped" time="0.1">
      <skipped message="skipped - Requires at least 2 nodes (not 1)"></skipped>
    </testcase>
  </testsuite>
</testsuites>`

func TestReportCountsPerSig(t *testing.T) {
	specs, dur, err := readJUnit(strings.NewReader(sampleJUnit))
	if err != nil {
		t.Fatal(err)
	}
	if len(specs) != 4 || dur.Seconds() != 120.5 {
		t.Fatalf("got %d specs in %s, want 4 in 2m0.5s: %+v", len(specs), dur, specs)
	}
	na := map[string]string{"[sig-network] Services should serve a LoadBalancer [Conformance]": "needs a cloud load balancer"}
	page := renderPage("# head\n", specs, na, dur, "")
	for _, want := range []string{
		"**1 / 2 / 4**",
		"| sig-apps | 1 | 1 | 2 |",
		"| [sig-apps] Daemon set should rollback [Conformance] | n/a: the spec skips itself: Requires at least 2 nodes (not 1) |",
		"| sig-network | 0 | 0 | 1 |",
		"| sig-node | 0 | 1 | 1 |",
		"| failed: timed out waiting for the pod |",
		"| n/a: needs a cloud load balancer |",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q:\n%s", want, page)
		}
	}
}

func TestSmokePicksFastestPassingAcrossSigs(t *testing.T) {
	specs := []spec{
		{name: "a1", sig: "a", status: "passed", seconds: 1},
		{name: "a2", sig: "a", status: "passed", seconds: 2},
		{name: "a3", sig: "a", status: "passed", seconds: 3},
		{name: "b1", sig: "b", status: "passed", seconds: 50},
		{name: "c1", sig: "c", status: "failed", seconds: 0.5},
	}
	got := strings.Join(pickSmoke(specs, 3), ",")
	if got != "a1,a2,b1" {
		t.Errorf("smoke = %s, want a1,a2,b1 (two fastest of a, b's one, no failures)", got)
	}
}

const sampleLog = "------------------------------\n" +
	"\x1b[38;5;10m• [2.242 seconds]\x1b[0m\n" +
	"[sig-node] Downward API should provide hostIPs as an env var [Conformance] [NodeConformance] [sig-node, NodeConformance, Conformance]\n" +
	"------------------------------\n" +
	"• [FAILED] [0.3 seconds]\n" +
	"[sig-apps] CronJob [It] should support CronJob API operations [Conformance] [sig-apps, Conformance]\n" +
	"  [FAILED] Failed to create CronJob: the server could not find the requested resource @ 12/04/26 05:09:32.671\n" +
	"  [FAILED] in [It] - cronjob.go:1 @ 12/04/26 05:09:32.671\n" +
	"------------------------------\n"

func TestReadLogWhenJUnitIsEmpty(t *testing.T) {
	specs, err := readLog(strings.NewReader(sampleLog))
	if err != nil {
		t.Fatal(err)
	}
	if len(specs) != 2 {
		t.Fatalf("got %+v, want 2 specs", specs)
	}
	cron, dapi := specs[0], specs[1]
	if cron.name != "[sig-apps] CronJob should support CronJob API operations [Conformance]" || cron.status != "failed" ||
		cron.reason != "Failed to create CronJob: the server could not find the requested resource" {
		t.Errorf("cronjob spec = %+v", cron)
	}
	if dapi.name != "[sig-node] Downward API should provide hostIPs as an env var [Conformance] [NodeConformance]" || dapi.status != "passed" || dapi.sig != "sig-node" {
		t.Errorf("downward API spec = %+v", dapi)
	}
}
