package apiserver

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/glassplane/glassplane/controlplane/tempo"
)

// bootstrapTempo creates the classroom tempo (ConfigMap
// kube-system/glassplane-tempo, realtime) when it is missing, so that the
// components and the dashboard find it; users RBAC allows change it with
// kubectl edit or the dashboard.
func (s *Server) bootstrapTempo(ctx context.Context) error {
	res := s.byPath[corev1.SchemeGroupVersion.WithResource("configmaps")]
	cm := tempo.NewConfigMap(tempo.Default())
	prepareForCreate(res, cm)
	_, err := s.createInStore(ctx, res, cm)
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("failed to create configmap %s/%s: %w", tempo.Namespace, tempo.Name, err)
	}
	if err == nil {
		s.log.Info("created the classroom tempo", "configmap", tempo.Namespace+"/"+tempo.Name)
	}
	return nil
}
