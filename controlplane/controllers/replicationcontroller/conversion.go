package replicationcontroller

import (
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// rcToRS returns the ReplicaSet view of rc, as upstream's
// Convert_v1_ReplicationController_To_apps_ReplicaSet: the same metadata,
// the selector as matchLabels, a missing template as an empty one.
func rcToRS(rc *corev1.ReplicationController) *appsv1.ReplicaSet {
	rs := &appsv1.ReplicaSet{ObjectMeta: *rc.ObjectMeta.DeepCopy()}
	rs.Spec.Replicas = copyInt32(rc.Spec.Replicas)
	rs.Spec.MinReadySeconds = rc.Spec.MinReadySeconds
	if rc.Spec.Selector != nil {
		rs.Spec.Selector = &metav1.LabelSelector{MatchLabels: copyMap(rc.Spec.Selector)}
	}
	if rc.Spec.Template != nil {
		rs.Spec.Template = *rc.Spec.Template.DeepCopy()
	}
	st := rc.Status
	rs.Status = appsv1.ReplicaSetStatus{
		Replicas: st.Replicas, FullyLabeledReplicas: st.FullyLabeledReplicas, ReadyReplicas: st.ReadyReplicas,
		AvailableReplicas: st.AvailableReplicas, ObservedGeneration: st.ObservedGeneration,
	}
	for _, c := range st.Conditions {
		rs.Status.Conditions = append(rs.Status.Conditions, appsv1.ReplicaSetCondition{
			Type: appsv1.ReplicaSetConditionType(c.Type), Status: c.Status, LastTransitionTime: c.LastTransitionTime, Reason: c.Reason, Message: c.Message,
		})
	}
	return rs
}

// rsToRC returns the ReplicationController a ReplicaSet view stands for;
// its selector must be matchLabels only, as an RC's is.
func rsToRC(rs *appsv1.ReplicaSet) (*corev1.ReplicationController, error) {
	rc := &corev1.ReplicationController{ObjectMeta: *rs.ObjectMeta.DeepCopy()}
	rc.Spec.Replicas = copyInt32(rs.Spec.Replicas)
	rc.Spec.MinReadySeconds = rs.Spec.MinReadySeconds
	if sel := rs.Spec.Selector; sel != nil {
		if len(sel.MatchExpressions) > 0 {
			return nil, fmt.Errorf("failed to convert replica set %q to a replication controller: the selector has match expressions", rs.Name)
		}
		rc.Spec.Selector = copyMap(sel.MatchLabels)
	}
	rc.Spec.Template = rs.Spec.Template.DeepCopy()
	st := rs.Status
	rc.Status = corev1.ReplicationControllerStatus{
		Replicas: st.Replicas, FullyLabeledReplicas: st.FullyLabeledReplicas, ReadyReplicas: st.ReadyReplicas,
		AvailableReplicas: st.AvailableReplicas, ObservedGeneration: st.ObservedGeneration,
	}
	for _, c := range st.Conditions {
		rc.Status.Conditions = append(rc.Status.Conditions, corev1.ReplicationControllerCondition{
			Type: corev1.ReplicationControllerConditionType(c.Type), Status: c.Status, LastTransitionTime: c.LastTransitionTime, Reason: c.Reason, Message: c.Message,
		})
	}
	return rc, nil
}

func copyInt32(p *int32) *int32 {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}

func copyMap(m map[string]string) map[string]string {
	if m == nil {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}
