package demo

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// Text is a narration, or what a step did, in both languages.
type Text struct{ En, Ko string }

// textf formats en and ko with the same args. Kubernetes' own words
// (object names, kinds, reasons, the server's messages) go in as args and
// stay as they are in both.
func textf(en, ko string, args ...any) Text {
	return Text{fmt.Sprintf(en, args...), fmt.Sprintf(ko, args...)}
}

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
	// Namespace is where the demo's objects go: an existing namespace
	// the presenter chose, where the demo touches nothing it did not
	// create. Empty means a namespace of the demo's own
	// (NamespaceFor), which Run creates and removes.
	Namespace string
	// Timeout bounds each wait; DefaultTimeout when zero.
	Timeout time.Duration

	// lang is the language of the run ("ko" or English), which Run
	// sets; the demo's own errors are worded in it.
	lang string
	// actAs, when set, is how the demo acts as another user instead of
	// impersonating from Config (the tests' fake API).
	actAs func(user string) (kubernetes.Interface, error)
	// extensions, when set, gives the custom-resource demo its CRD and
	// dynamic clients instead of making them from Config (the tests' fake
	// API).
	extensions func() (apiextensionsclient.Interface, dynamic.Interface, error)

	mu      sync.Mutex // guards created
	created []createdObject
}

// errorf is an error of the demo's own in the run's language: ko's format
// for Korean, en's otherwise, with the same args (%w wraps).
func (env *Env) errorf(en, ko string, args ...any) error {
	return fmt.Errorf(Text{en, ko}.In(env.lang), args...)
}

// deleteFunc is a typed client's Delete.
type deleteFunc func(ctx context.Context, name string, opts metav1.DeleteOptions) error

// createdObject is an object this run created, which its cleanup deletes
// if it still has the uid it was created with.
type createdObject struct {
	what, name string
	uid        types.UID
	del        deleteFunc
	opts       metav1.DeleteOptions
}

// remember notes obj, of kind what ("pod", "deployment.apps", ...), as
// created by this run, to be deleted by del when the run ends; opts adds
// to the uid precondition (a grace period, a propagation policy).
func (env *Env) remember(what string, obj metav1.Object, del deleteFunc, opts metav1.DeleteOptions) {
	env.mu.Lock()
	defer env.mu.Unlock()
	env.created = append(env.created, createdObject{what: what, name: obj.GetName(), uid: obj.GetUID(), del: del, opts: opts})
}

// deleteCreated deletes what the run created, newest first, each only if
// it still is the object the run created (a uid precondition): an object
// of the same name that someone else made meanwhile stays.
func (env *Env) deleteCreated(ctx context.Context) error {
	env.mu.Lock()
	created := env.created
	env.created = nil
	env.mu.Unlock()
	var errs []error
	for i := len(created) - 1; i >= 0; i-- {
		o := created[i]
		opts := o.opts
		opts.Preconditions = &metav1.Preconditions{UID: &o.uid}
		err := o.del(ctx, o.name, opts)
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			errs = append(errs, env.errorf("failed to delete %s/%s: %w", "%s/%s 삭제에 실패했습니다: %w", o.what, o.name, err))
		}
	}
	return errors.Join(errs...)
}

// NamespacePrefix starts the name of the namespace each demo runs in by
// default.
const NamespacePrefix = "glassplane-demo-"

// NamespaceFor is the namespace of d's own, where it runs unless told
// otherwise.
func NamespaceFor(d Demo) string { return NamespacePrefix + d.Name }

// Where says where d runs with namespace ("" for its own).
func Where(d Demo, namespace string) Text {
	if namespace == "" {
		ns := NamespaceFor(d)
		return Text{
			"Runs in namespace " + ns + ", created for the run and removed after it with everything in it.",
			"네임스페이스 " + ns + "에서 실행합니다. 실행할 때 만들고, 끝나면 그 안의 모든 것과 함께 지웁니다.",
		}
	}
	return Text{
		"Runs in namespace " + namespace + ", deleting afterwards only what the demo created there.",
		"네임스페이스 " + namespace + "에서 실행하며, 끝나면 데모가 만든 것만 지웁니다.",
	}
}

// DefaultTimeout bounds each wait of a step.
const DefaultTimeout = 3 * time.Minute

// Step is one narrated action. Do performs it and returns what happened,
// in both languages, with the names and reasons kubectl would show.
type Step struct {
	Say Text
	Do  func(ctx context.Context, env *Env) (Text, error)
}

// Demo is one scenario.
type Demo struct {
	Name  string
	Title Text
	Steps []Step
	// Cleanup undoes what the steps changed beyond the objects they
	// created (Run deletes those, by uid); it runs however they ended,
	// before those deletions. Nil when there is nothing more.
	Cleanup func(ctx context.Context, env *Env)
}

// Line is one line of a demo's output.
type Line struct {
	// Step counts from 1; Total is the number of steps.
	Step, Total int
	// Narration explains the step; Result says what happened (empty
	// before the step acted); Err is set when it failed. All three are
	// in the run's language, except Kubernetes' own words.
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
// stops at the first failing step and always cleans up: it deletes what
// the run created (by uid, never an object of the same name that someone
// else made) and, when env.Namespace is empty, runs in a namespace of its
// own (NamespaceFor) that it creates first, refusing to run if one is
// left from another run, and removes after. The narration, the results and
// its own messages are in lang ("ko" or English).
func Run(ctx context.Context, d Demo, env *Env, lang string, out func(Line)) (retErr error) {
	if env.Timeout == 0 {
		env.Timeout = DefaultTimeout
	}
	env.lang = lang
	if env.Namespace == "" {
		ns, err := createNamespace(ctx, env, NamespaceFor(d))
		if err != nil {
			return err
		}
		env.Namespace = ns.Name
		defer func() {
			cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), env.Timeout)
			defer cancel()
			if err := removeNamespace(cctx, env, ns); err != nil {
				retErr = errors.Join(retErr, err)
			}
		}()
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), env.Timeout)
		defer cancel()
		if d.Cleanup != nil {
			d.Cleanup(cctx, env)
		}
		if err := env.deleteCreated(cctx); err != nil {
			retErr = errors.Join(retErr, env.errorf("demo %s, cleanup: %w", "데모 %s 정리 중: %w", d.Name, err))
		}
	}()
	for i, s := range d.Steps {
		line := Line{Step: i + 1, Total: len(d.Steps), Narration: s.Say.In(lang)}
		out(line)
		res, err := s.Do(ctx, env)
		line.Result = res.In(lang)
		if err != nil {
			if apierrors.IsAlreadyExists(err) {
				err = &clashError{err: err, msg: clash(err).In(lang)}
			}
			line.Err = err.Error()
			out(line)
			return env.errorf("demo %s, step %d: %w", "데모 %s, %d단계: %w", d.Name, i+1, err)
		}
		out(line)
	}
	return nil
}

// clashError is a step's create refused because an object of the name is
// already there: not this run's, so the demo stops and leaves it alone.
type clashError struct {
	err error
	msg string
}

func (e *clashError) Error() string { return e.msg }
func (e *clashError) Unwrap() error { return e.err }

func clash(err error) Text {
	return Text{
		fmt.Sprintf("%v: it is not this run's, so the demo stops here and leaves it alone. Without --namespace a demo plays in a namespace of its own.", err),
		fmt.Sprintf("%v: 이번 실행이 만든 것이 아니므로 데모는 여기서 멈추고 그 오브젝트는 건드리지 않습니다. --namespace 없이 실행하면 데모 전용 네임스페이스에서 진행합니다.", err),
	}
}

// NamespaceInUseError is Run's refusal to play a demo whose namespace is
// left from another run (or another run still plays it).
type NamespaceInUseError struct {
	Namespace string
	text      string
}

func (e *NamespaceInUseError) Error() string { return e.text }

// createNamespace creates the run's own namespace, refusing one that is
// already there.
func createNamespace(ctx context.Context, env *Env, name string) (*corev1.Namespace, error) {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{demoLabel: strings.TrimPrefix(name, NamespacePrefix)}}}
	created, err := env.Client.CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		t := Text{
			fmt.Sprintf("namespace %s is left from another run of this demo, or another run is playing in it; it is not removed for you. Remove it with: kubectl delete namespace %s", name, name),
			fmt.Sprintf("네임스페이스 %s가 이 데모의 다른 실행에서 남아 있거나, 다른 실행이 그 안에서 진행 중입니다. 자동으로 지우지 않습니다. 다음 명령으로 지우세요: kubectl delete namespace %s", name, name),
		}
		return nil, &NamespaceInUseError{Namespace: name, text: t.In(env.lang)}
	}
	if err != nil {
		return nil, env.errorf("failed to create namespace %q for the demo: %w", "데모용 네임스페이스 %q 생성에 실패했습니다: %w", name, err)
	}
	return created, nil
}

// removeNamespace deletes the run's namespace, if it still is the one the
// run created, and waits until it is gone.
func removeNamespace(ctx context.Context, env *Env, ns *corev1.Namespace) error {
	err := env.Client.CoreV1().Namespaces().Delete(ctx, ns.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &ns.UID}})
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return nil
	}
	if err != nil {
		return env.errorf("failed to delete namespace %q: %w", "네임스페이스 %q 삭제에 실패했습니다: %w", ns.Name, err)
	}
	return until(ctx, env, textf("namespace %s to be gone", "네임스페이스 %s 삭제", ns.Name), func(ctx context.Context) (bool, error) {
		got, err := env.Client.CoreV1().Namespaces().Get(ctx, ns.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return err == nil && got.UID != ns.UID, err
	})
}

// until polls cond every 200ms until it is true or the env's timeout ends;
// what names the awaited condition in the error ("the pod to be
// scheduled", "Pod 스케줄링").
func until(ctx context.Context, env *Env, what Text, cond func(context.Context) (bool, error)) error {
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, env.Timeout, true, cond)
	if errors.Is(err, context.DeadlineExceeded) || wait.Interrupted(err) {
		return env.errorf("gave up waiting for %s after %s", "%s: %s 동안 기다렸지만 이루어지지 않아 포기했습니다", what.In(env.lang), env.Timeout)
	}
	return err
}
