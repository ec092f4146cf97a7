package admission

import (
	"context"
	"log/slog"
	"sort"

	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// DefaultIngressClassPluginName is the name DefaultIngressClass reports in Steps.
const DefaultIngressClassPluginName = "DefaultIngressClass"

// IngressClassLister reads the IngressClasses from storage.
type IngressClassLister interface {
	ListIngressClasses(ctx context.Context) ([]networkingv1.IngressClass, error)
}

// DefaultIngressClass is kube-apiserver's DefaultIngressClass plugin: an
// Ingress created without spec.ingressClassName (nor the deprecated
// kubernetes.io/ingress.class annotation) gets the IngressClass annotated
// ingressclass.kubernetes.io/is-default-class=true, the newest if several.
type DefaultIngressClass struct{ classes IngressClassLister }

var (
	_ MutationInterface = &DefaultIngressClass{}
	_ Handler           = &DefaultIngressClass{}
)

// NewDefaultIngressClass returns the plugin reading classes.
func NewDefaultIngressClass(classes IngressClassLister) *DefaultIngressClass {
	return &DefaultIngressClass{classes: classes}
}

// Name implements Plugin.
func (*DefaultIngressClass) Name() string { return DefaultIngressClassPluginName }

// Handles implements Handler: Ingress creates.
func (*DefaultIngressClass) Handles(a *Attributes) bool {
	_, ok := a.Object.(*networkingv1.Ingress)
	return ok && a.Operation == Create && a.Subresource == ""
}

// Admit implements MutationInterface.
func (d *DefaultIngressClass) Admit(ctx context.Context, a *Attributes) error {
	ing, ok := a.Object.(*networkingv1.Ingress)
	if !ok || a.Operation != Create || a.Subresource != "" || ing.Spec.IngressClassName != nil {
		return nil
	}
	if _, ok := ing.Annotations[annotationIngressClass]; ok {
		return nil
	}
	classes, err := d.classes.ListIngressClasses(ctx)
	if err != nil {
		return apierrors.NewInternalError(err)
	}
	var defaults []networkingv1.IngressClass
	for _, c := range classes {
		if c.Annotations[networkingv1.AnnotationIsDefaultIngressClass] == "true" {
			defaults = append(defaults, c)
		}
	}
	if len(defaults) == 0 {
		return nil
	}
	sort.Slice(defaults, func(i, j int) bool {
		ti, tj := defaults[i].CreationTimestamp.UnixNano(), defaults[j].CreationTimestamp.UnixNano()
		if ti == tj {
			return defaults[i].Name < defaults[j].Name
		}
		return ti > tj
	})
	if len(defaults) > 1 {
		slog.Debug("several default IngressClasses; choosing the newest", "count", len(defaults), "class", defaults[0].Name)
	}
	name := defaults[0].Name
	ing.Spec.IngressClassName = &name
	return nil
}
