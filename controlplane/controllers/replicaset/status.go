package replicaset

import (
	"context"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/glassplane/glassplane/controlplane/controllers/internal/controllerutil"
)

// calculateStatus counts the ReplicaSet's pods and sets or clears the
// ReplicaFailure condition from manageErr.
func calculateStatus(rs *appsv1.ReplicaSet, pods []*v1.Pod, manageErr error) appsv1.ReplicaSetStatus {
	status := *rs.Status.DeepCopy()
	templateLabels := labels.Set(rs.Spec.Template.Labels).AsSelectorPreValidated()
	now := time.Now()
	var fully, ready, available int32
	for _, p := range pods {
		if templateLabels.Matches(labels.Set(p.Labels)) {
			fully++
		}
		if controllerutil.IsPodReady(p) {
			ready++
			if controllerutil.IsPodAvailable(p, rs.Spec.MinReadySeconds, now) {
				available++
			}
		}
	}
	failure := conditionIndex(status.Conditions, appsv1.ReplicaSetReplicaFailure)
	switch {
	case manageErr != nil && failure < 0:
		reason := "FailedCreate"
		if int(*rs.Spec.Replicas) < len(pods) {
			reason = "FailedDelete"
		}
		status.Conditions = append(status.Conditions, appsv1.ReplicaSetCondition{
			Type: appsv1.ReplicaSetReplicaFailure, Status: v1.ConditionTrue,
			LastTransitionTime: metav1.Now(), Reason: reason, Message: manageErr.Error(),
		})
	case manageErr == nil && failure >= 0:
		status.Conditions = append(status.Conditions[:failure], status.Conditions[failure+1:]...)
	}
	status.Replicas = int32(len(pods))
	status.FullyLabeledReplicas = fully
	status.ReadyReplicas = ready
	status.AvailableReplicas = available
	return status
}

func conditionIndex(conds []appsv1.ReplicaSetCondition, t appsv1.ReplicaSetConditionType) int {
	for i := range conds {
		if conds[i].Type == t {
			return i
		}
	}
	return -1
}

// updateStatus writes status with the current observedGeneration unless
// nothing changed, retrying once on a conflict with a fresh read.
func (c *Controller) updateStatus(ctx context.Context, rs *appsv1.ReplicaSet, status appsv1.ReplicaSetStatus) (*appsv1.ReplicaSet, error) {
	status.ObservedGeneration = rs.Generation
	if equality.Semantic.DeepEqual(rs.Status, status) {
		return rs, nil
	}
	client := c.client.AppsV1().ReplicaSets(rs.Namespace)
	var err error
	for attempt := 0; attempt < 2; attempt++ {
		rs.Status = status
		var updated *appsv1.ReplicaSet
		updated, err = client.UpdateStatus(ctx, rs, metav1.UpdateOptions{})
		if err == nil {
			return updated, nil
		}
		if !apierrors.IsConflict(err) {
			break
		}
		fresh, getErr := client.Get(ctx, rs.Name, metav1.GetOptions{})
		if getErr != nil {
			return nil, fmt.Errorf("failed to get replica set %q: %w", rs.Name, getErr)
		}
		rs = fresh
		status.ObservedGeneration = rs.Generation
	}
	return nil, fmt.Errorf("failed to update status of replica set %q: %w", rs.Name, err)
}
