package e2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

// cronJobYAML is a CronJob that runs every minute on the shared cluster's
// simulated nodes (whose containers of OnFailure pods exit 0 after 5 s),
// keeping one successful and one failed Job.
const cronJobYAML = `apiVersion: batch/v1
kind: CronJob
metadata: {name: tick}
spec:
  schedule: "*/1 * * * *"
  successfulJobsHistoryLimit: 1
  failedJobsHistoryLimit: 1
  jobTemplate:
    spec:
      template:
        spec:
          restartPolicy: OnFailure
          nodeSelector: {node.glassplane.io/runtime: simulated}
          containers: [{name: tick, image: busybox, command: [sh, -c, "date"]}]
`

// TestCronJobs drives the CronJob controller with kubectl: a Job started
// by hand from the CronJob (kubectl create job --from), the scheduled Job
// of the next minute, and the history limit of 1 pruning the older of the
// two once both succeeded.
func TestCronJobs(t *testing.T) {
	requireTool(t, "kubectl", "the cron job tests drive kubectl")
	c := SharedCluster(t)
	ctx := context.Background()
	jobs := c.Client.BatchV1().Jobs("default")
	t.Cleanup(func() { c.Kubectl(t, "", "delete", "cronjob", "tick", "--ignore-not-found", "--wait=false") })

	c.MustKubectl(t, cronJobYAML, "apply", "-f", "-")
	start := time.Now()
	c.MustKubectl(t, "", "create", "job", "tick-by-hand", "--from=cronjob/tick")
	manual, err := jobs.Get(ctx, "tick-by-hand", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if ref := metav1.GetControllerOf(manual); ref == nil || ref.Kind != "CronJob" || ref.Name != "tick" || manual.Annotations["cronjob.kubernetes.io/instantiate"] != "manual" {
		t.Fatalf("kubectl create job --from=cronjob/tick made owner %+v, annotations %v", ref, manual.Annotations)
	}

	scheduledName := regexp.MustCompile(`^tick-\d{8,}$`)
	var scheduled *batchv1.Job
	Eventually(t, 70*time.Second, "a Job of the */1 schedule", func() error {
		list, err := jobs.List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		for i := range list.Items {
			if scheduledName.MatchString(list.Items[i].Name) {
				scheduled = &list.Items[i]
				return nil
			}
		}
		return errors.New("none yet")
	})
	t.Logf("scheduled Job %s created %s after the CronJob", scheduled.Name, time.Since(start).Round(time.Second))
	stamp, err := time.Parse(time.RFC3339, scheduled.Annotations[batchv1.CronJobScheduledTimestampAnnotation])
	if err != nil {
		t.Fatalf("annotation %s: %v", batchv1.CronJobScheduledTimestampAnnotation, err)
	}
	if want := fmt.Sprintf("tick-%d", stamp.Unix()/60); scheduled.Name != want || stamp.Second() != 0 {
		t.Errorf("job %s scheduled at %s, want %s at a whole minute", scheduled.Name, stamp, want)
	}
	if ref := metav1.GetControllerOf(scheduled); ref == nil || ref.Kind != "CronJob" || ref.Name != "tick" {
		t.Errorf("scheduled job's controller = %+v", ref)
	}

	// Both succeed (5 s on a simulated node); the limit keeps the newer.
	Eventually(t, 90*time.Second, "the hand-made Job pruned by successfulJobsHistoryLimit 1", func() error {
		_, err := jobs.Get(ctx, "tick-by-hand", metav1.GetOptions{})
		if !apierrors.IsNotFound(err) {
			return fmt.Errorf("tick-by-hand still there (err %v)", err)
		}
		cj, err := c.Client.BatchV1().CronJobs("default").Get(ctx, "tick", metav1.GetOptions{})
		if err != nil {
			return err
		}
		if cj.Status.LastScheduleTime == nil || cj.Status.LastSuccessfulTime == nil {
			return fmt.Errorf("status %+v lacks lastScheduleTime or lastSuccessfulTime", cj.Status)
		}
		return nil
	})
	if _, err := jobs.Get(ctx, scheduled.Name, metav1.GetOptions{}); err != nil {
		t.Errorf("the scheduled Job %s should be kept: %v", scheduled.Name, err)
	}
	events := c.MustKubectl(t, "", "get", "events", "--field-selector", "involvedObject.kind=CronJob,involvedObject.name=tick")
	for _, want := range []string{"SuccessfulCreate", "SawCompletedJob", "SuccessfulDelete", "Deleted job tick-by-hand"} {
		if !strings.Contains(events, want) {
			t.Errorf("CronJob events lack %q:\n%s", want, events)
		}
	}
	out := c.MustKubectl(t, "", "get", "cronjob", "tick")
	if fields := strings.Fields(strings.SplitN(out, "\n", 2)[0]); strings.Join(fields, " ") != "NAME SCHEDULE TIMEZONE SUSPEND ACTIVE LAST SCHEDULE AGE" {
		t.Errorf("kubectl get cronjob header %q", fields)
	}
	if !strings.Contains(out, "*/1 * * * *") || !strings.Contains(out, "<none>") || !strings.Contains(out, "False") {
		t.Errorf("kubectl get cronjob:\n%s", out)
	}
}

// TestCronJobInvalid sends a bad schedule and an unknown time zone: each
// is a 422 with Kubernetes' field path and message, and nothing is stored.
func TestCronJobInvalid(t *testing.T) {
	requireTool(t, "kubectl", "the cron job tests drive kubectl")
	c := SharedCluster(t)
	for _, tc := range []struct {
		name, field, want string
	}{
		{"schedule", `schedule: "61 * * * *"`, `The CronJob "bad-cron" is invalid: spec.schedule: Invalid value: "61 * * * *": end of range (61) above maximum (59): 61`},
		{"tz in schedule", `schedule: "CRON_TZ=UTC * * * * *"`, `spec.schedule: Invalid value: "CRON_TZ=UTC * * * * *": cannot use TZ or CRON_TZ in schedule, use timeZone field instead`},
		{"time zone", "schedule: \"0 3 * * *\"\n  timeZone: Mars/Olympus", `The CronJob "bad-cron" is invalid: spec.timeZone: Invalid value: "Mars/Olympus": unknown time zone Mars/Olympus`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			manifest := "apiVersion: batch/v1\nkind: CronJob\nmetadata: {name: bad-cron}\nspec:\n  " + tc.field + `
  jobTemplate:
    spec:
      template:
        spec:
          restartPolicy: Never
          containers: [{name: c, image: busybox}]
`
			out, err := c.Kubectl(t, manifest, "apply", "-f", "-")
			if err == nil || !strings.Contains(out, tc.want) {
				t.Errorf("kubectl apply: err %v, output:\n%s\nwant %q", err, out, tc.want)
			}
			var cj batchv1.CronJob
			if err := yaml.Unmarshal([]byte(manifest), &cj); err != nil {
				t.Fatal(err)
			}
			_, err = c.Client.BatchV1().CronJobs("default").Create(context.Background(), &cj, metav1.CreateOptions{})
			var status *apierrors.StatusError
			if !errors.As(err, &status) || status.ErrStatus.Code != 422 || status.ErrStatus.Details == nil || len(status.ErrStatus.Details.Causes) == 0 {
				t.Fatalf("client-go create: %v, want a 422 with causes", err)
			}
			if f := status.ErrStatus.Details.Causes[0].Field; f != "spec.schedule" && f != "spec.timeZone" {
				t.Errorf("cause field %q", f)
			}
			if _, err := c.Client.BatchV1().CronJobs("default").Get(context.Background(), "bad-cron", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				t.Errorf("the invalid CronJob was stored (get: %v)", err)
			}
		})
	}
}

// TestReplicationControllers runs an RC of 3 on the simulated nodes,
// scales it to 1 with kubectl scale rc, deletes it and sees its pods go,
// and round-trips a PodTemplate.
func TestReplicationControllers(t *testing.T) {
	requireTool(t, "kubectl", "the replication controller tests drive kubectl")
	c := SharedCluster(t)
	ctx := context.Background()
	pods := c.Client.CoreV1().Pods("default")
	t.Cleanup(func() { c.Kubectl(t, "", "delete", "rc", "rc-web", "--ignore-not-found", "--wait=false") })
	c.MustKubectl(t, `apiVersion: v1
kind: ReplicationController
metadata: {name: rc-web}
spec:
  replicas: 3
  template:
    metadata: {labels: {app: rc-web}}
    spec:
      nodeSelector: {node.glassplane.io/runtime: simulated}
      containers: [{name: web, image: nginx}]
`, "apply", "-f", "-")
	rc, err := c.Client.CoreV1().ReplicationControllers("default").Get(ctx, "rc-web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if rc.Spec.Selector["app"] != "rc-web" || rc.Labels["app"] != "rc-web" {
		t.Errorf("selector %v and labels %v not defaulted from the template", rc.Spec.Selector, rc.Labels)
	}
	running := func(n int) func() error {
		return func() error {
			list, err := pods.List(ctx, metav1.ListOptions{LabelSelector: "app=rc-web"})
			if err != nil {
				return err
			}
			live := 0
			for _, p := range list.Items {
				if p.DeletionTimestamp != nil {
					continue
				}
				live++
				if ref := metav1.GetControllerOf(&p); ref == nil || ref.Kind != "ReplicationController" || ref.UID != rc.UID {
					return fmt.Errorf("pod %s controller %+v", p.Name, ref)
				}
			}
			got, err := c.Client.CoreV1().ReplicationControllers("default").Get(ctx, "rc-web", metav1.GetOptions{})
			if err != nil {
				return err
			}
			if live != n || got.Status.ReadyReplicas != int32(n) || got.Status.Replicas != int32(n) {
				return fmt.Errorf("%d live pods, status %+v", live, got.Status)
			}
			return nil
		}
	}
	Eventually(t, 90*time.Second, "3 ready pods of the RC", running(3))
	out := c.MustKubectl(t, "", "get", "rc", "rc-web")
	if !regexp.MustCompile(`(?m)^NAME\s+DESIRED\s+CURRENT\s+READY\s+AGE\nrc-web\s+3\s+3\s+3\s+`).MatchString(out) {
		t.Errorf("kubectl get rc:\n%s", out)
	}
	c.MustKubectl(t, "", "scale", "rc", "rc-web", "--replicas=1")
	Eventually(t, 90*time.Second, "1 pod after kubectl scale rc --replicas=1", running(1))
	events := c.MustKubectl(t, "", "get", "events", "--field-selector", "involvedObject.kind=ReplicationController,involvedObject.name=rc-web")
	if strings.Count(events, "SuccessfulCreate") < 1 || !strings.Contains(events, "SuccessfulDelete") {
		t.Errorf("RC events:\n%s", events)
	}
	c.MustKubectl(t, "", "delete", "rc", "rc-web")
	Eventually(t, 90*time.Second, "the RC's pods deleted with it", func() error {
		list, err := pods.List(ctx, metav1.ListOptions{LabelSelector: "app=rc-web"})
		if err != nil {
			return err
		}
		if len(list.Items) != 0 {
			return fmt.Errorf("%d pods left", len(list.Items))
		}
		return nil
	})

	t.Run("pod template round trip", func(t *testing.T) {
		c.MustKubectl(t, `apiVersion: v1
kind: PodTemplate
metadata: {name: tmpl}
template:
  metadata: {labels: {tier: web}}
  spec:
    containers: [{name: web, image: nginx}]
`, "apply", "-f", "-")
		t.Cleanup(func() { c.Kubectl(t, "", "delete", "podtemplate", "tmpl", "--ignore-not-found") })
		var got corev1.PodTemplate
		if err := json.Unmarshal([]byte(c.MustKubectl(t, "", "get", "podtemplate", "tmpl", "-o", "json")), &got); err != nil {
			t.Fatal(err)
		}
		if got.Template.Labels["tier"] != "web" || len(got.Template.Spec.Containers) != 1 || got.Template.Spec.RestartPolicy != corev1.RestartPolicyAlways {
			t.Errorf("stored template %+v", got.Template)
		}
		out := c.MustKubectl(t, "", "get", "podtemplates")
		if !regexp.MustCompile(`(?m)^NAME\s+CONTAINERS\s+IMAGES\s+POD LABELS\ntmpl\s+web\s+nginx\s+tier=web`).MatchString(out) {
			t.Errorf("kubectl get podtemplates:\n%s", out)
		}
		bad, err := c.Kubectl(t, `{"apiVersion":"v1","kind":"PodTemplate","metadata":{"name":"bad-tmpl"},"template":{"spec":{"containers":[{"name":"web"}]}}}`, "apply", "-f", "-")
		if err == nil || !strings.Contains(bad, `template.spec.containers[0].image: Required value`) {
			t.Errorf("a template without an image: err %v\n%s", err, bad)
		}
		c.MustKubectl(t, "", "delete", "podtemplate", "tmpl")
	})
}

// pythonCronJobScript does CronJob CRUD with the official Python client:
// create, read (with the defaults), list, patch suspend, delete. (Debian's
// client, 22.6, predates spec.timeZone.)
const pythonCronJobScript = `
import json, sys
from kubernetes import client, config

config.load_kube_config(config_file=sys.argv[1])
b = client.BatchV1Api()
name, ns = sys.argv[2], "default"
cj = client.V1CronJob(
    metadata=client.V1ObjectMeta(name=name),
    spec=client.V1CronJobSpec(schedule="0 3 * * *", job_template=client.V1JobTemplateSpec(
        spec=client.V1JobSpec(template=client.V1PodTemplateSpec(spec=client.V1PodSpec(
            restart_policy="Never", containers=[client.V1Container(name="c", image="busybox")]))))))
created = b.create_namespaced_cron_job(ns, cj)
read = b.read_namespaced_cron_job(name, ns)
listed = [i.metadata.name for i in b.list_namespaced_cron_job(ns).items]
patched = b.patch_namespaced_cron_job(name, ns, {"spec": {"suspend": True}})
b.delete_namespaced_cron_job(name, ns)
after = [i.metadata.name for i in b.list_namespaced_cron_job(ns).items]
print(json.dumps({"created": created.metadata.name, "policy": read.spec.concurrency_policy, "limit": read.spec.successful_jobs_history_limit,
    "listed": name in listed, "suspend": patched.spec.suspend, "after": name in after}))
`

// TestPythonClientCronJob does CronJob CRUD with the official Python
// client (python3-kubernetes).
func TestPythonClientCronJob(t *testing.T) {
	python := requirePythonClient(t)
	c := SharedCluster(t)
	out, err := exec.Command(python, "-c", pythonCronJobScript, c.Kubeconfig, "py-cron").CombinedOutput()
	if err != nil {
		t.Fatalf("python client: %v\n%s", err, out)
	}
	var got struct {
		Created, Policy        string
		Limit                  int
		Listed, Suspend, After bool
	}
	if err := json.Unmarshal(out, &got); err != nil {
		t.Fatalf("python client printed %q: %v", out, err)
	}
	if got.Created != "py-cron" || got.Policy != "Allow" || got.Limit != 3 || !got.Listed || !got.Suspend || got.After {
		t.Errorf("python client saw %+v", got)
	}
}
