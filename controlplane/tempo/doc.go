// Package tempo is the classroom tempo every component obeys: realtime,
// slow (each action waits a set delay) or step (each action waits until the
// presenter releases one step). The tempo is the ConfigMap
// kube-system/glassplane-tempo, so components in any process read it the
// way they read everything else, through the API with a watch:
//
//	data:
//	  mode: step          # realtime | slow | step (absent object: realtime)
//	  delay: 2s           # slow mode: the wait before each action
//	  released: "4"       # steps the presenter released (Next presses)
//	  taken: "3"          # steps components claimed
//	  lastStep: "scheduler: schedule pod default/mypod"
//	  waiting.scheduler.1a2b3c4d: "scheduler: schedule pod default/web"
//
// A Gate watches that one object under a component's own identity. Wait
// blocks the calling action as the tempo says; in step mode it lists the
// action under a waiting.* key while it waits and claims a step by raising
// taken with an optimistic-concurrency update, so one released step lets
// exactly one action through, whichever process it runs in. The scheduler
// waits before each scheduling cycle, the node agent before starting each
// container, and the controller manager before each write it sends to the
// API (GateConfig; Events, Leases and the tempo itself pass untouched).
// Components find their gate in the context (Gated, WithGate); without one
// Wait returns at once. The dashboard changes the tempo as the logged-in
// user, so RBAC decides who may: update on that ConfigMap.
package tempo
