package web

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/labstack/echo/v5"

	"github.com/glassplane/glassplane/components"
)

// workloadPart fills the part an object page shows for a
// PersistentVolumeClaim (pvc.go), a CronJob (cronjob.go) or a
// HorizontalPodAutoscaler (hpa.go), read through the API as the page's
// user; other kinds have none.
func (d *Dashboard) workloadPart(ctx context.Context, r *http.Request, vm *components.Object) {
	switch vm.Kind {
	case "PersistentVolumeClaim":
		vm.PVC = d.pvcView(ctx, r, vm.Namespace, vm.Name)
	case "CronJob":
		vm.CronJob = d.cronJobView(ctx, r, vm.Namespace, vm.Name, time.Now())
	case "HorizontalPodAutoscaler":
		vm.HPA = d.hpaView(ctx, r, vm.Namespace, vm.Name, time.Now())
	}
}

// renderWorkloadPart answers ?part=pvc, cronjob or hpa with that part
// alone, for the page's live updates; an object not stored, or a part it
// does not have, is a 404 ("… not found" in Kubernetes' words).
func renderWorkloadPart(c *echo.Context, vm components.Object, part string) error {
	switch {
	case part == "pvc" && vm.PVC != nil:
		return render(c, http.StatusOK, components.PVCView(*vm.PVC))
	case part == "cronjob" && vm.CronJob != nil:
		return render(c, http.StatusOK, components.CronJobView(*vm.CronJob))
	case part == "hpa" && vm.HPA != nil:
		return render(c, http.StatusOK, components.HPAView(*vm.HPA))
	}
	if !vm.Found {
		return echo.NewHTTPError(http.StatusNotFound, fmt.Sprintf("%s %q not found", vm.Resource, vm.Name))
	}
	return echo.NewHTTPError(http.StatusNotFound, fmt.Sprintf("%s %q has no part %q", vm.Resource, vm.Name, part))
}
