// Package queuesort is the PrioritySort plugin: it orders the scheduling
// queue by pod priority, then by age. It reads only the queued pods.
package queuesort
