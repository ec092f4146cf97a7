// Package cronjob is the CronJob controller, as kube-controller-manager's
// cronjob controller v2: it parses each CronJob's schedule with
// github.com/robfig/cron/v3 (in spec.timeZone when set), creates a Job
// named <cronjob>-<scheduled minutes since the epoch> at each scheduled
// time that is not past startingDeadlineSeconds, honours suspend and the
// Allow/Forbid/Replace concurrency policies, keeps status.active,
// lastScheduleTime and lastSuccessfulTime, prunes finished Jobs beyond the
// history limits, and requeues each CronJob for its next scheduled time.
// Events carry upstream's reasons (SuccessfulCreate, SawCompletedJob,
// SuccessfulDelete, MissSchedule, JobAlreadyActive, TooManyMissedTimes,
// UnknownTimeZone...). It reads CronJobs and Jobs through informers and
// writes Jobs, CronJob status and events through the API; its clock is
// injected so tests need not wait real minutes.
package cronjob
