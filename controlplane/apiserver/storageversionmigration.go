package apiserver

import (
	"context"
	"strconv"
	"strings"

	svmv1 "k8s.io/api/storagemigration/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// storageVersionMigrationResource is storagemigration.k8s.io/v1
// StorageVersionMigration: a request to rewrite every object of a
// resource in its current storage version, which the
// storage-version-migrator controller (controlplane/controllers/
// storageversionmigration) carries out. The spec is immutable and the
// status is written through /status, as upstream's strategy has them.
func storageVersionMigrationResource() *resource {
	return &resource{
		GVK: svmv1.SchemeGroupVersion.WithKind("StorageVersionMigration"), Resource: "storageversionmigrations", Singular: "storageversionmigration",
		Verbs: verbsAll, StorageResource: "storageversionmigrations", HasStatus: true,
		Subresources: []*subresource{statusSubresource()},
		PrepareCreate: func(_ context.Context, obj runtime.Object) {
			obj.(*svmv1.StorageVersionMigration).Status = svmv1.StorageVersionMigrationStatus{}
		},
		Validate: validateStorageVersionMigration,
	}
}

// validateStorageVersionMigration is upstream's validation: a resource
// (a DNS-1035 label) in a group (a DNS subdomain), an immutable spec; on
// /status, a resourceVersion that is a number and never changes once set,
// and conditions that do not contradict each other or go back.
func validateStorageVersionMigration(_ context.Context, sub string, obj, old runtime.Object) field.ErrorList {
	svm := obj.(*svmv1.StorageVersionMigration)
	prev, updating := old.(*svmv1.StorageVersionMigration)
	var errs field.ErrorList
	if updating {
		errs = apimachineryvalidation.ValidateObjectMetaUpdate(&svm.ObjectMeta, &prev.ObjectMeta, field.NewPath("metadata"))
	}
	if sub == "status" {
		return append(errs, validateStorageVersionMigrationStatus(svm, prev)...)
	}
	if !updating {
		errs = apimachineryvalidation.ValidateObjectMeta(&svm.ObjectMeta, false, apimachineryvalidation.NameIsDNSSubdomain, field.NewPath("metadata"))
	}
	res := field.NewPath("spec", "resource")
	if r := svm.Spec.Resource.Resource; r == "" {
		errs = append(errs, field.Required(res.Child("resource"), "resource is required to be set"))
	} else if msgs := validation.IsDNS1035Label(r); len(msgs) > 0 {
		errs = append(errs, field.Invalid(res.Child("resource"), r, strings.Join(msgs, ",")))
	}
	if g := svm.Spec.Resource.Group; g != "" {
		if msgs := validation.IsDNS1123Subdomain(g); len(msgs) > 0 {
			errs = append(errs, field.Invalid(res.Child("group"), g, strings.Join(msgs, ",")))
		}
	}
	if updating && !apiequality.Semantic.DeepEqual(svm.Spec, prev.Spec) {
		errs = append(errs, field.Invalid(field.NewPath("spec"), svm.Spec, "field is immutable"))
	}
	return errs
}

func validateStorageVersionMigrationStatus(svm, prev *svmv1.StorageVersionMigration) field.ErrorList {
	p := field.NewPath("status")
	var errs field.ErrorList
	if rv := svm.Status.ResourceVersion; rv != "" {
		if n, err := strconv.ParseUint(rv, 10, 64); err != nil || n == 0 {
			errs = append(errs, field.Invalid(p.Child("resourceVersion"), rv, "resource version is not a positive integer"))
		}
	}
	if prev.Status.ResourceVersion != "" && prev.Status.ResourceVersion != svm.Status.ResourceVersion {
		errs = append(errs, field.Invalid(p.Child("resourceVersion"), svm.Status.ResourceVersion, "field is immutable"))
	}
	conds := p.Child("conditions")
	errs = append(errs, metav1validation.ValidateConditions(svm.Status.Conditions, conds)...)
	is := func(o *svmv1.StorageVersionMigration, t svmv1.MigrationConditionType) bool {
		return meta.IsStatusConditionTrue(o.Status.Conditions, string(t))
	}
	succeeded, failed, running := is(svm, svmv1.MigrationSucceeded), is(svm, svmv1.MigrationFailed), is(svm, svmv1.MigrationRunning)
	for _, c := range []struct {
		bad bool
		msg string
	}{
		{succeeded && failed, "Both success and failed conditions cannot be true at the same time"},
		{succeeded && running, "Running condition cannot be true when success condition is true"},
		{failed && running, "Running condition cannot be true when failed condition is true"},
		{is(prev, svmv1.MigrationSucceeded) && !succeeded, "Success condition cannot be set to false once it is true"},
		{is(prev, svmv1.MigrationFailed) && !failed, "Failed condition cannot be set to false once it is true"},
	} {
		if c.bad {
			errs = append(errs, field.Invalid(conds, svm.Status.Conditions, c.msg))
		}
	}
	return errs
}
