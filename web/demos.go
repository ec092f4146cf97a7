package web

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/labstack/echo/v5"
	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"

	"github.com/glassplane/glassplane/components"
	"github.com/glassplane/glassplane/web/demo"
)

const (
	// maxDemoRuns bounds the runs the dashboard remembers.
	maxDemoRuns = 20
	// demoRunTimeout bounds one run.
	demoRunTimeout = 15 * time.Minute
)

// demoRun is one demo played by the dashboard.
type demoRun struct {
	mu    sync.Mutex // guards lines, done, err
	id    string
	name  string
	by    string
	lines []demo.Line
	done  bool
	err   string
}

func (r *demoRun) view() components.DemoRun {
	r.mu.Lock()
	defer r.mu.Unlock()
	v := components.DemoRun{ID: r.id, Name: r.name, By: r.by, Done: r.done, Error: r.err}
	for _, l := range r.lines {
		v.Lines = append(v.Lines, components.DemoLine{Step: l.Step, Total: l.Total, Narration: l.Narration, Result: l.Result, Error: l.Err})
	}
	return v
}

// demoRuns keeps the recent runs, newest last.
type demoRuns struct {
	mu   sync.Mutex // guards runs
	runs []*demoRun
}

func (d *demoRuns) add(r *demoRun) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.runs = append(d.runs, r)
	if len(d.runs) > maxDemoRuns {
		d.runs = d.runs[len(d.runs)-maxDemoRuns:]
	}
}

func (d *demoRuns) get(id string) *demoRun {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, r := range d.runs {
		if r.id == id {
			return r
		}
	}
	return nil
}

func (d *demoRuns) list() []*demoRun {
	d.mu.Lock()
	defer d.mu.Unlock()
	out := make([]*demoRun, len(d.runs))
	for i, r := range d.runs {
		out[len(d.runs)-1-i] = r
	}
	return out
}

// demosPage lists the demos with a start button each, and the recent runs.
func (d *Dashboard) demosPage(c *echo.Context) error {
	lang := c.QueryParam("lang")
	if lang != "ko" {
		lang = "en"
	}
	vm := components.Demos{CSRFToken: csrfToken(c), Lang: lang, ActingAs: d.actingAs(c.Request()), CanRun: d.cfg.RESTConfig != nil && d.userOf(c.Request()) != nil}
	for _, dm := range demo.All() {
		vm.Demos = append(vm.Demos, components.DemoInfo{Name: dm.Name, Title: dm.Title.In(lang), Steps: len(dm.Steps), Where: demo.Where(dm, "").In(lang)})
	}
	for _, r := range d.demoRuns.list() {
		vm.Runs = append(vm.Runs, r.view())
	}
	return render(c, http.StatusOK, components.DemosPage(d.layout("Demos", components.PageDemos, d.cfg.Store.Revision(), d.auditSeq()), vm))
}

// demoStart plays a demo in the background as the request's user (Register
// lets only a logged-in user here) and answers the run (JSON); the page
// follows it at /demos/runs/:id.
func (d *Dashboard) demoStart(c *echo.Context) error {
	dm, ok := demo.Find(c.Param("name"))
	if !ok {
		return writeStatus(c, apierrors.NewNotFound(schema.GroupResource{Resource: "demos"}, c.Param("name")))
	}
	if d.cfg.RESTConfig == nil {
		return writeStatus(c, apierrors.NewServiceUnavailable(errNoAPI.Error()))
	}
	lang := c.FormValue("lang")
	if lang != "ko" {
		lang = "en"
	}
	u := d.userOf(c.Request())
	if u == nil {
		return refuseJSON(c, http.StatusForbidden, msgLogInToChange)
	}
	cfg := d.restConfigFor(u)
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return writeStatus(c, err)
	}
	if dm.Name == "rbac-denied" {
		// The demo acts as another user; the user must be allowed to.
		if !d.allowed(c.Request().Context(), client, authorizationv1.ResourceAttributes{Verb: "impersonate", Resource: "users", Name: demo.DemoUser}) {
			return writeStatus(c, apierrors.NewForbidden(schema.GroupResource{Resource: "users"}, demo.DemoUser,
				fmt.Errorf("User %q cannot impersonate resource \"users\" in API group \"\" at the cluster scope", u.User)))
		}
	}
	b := make([]byte, 8)
	if _, err := rand.Read(b); err != nil {
		return err
	}
	run := &demoRun{id: hex.EncodeToString(b), name: dm.Name, by: d.actingAs(c.Request())}
	d.demoRuns.add(run)
	// The run gets a namespace of its own (demo.NamespaceFor), as the page
	// says.
	env := &demo.Env{Client: client, Config: cfg}
	go func() {
		ctx, cancel := context.WithTimeout(context.WithoutCancel(c.Request().Context()), demoRunTimeout)
		defer cancel()
		err := demo.Run(ctx, dm, env, lang, func(l demo.Line) {
			run.mu.Lock()
			defer run.mu.Unlock()
			if n := len(run.lines); n > 0 && run.lines[n-1].Step == l.Step {
				run.lines[n-1] = l
				return
			}
			run.lines = append(run.lines, l)
		})
		run.mu.Lock()
		defer run.mu.Unlock()
		run.done = true
		if err != nil {
			run.err = err.Error()
		}
		d.log.Info("demo finished", "demo", dm.Name, "by", run.by, "err", err)
	}()
	return c.JSON(http.StatusAccepted, run.view())
}

// demoRunJSON answers one run's progress.
func (d *Dashboard) demoRunJSON(c *echo.Context) error {
	r := d.demoRuns.get(c.Param("id"))
	if r == nil {
		return writeStatus(c, apierrors.NewNotFound(schema.GroupResource{Resource: "demoruns"}, c.Param("id")))
	}
	return c.JSON(http.StatusOK, r.view())
}

// allowed asks the API server whether the client's user may do attrs.
func (d *Dashboard) allowed(ctx context.Context, client kubernetes.Interface, attrs authorizationv1.ResourceAttributes) bool {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	r, err := client.AuthorizationV1().SelfSubjectAccessReviews().Create(ctx, &authorizationv1.SelfSubjectAccessReview{
		Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &attrs},
	}, metav1.CreateOptions{})
	return err == nil && r.Status.Allowed
}
