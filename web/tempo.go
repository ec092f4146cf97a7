package web

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/glassplane/glassplane/web/source"

	"github.com/labstack/echo/v5"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/util/retry"

	"github.com/glassplane/glassplane/components"
	"github.com/glassplane/glassplane/controlplane/tempo"
)

// tempoKey is the tempo object's etcd key.
var tempoKey = source.Prefix("configmaps", tempo.Namespace) + tempo.Name

// tempoState reads the tempo from the store.
func (d *Dashboard) tempoState(ctx context.Context) tempo.State {
	kv, err := d.cfg.Store.Get(ctx, tempoKey)
	if err != nil {
		return tempo.Default()
	}
	var cm corev1.ConfigMap
	if err := json.Unmarshal(kv.Value, &cm); err != nil {
		return tempo.Default()
	}
	return tempo.FromConfigMap(&cm)
}

// tempoPanel is the overview's tempo control for the request's user.
func (d *Dashboard) tempoPanel(c *echo.Context) components.Tempo {
	s := d.tempoState(c.Request().Context())
	vm := tempoModel(s)
	vm.CSRFToken = csrfToken(c)
	vm.ActingAs = d.actingAs(c.Request())
	vm.CanChange = d.mayChangeTempo(c)
	return vm
}

func tempoModel(s tempo.State) components.Tempo {
	vm := components.Tempo{
		Mode: string(s.Mode), Delay: s.Delay.String(), Released: s.Released, Taken: s.Taken,
		LastStep: s.LastStep, Waiting: s.WaitingActions(),
	}
	if vm.Waiting == nil {
		vm.Waiting = []string{}
	}
	for _, m := range tempo.Modes {
		vm.Modes = append(vm.Modes, string(m))
	}
	return vm
}

// mayChangeTempo asks the API server, as the request's user, whether they
// may update the tempo object; without a login nobody may.
func (d *Dashboard) mayChangeTempo(c *echo.Context) bool {
	if d.userOf(c.Request()) == nil {
		return false
	}
	client, err := d.kubeClient(c)
	if err != nil {
		return false
	}
	ctx, cancel := context.WithTimeout(c.Request().Context(), 5*time.Second)
	defer cancel()
	r, err := client.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authorizationv1.SelfSubjectAccessReview{
		Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{
			Namespace: tempo.Namespace, Verb: "update", Resource: "configmaps", Name: tempo.Name,
		}},
	}, metav1.CreateOptions{})
	return err == nil && r.Status.Allowed
}

// tempoSet changes the mode (and slow mode's delay) as the request's user.
// Entering step mode drops steps released before, so each Next from then
// on lets exactly one action through. It answers the new tempo as JSON, or
// the API's metav1.Status.
func (d *Dashboard) tempoSet(c *echo.Context) error {
	mode, delay, errs := tempo.ParseMode(c.FormValue("mode"), c.FormValue("delay"))
	if len(errs) > 0 {
		return writeStatus(c, apierrors.NewInvalid(schema.GroupKind{Kind: "ConfigMap"}, tempo.Name, errs))
	}
	return d.updateTempo(c, func(s *tempo.State) error {
		if mode == tempo.Step && s.Mode != tempo.Step {
			s.Released = s.Taken
		}
		s.Mode, s.Delay = mode, delay
		return nil
	})
}

// tempoNext releases one step as the request's user: one waiting action
// (or the next one to come) goes ahead.
func (d *Dashboard) tempoNext(c *echo.Context) error {
	return d.updateTempo(c, func(s *tempo.State) error {
		if s.Mode != tempo.Step {
			return apierrors.NewConflict(schema.GroupResource{Resource: "configmaps"}, tempo.Name,
				fmt.Errorf("the tempo is %s, not step", s.Mode))
		}
		s.Released = max(s.Released, s.Taken) + 1
		return nil
	})
}

// updateTempo reads, changes and writes the tempo object through the API as
// the request's user, retrying on conflicts with the components' claims.
func (d *Dashboard) updateTempo(c *echo.Context, change func(*tempo.State) error) error {
	client, err := d.kubeClient(c)
	if err != nil {
		return writeStatus(c, apierrors.NewServiceUnavailable(err.Error()))
	}
	ctx := c.Request().Context()
	cms := client.CoreV1().ConfigMaps(tempo.Namespace)
	var out tempo.State
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cm, err := cms.Get(ctx, tempo.Name, metav1.GetOptions{})
		create := apierrors.IsNotFound(err)
		if create {
			cm, err = tempo.NewConfigMap(tempo.Default()), nil
		}
		if err != nil {
			return err
		}
		s := tempo.FromConfigMap(cm)
		if err := change(&s); err != nil {
			return err
		}
		s.Write(cm)
		if create {
			cm, err = cms.Create(ctx, cm, metav1.CreateOptions{FieldManager: fieldManager})
		} else {
			cm, err = cms.Update(ctx, cm, metav1.UpdateOptions{FieldManager: fieldManager})
		}
		if err == nil {
			out = tempo.FromConfigMap(cm)
		}
		return err
	})
	if err != nil {
		return writeStatus(c, err)
	}
	d.log.Info("tempo changed", "by", d.actingAs(c.Request()), "mode", out.Mode, "delay", out.Delay, "released", out.Released)
	return c.JSON(http.StatusOK, tempoModel(out))
}

// writeStatus answers an API error as its metav1.Status.
func writeStatus(c *echo.Context, err error) error {
	var se apierrors.APIStatus
	if !errors.As(err, &se) {
		se = apierrors.NewInternalError(err)
	}
	st := se.Status()
	st.Kind, st.APIVersion = "Status", "v1"
	code := int(st.Code)
	if code == 0 {
		code = http.StatusInternalServerError
	}
	return c.JSON(code, st)
}
