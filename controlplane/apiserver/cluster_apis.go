package apiserver

import (
	"context"
	"errors"

	certificatesv1 "k8s.io/api/certificates/v1"
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"
	nodev1 "k8s.io/api/node/v1"
	resourcev1 "k8s.io/api/resource/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/glassplane/glassplane/controlplane/apiserver/auth"
	"github.com/glassplane/glassplane/controlplane/storage"
)

// clusterAPIResources are the registry entries of APIs kube-apiserver
// serves that Glassplane stores as they are, with their status
// subresources and upstream's create-time strategy where it has one:
// node.k8s.io RuntimeClasses (which pods' RuntimeClass admission reads),
// flowcontrol.apiserver.k8s.io FlowSchemas and PriorityLevelConfigurations
// (stored and served; Glassplane's API server does not queue by them),
// certificates.k8s.io CertificateSigningRequests (with approval; no signer
// issues certificates) and ClusterTrustBundles, storage.k8s.io
// CSIStorageCapacities, and resource.k8s.io (dynamic resource allocation)
// DeviceClasses, ResourceClaims, ResourceClaimTemplates, ResourceSlices and
// DeviceTaintRules (stored; the scheduler does not allocate devices), and
// storagemigration.k8s.io StorageVersionMigrations, and certificates.k8s.io
// PodCertificateRequests (no signer issues them).
func clusterAPIResources() []*resource {
	flow := flowcontrolv1.SchemeGroupVersion.WithKind
	drav1 := resourcev1.SchemeGroupVersion.WithKind
	return []*resource{
		{
			GVK: nodev1.SchemeGroupVersion.WithKind("RuntimeClass"), Resource: "runtimeclasses", Singular: "runtimeclass",
			Verbs: verbsAll, StorageResource: "runtimeclasses",
		},
		{
			GVK: flow("FlowSchema"), Resource: "flowschemas", Singular: "flowschema",
			Verbs: verbsAll, StorageResource: "flowschemas", HasStatus: true,
			Subresources:  []*subresource{statusSubresource()},
			PrepareCreate: func(_ context.Context, obj runtime.Object) { defaultFlowControl(obj) },
			PrepareUpdate: func(_ context.Context, _, next runtime.Object) { defaultFlowControl(next) },
			Validate:      validateFlowSchema,
		},
		{
			GVK: flow("PriorityLevelConfiguration"), Resource: "prioritylevelconfigurations", Singular: "prioritylevelconfiguration",
			Verbs: verbsAll, StorageResource: "prioritylevelconfigurations", HasStatus: true,
			Subresources:  []*subresource{statusSubresource()},
			PrepareCreate: func(_ context.Context, obj runtime.Object) { defaultFlowControl(obj) },
			PrepareUpdate: func(_ context.Context, _, next runtime.Object) { defaultFlowControl(next) },
			Validate:      validatePriorityLevelConfiguration,
		},
		{
			GVK: certificatesv1.SchemeGroupVersion.WithKind("CertificateSigningRequest"), Resource: "certificatesigningrequests",
			Singular: "certificatesigningrequest", ShortNames: []string{"csr"},
			Verbs: verbsAll, StorageResource: "certificatesigningrequests", HasStatus: true,
			Subresources:  []*subresource{statusSubresource(), csrApprovalSubresource()},
			PrepareCreate: prepareCSRForCreate,
			FieldLabels: func(obj runtime.Object) fields.Set {
				return fields.Set{"spec.signerName": obj.(*certificatesv1.CertificateSigningRequest).Spec.SignerName}
			},
		},
		{
			GVK: certificatesv1.SchemeGroupVersion.WithKind("ClusterTrustBundle"), Resource: "clustertrustbundles", Singular: "clustertrustbundle",
			Verbs: verbsAll, StorageResource: "clustertrustbundles", Validate: validateClusterTrustBundle,
			FieldLabels: func(obj runtime.Object) fields.Set {
				return fields.Set{"spec.signerName": obj.(*certificatesv1.ClusterTrustBundle).Spec.SignerName}
			},
		},
		{
			GVK: storagev1.SchemeGroupVersion.WithKind("CSIStorageCapacity"), Resource: "csistoragecapacities", Singular: "csistoragecapacity",
			Namespaced: true, Verbs: verbsAll, StorageResource: "csistoragecapacities",
		},
		{
			GVK: drav1("DeviceClass"), Resource: "deviceclasses", Singular: "deviceclass",
			Verbs: verbsAll, StorageResource: "deviceclasses", TracksGeneration: true,
		},
		{
			GVK: drav1("ResourceClaim"), Resource: "resourceclaims", Singular: "resourceclaim", Namespaced: true,
			Verbs: verbsAll, StorageResource: "resourceclaims", HasStatus: true,
			Subresources: []*subresource{statusSubresource()},
		},
		{
			GVK: drav1("ResourceClaimTemplate"), Resource: "resourceclaimtemplates", Singular: "resourceclaimtemplate", Namespaced: true,
			Verbs: verbsAll, StorageResource: "resourceclaimtemplates",
		},
		{
			GVK: drav1("ResourceSlice"), Resource: "resourceslices", Singular: "resourceslice",
			Verbs: verbsAll, StorageResource: "resourceslices", TracksGeneration: true,
		},
		deviceTaintRuleResource(),
		storageVersionMigrationResource(),
		podCertificateRequestResource(),
	}
}

// csrApprovalSubresource is certificatesigningrequests/approval: it
// changes only status.conditions (Approved, Denied), as upstream's
// ApprovalStrategy.
func csrApprovalSubresource() *subresource {
	return &subresource{Name: "approval", Verbs: verbsStatus, view: &view{
		get: identity,
		// As upstream's csrApprovalStrategy: the approval changes the
		// conditions and metadata (labels, annotations), never the spec or
		// the rest of the status.
		merge: func(_ *resource, cur, in runtime.Object) (runtime.Object, error) {
			prepareForStatusUpdate(cur, in)
			next := in.(*certificatesv1.CertificateSigningRequest)
			conditions := next.Status.Conditions
			next.Status = *cur.(*certificatesv1.CertificateSigningRequest).Status.DeepCopy()
			next.Status.Conditions = conditions
			return next, nil
		},
	}}
}

// prepareCSRForCreate records who asked for the certificate and clears
// the status, as upstream's csrStrategy.PrepareForCreate: spec.username,
// uid, groups and extra are the requester's, whatever the body says.
func prepareCSRForCreate(ctx context.Context, obj runtime.Object) {
	csr := obj.(*certificatesv1.CertificateSigningRequest)
	csr.Spec.Username, csr.Spec.UID, csr.Spec.Groups, csr.Spec.Extra = "", "", nil, nil
	if u, ok := auth.UserFrom(ctx); ok {
		csr.Spec.Username, csr.Spec.UID, csr.Spec.Groups = u.Name, u.UID, u.Groups
		if len(u.Extra) > 0 {
			csr.Spec.Extra = map[string]certificatesv1.ExtraValue{}
			for k, v := range u.Extra {
				csr.Spec.Extra[k] = v
			}
		}
	}
	csr.Status = certificatesv1.CertificateSigningRequestStatus{}
}

var runtimeClassesGVR = nodev1.SchemeGroupVersion.WithResource("runtimeclasses")

// GetRuntimeClass implements admission.RuntimeClassLister, reading
// storage (a class deleted a moment ago refuses the next pod).
func (l policyLookups) GetRuntimeClass(ctx context.Context, name string) (*nodev1.RuntimeClass, bool, error) {
	res := l.res(runtimeClassesGVR)
	kv, err := l.s.store.Get(ctx, storage.Key(res.StorageResource, "", name))
	if errors.Is(err, storage.ErrNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	obj, err := decodeStored(res, kv.Value, kv.ModRevision)
	if err != nil {
		return nil, false, err
	}
	return obj.(*nodev1.RuntimeClass), true, nil
}
