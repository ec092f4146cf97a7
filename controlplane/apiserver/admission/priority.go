package admission

import (
	"context"

	schedulingv1 "k8s.io/api/scheduling/v1"
)

// PriorityClassLister reads PriorityClasses from storage for the Priority
// part of defaulting. A NamespaceLister given to NewDefaultChain that also
// implements it makes pods get the value of any PriorityClass, not only of
// the two system ones.
type PriorityClassLister interface {
	// GetPriorityClass returns the class named name; found is false when
	// there is none.
	GetPriorityClass(ctx context.Context, name string) (pc *schedulingv1.PriorityClass, found bool, err error)
}

// WithPriorityClasses makes d give pods the value of any PriorityClass
// classes knows, besides the two system ones, and returns d.
func (d *DefaultValues) WithPriorityClasses(classes PriorityClassLister) *DefaultValues {
	d.priorityClasses = classes
	return d
}
