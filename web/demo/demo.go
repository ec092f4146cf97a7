package demo

import (
	"context"
	"errors"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// Text is a narration in both languages.
type Text struct{ En, Ko string }

// In returns the text in lang ("ko" or anything else for English).
func (t Text) In(lang string) string {
	if lang == "ko" && t.Ko != "" {
		return t.Ko
	}
	return t.En
}

// Env is what a demo acts with.
type Env struct {
	// Client acts as the person running the demo.
	Client kubernetes.Interface
	// Config is Client's configuration; demos that act as another user
	// (the RBAC demo) impersonate from it.
	Config *rest.Config
	// Namespace is where the demo's objects go.
	Namespace string
	// Timeout bounds each wait; DefaultTimeout when zero.
	Timeout time.Duration
}

// DefaultTimeout bounds each wait of a step.
const DefaultTimeout = 3 * time.Minute

// Step is one narrated action. Do performs it and returns what happened,
// in the words kubectl would use.
type Step struct {
	Say Text
	Do  func(ctx context.Context, env *Env) (string, error)
}

// Demo is one scenario.
type Demo struct {
	Name  string
	Title Text
	Steps []Step
	// Cleanup removes what the steps created; it runs however they ended.
	Cleanup func(ctx context.Context, env *Env)
}

// Line is one line of a demo's output.
type Line struct {
	// Step counts from 1; Total is the number of steps.
	Step, Total int
	// Narration explains the step; Result says what happened (empty
	// before the step acted); Err is set when it failed.
	Narration string
	Result    string
	Err       string
}

// Find returns the demo called name.
func Find(name string) (Demo, bool) {
	for _, d := range All() {
		if d.Name == name {
			return d, true
		}
	}
	return Demo{}, false
}

// Run plays d: for each step, out gets the narration, then the result. It
// stops at the first failing step and always cleans up.
func Run(ctx context.Context, d Demo, env *Env, lang string, out func(Line)) error {
	if env.Timeout == 0 {
		env.Timeout = DefaultTimeout
	}
	if env.Namespace == "" {
		env.Namespace = metav1.NamespaceDefault
	}
	if d.Cleanup != nil {
		defer func() {
			cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), env.Timeout)
			defer cancel()
			d.Cleanup(cctx, env)
		}()
	}
	for i, s := range d.Steps {
		line := Line{Step: i + 1, Total: len(d.Steps), Narration: s.Say.In(lang)}
		out(line)
		res, err := s.Do(ctx, env)
		line.Result = res
		if err != nil {
			line.Err = err.Error()
			out(line)
			return fmt.Errorf("demo %s, step %d: %w", d.Name, i+1, err)
		}
		out(line)
	}
	return nil
}

// until polls cond every 200ms until it is true or the env's timeout ends;
// what names the awaited condition in the error.
func until(ctx context.Context, env *Env, what string, cond func(context.Context) (bool, error)) error {
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, env.Timeout, true, cond)
	if errors.Is(err, context.DeadlineExceeded) || wait.Interrupted(err) {
		return fmt.Errorf("gave up waiting for %s after %s", what, env.Timeout)
	}
	return err
}
