// Package podautoscaler is kube-controller-manager's horizontal pod
// autoscaler: for each autoscaling/v2 HorizontalPodAutoscaler it reads the
// target's scale subresource (Deployments, ReplicaSets, ReplicationControllers
// and anything else serving /scale), the resource metrics of the target's
// pods from metrics.k8s.io (Utilization of the pods' requests, or
// AverageValue), computes the desired replicas as upstream's replica
// calculator does (tolerance 0.1, missing and not-yet-ready pods), applies
// the stabilization windows and scaling policies of spec.behavior (or the
// 300 s downscale window and the scale-up limit without one), writes the
// scale, and records the status (current metrics, AbleToScale,
// ScalingActive and ScalingLimited conditions with upstream's reasons) and
// the SuccessfulRescale events. It is an API client only: informers on
// HPAs and pods, the scale subresource, the metrics API.
package podautoscaler
