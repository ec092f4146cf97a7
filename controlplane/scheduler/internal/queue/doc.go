// Package queue is the scheduler's pod queue, modelled on kube-scheduler's
// PriorityQueue: an active heap ordered by the profile's QueueSort plugin, a
// backoff heap of pods waiting out their backoff (initial 1 s, doubling per
// attempt up to 10 s) and a set of unschedulable pods that wait for a
// cluster change (a node added or updated, a pod deleted) before they are
// tried again. It holds pods only; it touches no API server.
package queue
