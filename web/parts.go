package web

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/labstack/echo/v5"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/glassplane/glassplane/components"
)

// workloadPart fills the part an object page shows for a
// PersistentVolumeClaim (pvc.go), a CronJob (cronjob.go) or a
// HorizontalPodAutoscaler (hpa.go), read through the API as the page's
// user, and a pod's or PersistentVolume's links to its claims; other kinds
// have none.
func (d *Dashboard) workloadPart(ctx context.Context, r *http.Request, vm *components.Object) {
	switch vm.Kind {
	case "PersistentVolumeClaim":
		vm.PVC = d.pvcView(ctx, r, vm.Namespace, vm.Name)
	case "CronJob":
		vm.CronJob = d.cronJobView(ctx, r, vm.Namespace, vm.Name, time.Now())
	case "HorizontalPodAutoscaler":
		vm.HPA = d.hpaView(ctx, r, vm.Namespace, vm.Name, time.Now())
	case "Pod", "PersistentVolume":
		d.claimLinks(ctx, r, vm)
	}
}

// claimLinks links the claims a pod mounts, or the claim a
// PersistentVolume is bound to, to their pages.
func (d *Dashboard) claimLinks(ctx context.Context, r *http.Request, vm *components.Object) {
	client, err := d.api(r)
	if err != nil {
		// Without an API connection there is nothing to link.
		return
	}
	link := func(ns, name string) components.ObjectLink {
		return components.ObjectLink{Kind: "PersistentVolumeClaim", Name: name, Href: objectHref("persistentvolumeclaims", ns, name)}
	}
	if vm.Kind == "PersistentVolume" {
		pv, err := client.CoreV1().PersistentVolumes().Get(ctx, vm.Name, metav1.GetOptions{})
		if err != nil {
			vm.ClaimsError = err.Error()
		} else if ref := pv.Spec.ClaimRef; ref != nil && ref.Name != "" {
			vm.Claims = append(vm.Claims, link(ref.Namespace, ref.Name))
		}
		return
	}
	pod, err := client.CoreV1().Pods(vm.Namespace).Get(ctx, vm.Name, metav1.GetOptions{})
	if err != nil {
		vm.ClaimsError = err.Error()
		return
	}
	for _, v := range pod.Spec.Volumes {
		if c := v.PersistentVolumeClaim; c != nil {
			vm.Claims = append(vm.Claims, link(pod.Namespace, c.ClaimName))
		}
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
