package apiserver

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/glassplane/glassplane/controlplane/apiserver/admission"
)

// view is how GET, PUT and PATCH see an object: the object itself, or a
// subresource of it (status, scale, finalize).
type view struct {
	// main is true for the object itself.
	main bool
	// bodyKind is the kind of the request and response bodies; zero means
	// the resource's kind.
	bodyKind schema.GroupVersionKind
	// get returns what GET answers for the stored object.
	get func(res *resource, obj runtime.Object) runtime.Object
	// merge returns the object to store from the stored one and the
	// request's body.
	merge func(res *resource, cur, in runtime.Object) (runtime.Object, error)
}

func (v *view) kind(res *resource) schema.GroupVersionKind {
	if v.bodyKind.Empty() {
		return res.GVK
	}
	return v.bodyKind
}

func identity(_ *resource, obj runtime.Object) runtime.Object { return obj }

// mainView serves the object itself.
var mainView = &view{
	main: true,
	get:  identity,
	merge: func(res *resource, cur, in runtime.Object) (runtime.Object, error) {
		prepareForUpdate(res, cur, in)
		return in, nil
	},
}

// subresource is one served subresource of a resource.
type subresource struct {
	Name string
	// Kind is the body kind for discovery and OpenAPI; zero means the
	// parent's kind.
	Kind  schema.GroupVersionKind
	Verbs []string
	// view serves get, update and patch; nil for create-only subresources.
	view *view
	// connect serves a subresource answered by the pod's node (log, exec).
	connect func(q *request) error
	// create serves POST on a create-only subresource (binding, token).
	create func(q *request) error
	// path lets the subresource take a path after its name
	// (nodes/<name>/proxy/<path>).
	path bool
}

func statusSubresource() *subresource {
	return &subresource{Name: "status", Verbs: verbsStatus, view: &view{
		get: identity,
		merge: func(_ *resource, cur, in runtime.Object) (runtime.Object, error) {
			prepareForStatusUpdate(cur, in)
			return in, nil
		},
	}}
}

func finalizeSubresource() *subresource {
	return &subresource{Name: "finalize", Verbs: []string{"update"}, view: &view{
		get: identity,
		merge: func(_ *resource, cur, in runtime.Object) (runtime.Object, error) {
			ns := cur.(*corev1.Namespace)
			ns.Spec.Finalizers = in.(*corev1.Namespace).Spec.Finalizers
			return ns, nil
		},
	}}
}

func bindingSubresource() *subresource {
	return &subresource{Name: "binding", Kind: corev1.SchemeGroupVersion.WithKind("Binding"), Verbs: verbsBinding, create: (*request).bind}
}

var scaleKind = autoscalingv1.SchemeGroupVersion.WithKind("Scale")

func scaleSubresource() *subresource {
	return &subresource{Name: "scale", Kind: scaleKind, Verbs: verbsStatus, view: &view{
		bodyKind: scaleKind,
		get:      toScale,
		merge: func(res *resource, cur, in runtime.Object) (runtime.Object, error) {
			scale := in.(*autoscalingv1.Scale)
			if scale.Spec.Replicas < 0 {
				return nil, apierrors.NewInvalid(scaleKind.GroupKind(), scale.Name, field.ErrorList{field.Invalid(field.NewPath("spec", "replicas"), scale.Spec.Replicas, "must be greater than or equal to 0")})
			}
			next := cur.DeepCopyObject()
			replicas := scale.Spec.Replicas
			switch o := next.(type) {
			case *appsv1.Deployment:
				o.Spec.Replicas = &replicas
			case *appsv1.ReplicaSet:
				o.Spec.Replicas = &replicas
			case *appsv1.StatefulSet:
				o.Spec.Replicas = &replicas
			case *corev1.ReplicationController:
				o.Spec.Replicas = &replicas
			default:
				return nil, fmt.Errorf("failed to scale %T: not scalable", next)
			}
			prepareForUpdate(res, cur, next)
			return next, nil
		},
	}}
}

// toScale returns the autoscaling/v1 Scale of a deployment, replica set or
// replication controller.
func toScale(_ *resource, obj runtime.Object) runtime.Object {
	var spec, status int32 = 1, 0
	var selector *metav1.LabelSelector
	switch o := obj.(type) {
	case *appsv1.Deployment:
		if o.Spec.Replicas != nil {
			spec = *o.Spec.Replicas
		}
		status, selector = o.Status.Replicas, o.Spec.Selector
	case *appsv1.ReplicaSet:
		if o.Spec.Replicas != nil {
			spec = *o.Spec.Replicas
		}
		status, selector = o.Status.Replicas, o.Spec.Selector
	case *appsv1.StatefulSet:
		if o.Spec.Replicas != nil {
			spec = *o.Spec.Replicas
		}
		status, selector = o.Status.Replicas, o.Spec.Selector
	case *corev1.ReplicationController:
		if o.Spec.Replicas != nil {
			spec = *o.Spec.Replicas
		}
		status, selector = o.Status.Replicas, metav1.SetAsLabelSelector(o.Spec.Selector)
	}
	m, _ := meta.Accessor(obj)
	scale := &autoscalingv1.Scale{
		ObjectMeta: metav1.ObjectMeta{
			Name: m.GetName(), Namespace: m.GetNamespace(), UID: m.GetUID(),
			ResourceVersion: m.GetResourceVersion(), CreationTimestamp: m.GetCreationTimestamp(),
		},
		Spec:   autoscalingv1.ScaleSpec{Replicas: spec},
		Status: autoscalingv1.ScaleStatus{Replicas: status},
	}
	scale.SetGroupVersionKind(scaleKind)
	if selector != nil {
		if sel, err := metav1.LabelSelectorAsSelector(selector); err == nil {
			scale.Status.Selector = sel.String()
		}
	}
	return scale
}

// serveResource dispatches a resource request by verb and subresource.
func (q *request) serveResource() error {
	if q.info.Name == "" && q.res.Namespaced && q.info.Namespace == "" && q.info.Verb != "list" && q.info.Verb != "watch" {
		return errNoRoute()
	}
	if q.info.Subresource == "" {
		if q.info.Verb != "" && !containsVerb(q.res.Verbs, q.info.Verb) {
			return apierrors.NewMethodNotSupported(q.res.GroupResource(), q.info.Verb)
		}
		switch q.info.Verb {
		case "get":
			return q.get()
		case "list":
			return q.list()
		case "watch":
			return q.watch()
		case "create":
			if q.info.Name != "" {
				return apierrors.NewMethodNotSupported(q.res.GroupResource(), "create")
			}
			return q.create()
		case "update":
			return q.put(mainView)
		case "patch":
			return q.patch(mainView)
		case "delete":
			return q.delete()
		case "deletecollection":
			return q.deleteCollection()
		}
		return apierrors.NewMethodNotSupported(q.res.GroupResource(), q.r.Method)
	}
	sub := q.res.subresource(q.info.Subresource)
	if sub == nil || (len(q.info.Parts) > 3 && !sub.path) {
		return errNoRoute()
	}
	gr := schema.GroupResource{Group: q.res.GVK.Group, Resource: q.res.Resource + "/" + sub.Name}
	if sub.connect != nil {
		return sub.connect(q)
	}
	if sub.view == nil {
		if q.info.Verb != "create" {
			return apierrors.NewMethodNotSupported(gr, q.info.Verb)
		}
		return sub.create(q)
	}
	if !containsVerb(sub.Verbs, q.info.Verb) {
		return apierrors.NewMethodNotSupported(gr, q.info.Verb)
	}
	switch q.info.Verb {
	case "get":
		obj, err := q.s.getFromStore(q.ctx, q.res, q.info.Namespace, q.info.Name)
		if err != nil {
			return err
		}
		q.setObjectRef(obj)
		q.respond(http.StatusOK, sub.view.get(q.res, obj))
		return nil
	case "update":
		return q.put(sub.view)
	case "patch":
		return q.patch(sub.view)
	}
	return apierrors.NewMethodNotSupported(gr, q.info.Verb)
}

// bind serves POST pods/<name>/binding: it assigns the pod to a node, as
// kube-apiserver's BindingREST does.
func (q *request) bind() error {
	q.enter(stageDecoding)
	body, err := q.readBody()
	if err != nil {
		return err
	}
	in, raw, err := q.decodeBody(body, corev1.SchemeGroupVersion.WithKind("Binding"))
	if err != nil {
		return err
	}
	q.recordObject(raw)
	binding := in.(*corev1.Binding)
	if err := q.checkNameAndNamespace(binding); err != nil {
		return err
	}
	bindingKind := corev1.SchemeGroupVersion.WithKind("Binding").GroupKind()
	if binding.Target.Name == "" {
		return apierrors.NewInvalid(bindingKind, binding.Name, field.ErrorList{field.Required(field.NewPath("target", "name"), "")})
	}
	if binding.Target.Kind != "" && binding.Target.Kind != "Node" {
		return apierrors.NewInvalid(bindingKind, binding.Name, field.ErrorList{field.NotSupported(field.NewPath("target", "kind"), binding.Target.Kind, []string{"Node", "<empty>"})})
	}
	dryRun, err := q.dryRun()
	if err != nil {
		return err
	}
	if err := q.admit(admission.Create, binding, nil, dryRun); err != nil {
		return err
	}
	bindingGR := schema.GroupResource{Resource: "pods/binding"}
	result, err := q.update(binding.Name, "", func(cur runtime.Object) (runtime.Object, error) {
		pod := cur.(*corev1.Pod)
		if pod.DeletionTimestamp != nil {
			return nil, apierrors.NewConflict(bindingGR, pod.Name, fmt.Errorf("pod %s is being deleted, cannot be assigned to a host", pod.Name))
		}
		if pod.Spec.NodeName != "" {
			return nil, apierrors.NewConflict(bindingGR, pod.Name, fmt.Errorf("pod %v is already assigned to node %q", pod.Name, pod.Spec.NodeName))
		}
		if uid := binding.UID; uid != "" && uid != pod.UID {
			return nil, apierrors.NewConflict(bindingGR, pod.Name, errors.New("the UID in the binding does not match the pod's"))
		}
		pod.Spec.NodeName = binding.Target.Name
		for k, v := range binding.Annotations {
			if pod.Annotations == nil {
				pod.Annotations = map[string]string{}
			}
			pod.Annotations[k] = v
		}
		setPodCondition(pod, corev1.PodCondition{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(time.Now())})
		return pod, nil
	}, nil)
	if err != nil {
		return err
	}
	q.setObjectRef(result.obj)
	q.writeJSON(http.StatusCreated, &metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: metav1.StatusSuccess, Code: http.StatusCreated})
	return nil
}

// setPodCondition replaces or appends a pod condition.
func setPodCondition(pod *corev1.Pod, c corev1.PodCondition) {
	for i := range pod.Status.Conditions {
		if pod.Status.Conditions[i].Type == c.Type {
			if pod.Status.Conditions[i].Status == c.Status {
				c.LastTransitionTime = pod.Status.Conditions[i].LastTransitionTime
			}
			pod.Status.Conditions[i] = c
			return
		}
	}
	pod.Status.Conditions = append(pod.Status.Conditions, c)
}

// ephemeralContainersSubresource is pods/ephemeralcontainers, the way
// ephemeral containers are added to a running pod (kubectl debug), as
// upstream's EphemeralContainersREST: it reads the whole pod and writes
// only spec.ephemeralContainers, which may only grow.
// resizeSubresource serves pods/resize as upstream's podResizeStrategy:
// of the body, only the containers' (and sidecars') resources and resize
// policies are taken, everything else stays as stored; containers added,
// removed or renamed are passed on as they are for validation to refuse. A
// change is a spec change (the generation grows); the node agent actuates
// it and reports it in the pod's status.
func resizeSubresource() *subresource {
	return &subresource{Name: "resize", Verbs: verbsStatus, view: &view{
		get: identity,
		merge: func(_ *resource, cur, in runtime.Object) (runtime.Object, error) {
			old := cur.(*corev1.Pod)
			body := in.(*corev1.Pod)
			next := old.DeepCopy()
			next.Spec.Containers = resizedContainers(body.Spec.Containers, old.Spec.Containers)
			next.Spec.InitContainers = resizedContainers(body.Spec.InitContainers, old.Spec.InitContainers)
			if !apiequality.Semantic.DeepEqual(next.Spec, old.Spec) {
				next.Generation = old.Generation + 1
			}
			return next, nil
		},
	}}
}

// resizedContainers is old with each container's resources and resize
// policy from next; next itself when containers were added, removed or
// renamed.
func resizedContainers(next, old []corev1.Container) []corev1.Container {
	if len(next) != len(old) {
		return next
	}
	out := make([]corev1.Container, len(old))
	for i := range old {
		if next[i].Name != old[i].Name {
			return next
		}
		out[i] = *old[i].DeepCopy()
		out[i].Resources = *next[i].Resources.DeepCopy()
		out[i].ResizePolicy = slices.Clone(next[i].ResizePolicy)
	}
	return out
}

func ephemeralContainersSubresource() *subresource {
	return &subresource{Name: "ephemeralcontainers", Verbs: verbsStatus, view: &view{
		get: identity,
		merge: func(_ *resource, cur, in runtime.Object) (runtime.Object, error) {
			old := cur.(*corev1.Pod)
			next := old.DeepCopy()
			next.Spec.EphemeralContainers = in.(*corev1.Pod).Spec.EphemeralContainers
			if errs := validateEphemeralContainersUpdate(next, old); len(errs) > 0 {
				return nil, apierrors.NewInvalid(corev1.SchemeGroupVersion.WithKind("Pod").GroupKind(), old.Name, errs)
			}
			// A change of the ephemeral containers is a spec change: the
			// pod's generation grows, as upstream's.
			if !apiequality.Semantic.DeepEqual(next.Spec.EphemeralContainers, old.Spec.EphemeralContainers) {
				next.Generation = old.Generation + 1
			}
			return next, nil
		},
	}}
}

// validateEphemeralContainersUpdate is upstream's check of an ephemeral
// containers update: existing ones may be neither changed nor removed, and
// a new one has a unique DNS-label name, an image, none of the fields an
// ephemeral container may not have, and a target among the pod's
// containers.
func validateEphemeralContainersUpdate(pod, old *corev1.Pod) field.ErrorList {
	fld := field.NewPath("spec", "ephemeralContainers")
	var errs field.ErrorList
	kept := map[string]bool{}
	for _, prev := range old.Spec.EphemeralContainers {
		i := slices.IndexFunc(pod.Spec.EphemeralContainers, func(c corev1.EphemeralContainer) bool { return c.Name == prev.Name })
		switch {
		case i < 0:
			errs = append(errs, field.Forbidden(fld, fmt.Sprintf("existing ephemeral containers %q may not be removed", prev.Name)))
		case !apiequality.Semantic.DeepEqual(pod.Spec.EphemeralContainers[i], prev):
			errs = append(errs, field.Forbidden(fld.Index(i), fmt.Sprintf("existing ephemeral containers %q may not be changed", prev.Name)))
		}
		kept[prev.Name] = true
	}
	names := map[string]bool{}
	for _, c := range slices.Concat(pod.Spec.InitContainers, pod.Spec.Containers) {
		names[c.Name] = true
	}
	for i, ec := range pod.Spec.EphemeralContainers {
		p := fld.Index(i)
		if kept[ec.Name] {
			names[ec.Name] = true
			continue
		}
		for _, msg := range validation.IsDNS1123Label(ec.Name) {
			errs = append(errs, field.Invalid(p.Child("name"), ec.Name, msg))
		}
		if names[ec.Name] {
			errs = append(errs, field.Duplicate(p.Child("name"), ec.Name))
		}
		names[ec.Name] = true
		if ec.Image == "" {
			errs = append(errs, field.Required(p.Child("image"), ""))
		}
		for name, set := range map[string]bool{
			"ports": len(ec.Ports) > 0, "livenessProbe": ec.LivenessProbe != nil, "readinessProbe": ec.ReadinessProbe != nil,
			"startupProbe": ec.StartupProbe != nil, "lifecycle": ec.Lifecycle != nil, "resizePolicy": len(ec.ResizePolicy) > 0,
			"restartPolicy": ec.RestartPolicy != nil,
			"resources":     len(ec.Resources.Limits) > 0 || len(ec.Resources.Requests) > 0 || len(ec.Resources.Claims) > 0,
		} {
			if set {
				errs = append(errs, field.Forbidden(p.Child(name), "cannot be set for an Ephemeral Container"))
			}
		}
		if t := ec.TargetContainerName; t != "" && !slices.ContainsFunc(slices.Concat(pod.Spec.InitContainers, pod.Spec.Containers), func(c corev1.Container) bool { return c.Name == t }) {
			errs = append(errs, field.NotFound(p.Child("targetContainerName"), t))
		}
	}
	slices.SortFunc(errs, func(a, b *field.Error) int { return strings.Compare(a.Error(), b.Error()) })
	return errs
}
