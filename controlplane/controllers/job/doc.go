// Package job is the Job controller: it runs each Job's pods to
// spec.completions successes, at most spec.parallelism at a time, as
// Kubernetes' job controller does. Pods carry the
// batch.kubernetes.io/job-tracking finalizer so each finished pod is
// counted exactly once (through status.uncountedTerminatedPods) before it
// may go; failed pods are replaced after an exponential backoff (10s,
// doubling, capped at 10m) until status.failed exceeds spec.backoffLimit
// (or, for restartPolicy OnFailure, container restarts reach it), and
// spec.activeDeadlineSeconds bounds the run. A failing job gets
// FailureTarget, loses its active pods, then gets Failed
// (BackoffLimitExceeded or DeadlineExceeded); a succeeding one gets
// SuccessCriteriaMet, then Complete and completionTime. An Indexed job runs
// each index in [0, completions) once: its pods carry the
// job-completion-index annotation and label, hostname <job>-<index> and
// JOB_COMPLETION_INDEX, and status.completedIndexes lists the indexes that
// succeeded. spec.podFailurePolicy decides per failed pod, by exit code or
// pod condition: FailJob fails the job (FailureTarget, then Failed, reason
// PodFailurePolicy), Ignore leaves the failure uncounted, Count counts it,
// FailIndex fails its index; with podReplacementPolicy Failed (its default)
// a terminating pod is replaced only once it has failed. An Indexed job
// with spec.backoffLimitPerIndex counts failures per index (the
// job-index-failure-count annotation, which a replacement pod inherits; the
// failed pod keeps its finalizer until then, and each index backs off on
// its own), lists indexes out of retries in status.failedIndexes and never
// retries them, and fails with MaxFailedIndexesExceeded past
// spec.maxFailedIndexes or FailedIndexes once every index has succeeded or
// failed. spec.successPolicy ends an Indexed job early (SuccessCriteriaMet
// and Complete with reason SuccessPolicy, remaining pods deleted) once a
// rule's succeededIndexes or succeededCount is met. It also suspends and
// resumes jobs, deletes finished ones after ttlSecondsAfterFinished, and
// frees pods whose job is gone. Events: SuccessfulCreate, SuccessfulDelete,
// Completed, and the Failed condition's reason (BackoffLimitExceeded,
// DeadlineExceeded, PodFailurePolicy, FailedIndexes,
// MaxFailedIndexesExceeded). It reads Jobs and pods through informers and
// writes pods, Job status and events through the API.
package job
