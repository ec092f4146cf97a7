package web

import (
	"net/http"
	"strings"
	"testing"

	"time"

	"golang.org/x/net/html"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	"github.com/glassplane/glassplane/web/webtest"
)

func TestNextRunsHonourTimeZone(t *testing.T) {
	from := time.Date(2026, 12, 4, 23, 30, 0, 0, time.UTC)
	tests := []struct {
		name, schedule string
		zone           *string
		want           []string
		err            string
	}{
		{name: "every minute in UTC", schedule: "*/1 * * * *", zone: ptr.To("UTC"), want: []string{"2026-12-04T23:31:00Z", "2026-12-04T23:32:00Z"}},
		{name: "9 o'clock in Seoul", schedule: "0 9 * * *", zone: ptr.To("Asia/Seoul"), want: []string{"2026-12-05T09:00:00+09:00", "2026-12-06T09:00:00+09:00"}},
		{name: "9 o'clock in New York", schedule: "0 9 * * *", zone: ptr.To("America/New_York"), want: []string{"2026-12-05T09:00:00-05:00", "2026-12-06T09:00:00-05:00"}},
		{name: "a descriptor", schedule: "@hourly", zone: ptr.To("UTC"), want: []string{"2026-12-05T00:00:00Z", "2026-12-05T01:00:00Z"}},
		{name: "TZ in the schedule wins", schedule: "TZ=Asia/Tokyo 0 0 * * *", zone: ptr.To("UTC"), want: []string{"2026-12-06T00:00:00+09:00", "2026-12-07T00:00:00+09:00"}},
		{name: "unknown zone", schedule: "0 9 * * *", zone: ptr.To("Mars/Olympus"), err: `invalid timeZone: "Mars/Olympus"`},
		{name: "bad schedule", schedule: "61 * * * *", zone: ptr.To("UTC"), err: `unparseable schedule: "61 * * * *"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := nextRuns(tt.schedule, tt.zone, from, 2)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("err = %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var s []string
			for _, g := range got {
				s = append(s, g.Format(time.RFC3339))
			}
			if strings.Join(s, " ") != strings.Join(tt.want, " ") {
				t.Errorf("next runs %v, want %v", s, tt.want)
			}
		})
	}
}

func TestParseRescale(t *testing.T) {
	tests := []struct {
		msg    string
		size   int32
		reason string
	}{
		{"New size: 4; reason: cpu resource utilization (percentage of request) above target", 4, "cpu resource utilization (percentage of request) above target"},
		{"New size: 1; reason: All metrics below target", 1, "All metrics below target"},
		{"New size: 3; reason: cpu resource above target; error: the server could not find the requested resource", 3, "cpu resource above target"},
		{"something else <b>", -1, "something else <b>"},
	}
	for _, tt := range tests {
		size, reason := parseRescale(tt.msg)
		if size != tt.size || reason != tt.reason {
			t.Errorf("parseRescale(%q) = %d, %q; want %d, %q", tt.msg, size, reason, tt.size, tt.reason)
		}
	}
}

func TestCronJobRunsNewestFirstAndOwned(t *testing.T) {
	cj := &batchv1.CronJob{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "tick", UID: "uid-tick"}}
	owned := func(name, scheduled string, conds ...batchv1.JobConditionType) batchv1.Job {
		j := batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name,
			Annotations:     map[string]string{batchv1.CronJobScheduledTimestampAnnotation: scheduled},
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(cj, batchv1.SchemeGroupVersion.WithKind("CronJob"))}}}
		for _, c := range conds {
			j.Status.Conditions = append(j.Status.Conditions, batchv1.JobCondition{Type: c, Status: corev1.ConditionTrue})
		}
		return j
	}
	other := batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "manual"}}
	runs := cronJobRuns(cj, []batchv1.Job{owned("tick-1", "2026-12-04T10:01:00Z", batchv1.JobComplete), other,
		owned("tick-3", "2026-12-04T10:03:00Z"), owned("tick-2", "2026-12-04T10:02:00Z", batchv1.JobFailed)})
	var got []string
	for _, r := range runs {
		got = append(got, r.Name+":"+r.Status)
	}
	if want := "tick-3:Running tick-2:Failed tick-1:Complete"; strings.Join(got, " ") != want {
		t.Errorf("runs %v, want %s", got, want)
	}
}

// hpaWithCPU is an HPA of web at 50% CPU whose status says current.
func hpaWithCPU(current int32, rv string, written time.Time) *autoscalingv2.HorizontalPodAutoscaler {
	return &autoscalingv2.HorizontalPodAutoscaler{
		TypeMeta: metav1.TypeMeta{Kind: "HorizontalPodAutoscaler", APIVersion: "autoscaling/v2"},
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web", UID: "uid-hpa", ResourceVersion: rv,
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "glassplane", Operation: metav1.ManagedFieldsOperationUpdate, Subresource: "status", Time: &metav1.Time{Time: written}}}},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{Kind: "Deployment", Name: "web", APIVersion: "apps/v1"},
			MinReplicas:    ptr.To(int32(1)), MaxReplicas: 4,
			Metrics: []autoscalingv2.MetricSpec{{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{
				Name: corev1.ResourceCPU, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: ptr.To(int32(50))}}}},
		},
		Status: autoscalingv2.HorizontalPodAutoscalerStatus{CurrentReplicas: 1, DesiredReplicas: 4,
			CurrentMetrics: []autoscalingv2.MetricStatus{{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricStatus{
				Name: corev1.ResourceCPU, Current: autoscalingv2.MetricValueStatus{AverageUtilization: ptr.To(current), AverageValue: resource.NewMilliQuantity(int64(current), resource.DecimalSI)}}}},
			Conditions: []autoscalingv2.HorizontalPodAutoscalerCondition{{Type: autoscalingv2.AbleToScale, Status: corev1.ConditionTrue, Reason: "SucceededRescale"},
				{Type: autoscalingv2.ScalingActive, Status: corev1.ConditionTrue, Reason: "ValidMetricFound"},
				{Type: autoscalingv2.ScalingLimited, Status: corev1.ConditionTrue, Reason: "TooManyReplicas", Message: "the desired replica count is more than the maximum replica count"}},
		},
	}
}

// TestReplayReadsTheHPAsRevisions feeds a watch the HPA's past
// revisions: each is read until the current one, and a 410 says where
// history starts.
func TestReplayReadsTheHPAsRevisions(t *testing.T) {
	at := time.Date(2026, 12, 4, 10, 0, 0, 0, time.UTC)
	cur := hpaWithCPU(400, "30", at.Add(time.Minute))
	w := watch.NewFakeWithChanSize(8, false)
	w.Add(hpaWithCPU(10, "10", at))
	other := hpaWithCPU(99, "15", at)
	other.UID = "someone-else"
	w.Modify(other)
	w.Modify(hpaWithCPU(200, "20", at.Add(30*time.Second)))
	w.Modify(cur)
	w.Modify(hpaWithCPU(999, "40", at.Add(2*time.Minute)))
	got, expired := replay(w, cur, 30)
	if expired != "" || len(got) != 3 || got[2].ResourceVersion != "30" {
		t.Fatalf("replay = %d revisions, %q", len(got), expired)
	}
	chart := hpaChart(cur, got, nil, at.Add(3*time.Minute))
	var values []float64
	for _, p := range chart.Points {
		values = append(values, p.Value)
	}
	if len(values) != 4 || values[0] != 10 || values[1] != 200 || values[2] != 400 || values[3] != 400 || chart.Target != 50 || chart.Unit != "%" {
		t.Errorf("chart %+v", chart)
	}
	if got := oldestKept("too old resource version: 1 (1234)"); got != "1234" {
		t.Errorf("oldestKept = %q", got)
	}
}

// newPartsEnv is a dashboard whose pages read objs through a fake API as
// the user, and whose store holds stored (so the object page finds it).
// one is the single node with the data-testid id under n, nil when there
// is none or more than one.
func one(n *html.Node, id string) *html.Node {
	if ns := byTestID(n, id); len(ns) == 1 {
		return ns[0]
	}
	return nil
}

// textOf is n's text, "" for nil.
func textOf(n *html.Node) string {
	if n == nil {
		return ""
	}
	return strings.TrimSpace(text(n))
}

func newPartsEnv(t *testing.T, stored map[string]any, objs ...runtime.Object) *env {
	t.Helper()
	e, _ := newPartsEnvClient(t, stored, objs...)
	return e
}

// newPartsEnvClient is newPartsEnv with its fake API's client.
func newPartsEnvClient(t *testing.T, stored map[string]any, objs ...runtime.Object) (*env, *fake.Clientset) {
	t.Helper()
	e := newEnv(t)
	for k, v := range stored {
		e.put(t, k, v)
	}
	client := fake.NewClientset(objs...)
	e.dash.api = func(*http.Request) (kubernetes.Interface, error) { return client, nil }
	return e, client
}

func TestPVCPageShowsClaimVolumeNodeAndPods(t *testing.T) {
	class := "local-path"
	claim := &corev1.PersistentVolumeClaim{
		TypeMeta:   metav1.TypeMeta{Kind: "PersistentVolumeClaim", APIVersion: "v1"},
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "data-db-0", UID: "uid-claim", Annotations: map[string]string{annSelectedNode: "sim-1"}},
		Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce}, StorageClassName: &class, VolumeName: "pvc-uid-claim",
			Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}}},
		Status: corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimBound, Capacity: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
	}
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: "pvc-uid-claim"},
		Spec: corev1.PersistentVolumeSpec{
			Capacity: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}, PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimDelete,
			StorageClassName:       class,
			PersistentVolumeSource: corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/var/lib/glassplane/volumes/pvc-uid-claim" + hostileText}},
			NodeAffinity: &corev1.VolumeNodeAffinity{Required: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{
				{Key: corev1.LabelHostname, Operator: corev1.NodeSelectorOpIn, Values: []string{"sim-1"}}}}}}},
		},
		Status: corev1.PersistentVolumeStatus{Phase: corev1.VolumeBound},
	}
	user := pod("default", "db-0", "sim-1", corev1.PodRunning)
	user.Spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data-db-0"}}}}
	bystander := pod("default", "web", "sim-1", corev1.PodRunning)
	e := newPartsEnv(t, map[string]any{"/registry/persistentvolumeclaims/default/data-db-0": claim}, claim, pv, user, bystander)
	doc, body := e.get(t, "/objects/persistentvolumeclaims/default/data-db-0")
	if strings.Contains(body, hostileText) {
		t.Errorf("the volume's path is not escaped")
	}
	for id, want := range map[string]string{
		"pvc-phase": "Bound", "pvc-volume-link": "pvc-uid-claim", "pvc-node-link": "sim-1", "pvc-class": "local-path",
		"pvc-access": "ReadWriteOnce", "pvc-capacity": "1Gi", "pvc-reclaim": "Delete", "pvc-affinity": "kubernetes.io/hostname In [sim-1]",
		"pvc-path": "/var/lib/glassplane/volumes/pvc-uid-claim" + hostileText,
	} {
		if got := textOf(one(doc, id)); got != want {
			t.Errorf("%s = %q, want %q", id, got, want)
		}
	}
	pods := byTestID(doc, "pvc-pod")
	if len(pods) != 1 || attr(pods[0], "data-name") != "db-0" || attr(pods[0], "data-node") != "sim-1" {
		t.Errorf("pods using the claim: %d", len(pods))
	}
	resp, err := http.Get(e.srv.URL + "/objects/persistentvolumeclaims/default/data-db-0?part=cronjob")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("a part the claim has not = %d, want 404", resp.StatusCode)
	}
}

func TestCronJobPageShowsNextRunsAndJobs(t *testing.T) {
	cj := &batchv1.CronJob{
		TypeMeta:   metav1.TypeMeta{Kind: "CronJob", APIVersion: "batch/v1"},
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "tick", UID: "uid-tick"},
		Spec:       batchv1.CronJobSpec{Schedule: "*/1 * * * *", TimeZone: ptr.To("Asia/Seoul"), ConcurrencyPolicy: batchv1.ForbidConcurrent, SuccessfulJobsHistoryLimit: ptr.To(int32(1))},
	}
	job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "tick-29420000",
		OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(cj, batchv1.SchemeGroupVersion.WithKind("CronJob"))}},
		Status: batchv1.JobStatus{Succeeded: 1, Conditions: []batchv1.JobCondition{{Type: batchv1.JobComplete, Status: corev1.ConditionTrue}}}}
	e := newPartsEnv(t, map[string]any{"/registry/cronjobs/default/tick": cj}, cj, job)
	doc, _ := e.get(t, "/objects/cronjobs/default/tick?part=cronjob")
	if got := textOf(one(doc, "cronjob-timezone")); got != "Asia/Seoul" {
		t.Errorf("timeZone %q", got)
	}
	runs := byTestID(doc, "cronjob-next-run")
	if len(runs) != nextRunCount || !strings.HasSuffix(textOf(runs[0]), ":00+09:00") {
		t.Errorf("%d next runs, the first %q", len(runs), textOf(runs[0]))
	}
	jobs := byTestID(doc, "cronjob-job")
	if len(jobs) != 1 || attr(jobs[0], "data-status") != "Complete" {
		t.Errorf("jobs %d", len(jobs))
	}
}

func TestHPAPageShowsDecisionsConditionsAndChart(t *testing.T) {
	at := time.Now().Add(-time.Minute)
	h := hpaWithCPU(400, "30", at)
	ev := &corev1.Event{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web.1"},
		InvolvedObject: corev1.ObjectReference{Kind: "HorizontalPodAutoscaler", Namespace: "default", Name: "web", UID: "uid-hpa"},
		Reason:         "SuccessfulRescale", Message: "New size: 4; reason: cpu resource utilization (percentage of request) above target", Count: 1,
		LastTimestamp: metav1.NewTime(at)}
	dep := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "web"}}
	e := newPartsEnv(t, map[string]any{"/registry/horizontalpodautoscalers/default/web": h}, h, ev, dep)
	doc, _ := e.get(t, "/objects/horizontalpodautoscalers/default/web")
	ds := byTestID(doc, "hpa-decision")
	if len(ds) != 1 || attr(ds[0], "data-size") != "4" || textOf(one(ds[0], "hpa-decision-reason")) != "cpu resource utilization (percentage of request) above target" {
		t.Fatalf("decisions: %d", len(ds))
	}
	var conds []string
	for _, c := range byTestID(doc, "hpa-condition") {
		conds = append(conds, attr(c, "data-type")+"="+attr(c, "data-status"))
	}
	if strings.Join(conds, " ") != "AbleToScale=True ScalingActive=True ScalingLimited=True" {
		t.Errorf("conditions %v", conds)
	}
	if got := textOf(one(doc, "hpa-metric-current")); got != "400%" {
		t.Errorf("current metric %q", got)
	}
	chart := one(doc, "hpa-chart")
	if chart == nil || attr(chart, "data-target") != "50%" || len(byTestID(chart, "hpa-chart-rescale")) != 1 || len(byTestID(chart, "hpa-chart-sample")) != 2 {
		t.Errorf("the chart does not plot the samples and the rescale")
	}
	if got := textOf(one(doc, "hpa-target")); got != "Deployment/web" {
		t.Errorf("target %q", got)
	}
}

// TestBrowserHPADecisionArrives opens an HPA's page in chromium: when the
// controller's SuccessfulRescale Event is written, the page reads its part
// again and the decision appears with its reason, escaped, and flashes.
func TestBrowserHPADecisionArrives(t *testing.T) {
	h := hpaWithCPU(400, "30", time.Now().Add(-time.Minute))
	e, client := newPartsEnvClient(t, map[string]any{"/registry/horizontalpodautoscalers/default/web": h}, h)
	ctx := webtest.Browser(t)
	webtest.Navigate(t, ctx, e.srv.URL+"/objects/horizontalpodautoscalers/default/web")
	webtest.WaitSelector(t, ctx, webtest.TestID("hpa-no-decisions"))
	webtest.WaitLive(t, ctx)
	now := time.Now()
	ev := &corev1.Event{
		TypeMeta:       metav1.TypeMeta{APIVersion: "v1", Kind: "Event"},
		ObjectMeta:     metav1.ObjectMeta{Namespace: "default", Name: "web.rescale"},
		InvolvedObject: corev1.ObjectReference{Kind: "HorizontalPodAutoscaler", APIVersion: "autoscaling/v2", Namespace: "default", Name: "web", UID: "uid-hpa"},
		Reason:         "SuccessfulRescale", Message: "New size: 4; reason: cpu resource utilization (percentage of request) above target" + hostileText,
		Type: corev1.EventTypeNormal, Source: corev1.EventSource{Component: "horizontal-pod-autoscaler"}, Count: 1,
		FirstTimestamp: metav1.NewTime(now), LastTimestamp: metav1.NewTime(now),
	}
	if _, err := client.CoreV1().Events("default").Create(e.ctx, ev, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	e.put(t, "/registry/events/default/web.rescale", ev)
	webtest.WaitFor(t, ctx, `document.querySelector('[data-testid="hpa-decision"]')?.dataset.size === "4"`)
	if got := webtest.Eval[string](t, ctx, `document.querySelector('[data-testid="hpa-decision-reason"]').textContent`); got != "cpu resource utilization (percentage of request) above target"+hostileText {
		t.Errorf("the decision's reason %q", got)
	}
	if n := webtest.Eval[int](t, ctx, `document.querySelectorAll("#workload-panel img").length`); n != 0 {
		t.Errorf("%d <img> elements from the Event's message", n)
	}
	if got := webtest.Eval[string](t, ctx, `document.getElementById("workload-panel").dataset.reloads || ""`); got == "" {
		t.Errorf("the part was not read again")
	}
}

// TestHPAHistoryStartsWhereTheServerKeeps: a watch from resourceVersion 1
// that the server answers "too old resource version: 1 (25)" is asked
// again from 25, and what that replays is the history.
func TestHPAHistoryStartsWhereTheServerKeeps(t *testing.T) {
	at := time.Date(2026, 12, 4, 10, 0, 0, 0, time.UTC)
	cur := hpaWithCPU(400, "30", at.Add(time.Minute))
	client := fake.NewClientset()
	var asked []string
	client.PrependWatchReactor("horizontalpodautoscalers", func(a clienttesting.Action) (bool, watch.Interface, error) {
		rv := a.(clienttesting.WatchActionImpl).GetWatchRestrictions().ResourceVersion
		asked = append(asked, rv)
		if rv == "1" {
			return true, nil, apierrors.NewResourceExpired("too old resource version: 1 (25)")
		}
		w := watch.NewFakeWithChanSize(4, false)
		w.Modify(hpaWithCPU(200, "28", at))
		w.Modify(cur)
		return true, w, nil
	})
	got := hpaHistory(t.Context(), client, cur)
	if strings.Join(asked, ",") != "1,25" || len(got) != 2 || got[0].ResourceVersion != "28" {
		t.Errorf("watched from %v, replayed %d revisions", asked, len(got))
	}
}
