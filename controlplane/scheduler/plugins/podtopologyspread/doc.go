// Package podtopologyspread is the PodTopologySpread plugin: its filter
// keeps the skew of matching pods across topology domains within maxSkew
// for constraints with whenUnsatisfiable: DoNotSchedule, and its score
// prefers the emptier domains for ScheduleAnyway constraints, with
// kube-scheduler's formulas. It reads only the pod and the snapshot's
// NodeInfos. kube-scheduler's system default constraints (applied to pods
// selected by Services and controllers) are not applied.
package podtopologyspread
