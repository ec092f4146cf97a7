package web

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// TestWorkloadPartsThroughTheAPI reads a claim's, a CronJob's and an
// HPA's parts from a real API server: the claim's volume, node, directory
// and pod; the CronJob's next runs in its zone and its Job; and the HPA's
// chart, whose samples are its status revisions replayed by a watch.
func TestWorkloadPartsThroughTheAPI(t *testing.T) {
	e := newAPIEnv(t)
	ctx := e.ctx
	ns := "default"

	t.Run("hpa", func(t *testing.T) {
		hpas := e.client.AutoscalingV2().HorizontalPodAutoscalers(ns)
		h := hpaWithCPU(0, "", time.Time{})
		h.ResourceVersion, h.UID, h.ManagedFields, h.Status = "", "", nil, autoscalingv2.HorizontalPodAutoscalerStatus{}
		h, err := hpas.Create(ctx, h, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for i, cpu := range []int32{10, 200, 400} {
			if i > 0 {
				// managedFields times have a second's precision.
				time.Sleep(1100 * time.Millisecond)
			}
			st := hpaWithCPU(cpu, "", time.Time{}).Status
			st.CurrentReplicas = int32(i + 1)
			h.Status = st
			if h, err = hpas.UpdateStatus(ctx, h, metav1.UpdateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := e.client.CoreV1().Events(ns).Create(ctx, &corev1.Event{
			ObjectMeta:     metav1.ObjectMeta{Namespace: ns, Name: "web.rescale"},
			InvolvedObject: corev1.ObjectReference{Kind: "HorizontalPodAutoscaler", APIVersion: "autoscaling/v2", Namespace: ns, Name: "web", UID: h.UID},
			Reason:         "SuccessfulRescale", Message: "New size: 4; reason: cpu resource utilization (percentage of request) above target",
			Type: corev1.EventTypeNormal, Source: corev1.EventSource{Component: "horizontal-pod-autoscaler"}, Count: 1,
			FirstTimestamp: metav1.Now(), LastTimestamp: metav1.Now(),
		}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		doc, _ := e.get(t, "/objects/horizontalpodautoscalers/default/web")
		var samples []string
		for _, s := range byTestID(doc, "hpa-chart-sample") {
			samples = append(samples, textOf(s))
		}
		// Three status writes replayed, and the current value held until now.
		if len(samples) != 4 || !strings.Contains(samples[0], ": 10%") || !strings.Contains(samples[1], ": 200%") || !strings.Contains(samples[2], ": 400%") {
			t.Errorf("chart samples %q", samples)
		}
		ds := byTestID(doc, "hpa-decision")
		if len(ds) != 1 || attr(ds[0], "data-size") != "4" {
			t.Errorf("%d decisions", len(ds))
		}
	})

	t.Run("pvc", func(t *testing.T) {
		if _, err := e.client.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
		class := "local-path"
		if _, err := e.client.CoreV1().PersistentVolumes().Create(ctx, &corev1.PersistentVolume{
			ObjectMeta: metav1.ObjectMeta{Name: "pvc-data"},
			Spec: corev1.PersistentVolumeSpec{
				Capacity: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}, AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain, StorageClassName: class,
				ClaimRef:               &corev1.ObjectReference{Kind: "PersistentVolumeClaim", APIVersion: "v1", Namespace: ns, Name: "data"},
				PersistentVolumeSource: corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/var/lib/glassplane/volumes/pvc-data"}},
				NodeAffinity: &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{
					{Key: corev1.LabelHostname, Operator: corev1.NodeSelectorOpIn, Values: []string{"sim-1"}}}}}}},
			},
		}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		if _, err := e.client.CoreV1().PersistentVolumeClaims(ns).Create(ctx, &corev1.PersistentVolumeClaim{
			ObjectMeta: metav1.ObjectMeta{Name: "data"},
			Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}, StorageClassName: &class, VolumeName: "pvc-data",
				Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}},
		}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		user := pod(ns, "db-0", "", "")
		user.TypeMeta, user.UID, user.Status = metav1.TypeMeta{}, "", corev1.PodStatus{}
		user.Spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}}}
		if _, err := e.client.CoreV1().Pods(ns).Create(ctx, user, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		doc, _ := e.get(t, "/objects/persistentvolumeclaims/default/data")
		for id, want := range map[string]string{"pvc-volume-link": "pvc-data", "pvc-node-link": "sim-1", "pvc-path": "/var/lib/glassplane/volumes/pvc-data", "pvc-reclaim": "Retain"} {
			if got := textOf(one(doc, id)); got != want {
				t.Errorf("%s = %q, want %q", id, got, want)
			}
		}
		if ps := byTestID(doc, "pvc-pod"); len(ps) != 1 || attr(ps[0], "data-name") != "db-0" {
			t.Errorf("%d pods use the claim", len(ps))
		}
		for _, page := range []string{"/objects/pods/default/db-0", "/objects/persistentvolumes/pvc-data"} {
			doc, _ := e.get(t, page)
			if l := one(doc, "claim-link"); l == nil || attr(l, "href") != "/objects/persistentvolumeclaims/default/data" {
				t.Errorf("%s does not link the claim's page", page)
			}
		}
	})

	t.Run("cronjob", func(t *testing.T) {
		cj, err := e.client.BatchV1().CronJobs(ns).Create(ctx, &batchv1.CronJob{
			ObjectMeta: metav1.ObjectMeta{Name: "tick"},
			Spec: batchv1.CronJobSpec{Schedule: "0 9 * * *", TimeZone: ptr.To("Asia/Seoul"), JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{
				Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyOnFailure, Containers: []corev1.Container{{Name: "tick", Image: "glassplane.local/hello:latest"}}},
			}}}},
		}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "tick-by-hand", OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(cj, batchv1.SchemeGroupVersion.WithKind("CronJob"))}},
			Spec: *cj.Spec.JobTemplate.Spec.DeepCopy()}
		if _, err := e.client.BatchV1().Jobs(ns).Create(ctx, job, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		doc, _ := e.get(t, "/objects/cronjobs/default/tick")
		runs := byTestID(doc, "cronjob-next-run")
		if len(runs) != nextRunCount || !strings.HasSuffix(textOf(runs[0]), "T09:00:00+09:00") {
			t.Errorf("%d next runs, the first %q", len(runs), textOf(one(doc, "cronjob-next-run")))
		}
		if js := byTestID(doc, "cronjob-job"); len(js) != 1 || attr(js[0], "data-name") != "tick-by-hand" || attr(js[0], "data-status") != "Running" {
			t.Errorf("%d jobs", len(js))
		}
	})

	t.Run("unknown object", func(t *testing.T) {
		doc, _ := e.get(t, "/objects/horizontalpodautoscalers/default/nothing")
		if one(doc, "not-found") == nil || one(doc, "hpa") != nil {
			t.Errorf("an unknown HPA's page should say it is not stored, with no HPA part")
		}
		resp, err := http.Get(e.srv.URL + "/objects/horizontalpodautoscalers/default/nothing?part=hpa")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotFound || !strings.Contains(string(body), `horizontalpodautoscalers \"nothing\" not found`) {
			t.Errorf("?part=hpa of an unknown HPA = %d: %s", resp.StatusCode, body)
		}
	})
}
