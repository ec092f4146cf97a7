package components

// This file holds the view models of the parts an object page shows for a
// PersistentVolumeClaim (pvc.templ), a CronJob (cronjob.templ) and a
// HorizontalPodAutoscaler (hpa.templ), each read through the API as the
// page's user.

// PVC is a PersistentVolumeClaim's part of its page: the claim, the
// PersistentVolume bound to it, the node and directory that volume is
// (a local-path volume is a hostPath directory pinned to one node by its
// node affinity), and the pods that use the claim.
type PVC struct {
	// Error is why the claim itself could not be read.
	Error string
	// Phase is status.phase: Pending, Bound or Lost.
	Phase string
	// Requested is spec.resources.requests.storage; Capacity is
	// status.capacity.storage (empty until bound).
	Requested    string
	Capacity     string
	AccessModes  []string
	StorageClass string
	VolumeMode   string
	// SelectedNode is the volume.kubernetes.io/selected-node annotation
	// the scheduler sets for a WaitForFirstConsumer class.
	SelectedNode string
	// VolumeName is spec.volumeName; VolumeError says why the volume
	// could not be read.
	VolumeName  string
	VolumeError string
	Volume      *PersistentVolume
	// Pods use the claim in a volume; PodsError says why they could not
	// be listed.
	Pods      []ClaimPod
	PodsError string
}

// PersistentVolume is the volume a claim is bound to.
type PersistentVolume struct {
	Name          string
	Href          string
	Phase         string
	Capacity      string
	ReclaimPolicy string
	StorageClass  string
	// Source names the volume source (hostPath, local, nfs, csi, …) and
	// Path its directory on the node, when it has one.
	Source string
	Path   string
	// Nodes are the nodes its node affinity allows (kubernetes.io/hostname
	// In …, which names a Glassplane node); Affinity is every term as
	// text.
	Nodes    []ObjectLink
	Affinity []string
	// ClaimRef is namespace/name of the claim the volume names.
	ClaimRef string
}

// ClaimPod is a pod that mounts a claim, and its node.
type ClaimPod struct {
	Name     string
	Href     string
	Phase    string
	Node     string
	NodeHref string
	// Volume is the pod's volume that names the claim.
	Volume string
}

// CronJob is a CronJob's part of its page: its schedule, the next start
// times computed as the cronjob controller does, and the Jobs it owns.
type CronJob struct {
	Error             string
	Schedule          string
	TimeZone          string
	Suspend           bool
	ConcurrencyPolicy string
	// StartingDeadlineSeconds is empty when unset.
	StartingDeadlineSeconds string
	SuccessfulHistoryLimit  string
	FailedHistoryLimit      string
	// LastScheduleTime and LastSuccessfulTime are RFC 3339, empty when
	// never.
	LastScheduleTime   string
	LastSuccessfulTime string
	// Active names the running Jobs (status.active).
	Active []ObjectLink
	// NextRuns are the next start times, RFC 3339 in the CronJob's zone;
	// NextError says why there are none (an unknown zone, a schedule
	// that does not parse).
	NextRuns  []string
	NextError string
	// Jobs are the Jobs the CronJob controls, newest first; JobsError
	// says why they could not be listed.
	Jobs      []CronJobRun
	JobsError string
}

// CronJobRun is one Job of a CronJob.
type CronJobRun struct {
	Name string
	Href string
	// Scheduled is the batch.kubernetes.io/cronjob-scheduled-timestamp
	// annotation; Start and Completion are the Job's status times.
	Scheduled  string
	Start      string
	Completion string
	// Status is Complete, Failed, Suspended or Running (from its
	// conditions), with the pod counts.
	Status    string
	Succeeded int32
	Failed    int32
	Active    int32
}

// HPA is a HorizontalPodAutoscaler's part of its page: its target, its
// replica bounds, its metrics against their targets now and over time,
// its conditions, and each scaling decision with its reason (its
// SuccessfulRescale and FailedRescale Events).
type HPA struct {
	Error           string
	Target          string
	TargetHref      string
	MinReplicas     int32
	MaxReplicas     int32
	CurrentReplicas int32
	DesiredReplicas int32
	// LastScaleTime is RFC 3339, empty when never.
	LastScaleTime string
	Metrics       []HPAMetric
	Conditions    []Condition
	// Chart plots the first metric against its target over time.
	Chart *MetricChart
	// Decisions are the scaling decisions, newest first; DecisionsError
	// says why the Events could not be listed.
	Decisions      []ScalingDecision
	DecisionsError string
}

// HPAMetric is one of spec.metrics with its current value.
type HPAMetric struct {
	// Name reads like "cpu resource utilization (percentage of request)".
	Name    string
	Current string
	Target  string
}

// Condition is one status condition.
type Condition struct {
	Type    string
	Status  string
	Reason  string
	Message string
	Time    string
}

// ScalingDecision is one rescale the controller recorded.
type ScalingDecision struct {
	Time string
	// NewSize and Reason are read from the Event's message ("New size: 4;
	// reason: …"); NewSize is -1 when the message does not say.
	NewSize int32
	Reason  string
	// Failed marks a FailedRescale; Message is the Event's whole message.
	Failed  bool
	Count   int32
	Message string
}

// MetricChart is a metric's samples over time against its target, laid
// out as an SVG by hpa.templ.
type MetricChart struct {
	// Metric names the plotted metric and Unit its unit ("%" or "").
	Metric string
	Unit   string
	Target float64
	// Points are the samples, oldest first; Rescales mark decisions on
	// the time axis.
	Points   []ChartPoint
	Rescales []ChartPoint
}

// ChartPoint is one sample: when (RFC 3339) and the value (for a rescale,
// the new size).
type ChartPoint struct {
	Time  string
	Value float64
	// Replicas is the HPA's current replicas at the sample.
	Replicas int32
}
