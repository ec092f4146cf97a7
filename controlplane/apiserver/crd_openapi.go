package apiserver

import (
	"sync"

	"k8s.io/apiextensions-apiserver/pkg/apihelpers"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apiextensions-apiserver/pkg/controller/openapi/builder"
	"k8s.io/kube-openapi/pkg/handler"
	"k8s.io/kube-openapi/pkg/spec3"
	"k8s.io/kube-openapi/pkg/validation/spec"

	"github.com/glassplane/glassplane/controlplane/apiserver/openapi"
)

// crdOpenAPI publishes the OpenAPI documents of the served CRDs, built by
// apiextensions-apiserver's openapi builder with the options its openapi
// controllers use (the v2 schemas keep their value validations, enums
// included; their defaults are pruned): one v3 document per custom group
// version, and the v2 document merged with the static one. kubectl explain
// and apply's validation read them.
type crdOpenAPI struct {
	// mu guards svc and published, and orders publications.
	mu  sync.Mutex
	svc *openapi.Service
	// published are the v3 paths last published.
	published map[string]bool
}

// attachOpenAPI is called once the OpenAPI service is built (on its first
// request): the CRDs' documents join it.
func (s *Server) attachOpenAPI(svc *openapi.Service) {
	s.crdDocs.mu.Lock()
	s.crdDocs.svc = svc
	s.crdDocs.mu.Unlock()
	s.publishCRDOpenAPI()
}

// publishCRDOpenAPI rebuilds the custom resources' documents from the CRDs
// whose names are accepted.
func (s *Server) publishCRDOpenAPI() {
	s.crdDocs.mu.Lock()
	defer s.crdDocs.mu.Unlock()
	svc := s.crdDocs.svc
	if svc == nil {
		return
	}
	s.custom.mu.RLock()
	crds := make([]*apiextensionsv1.CustomResourceDefinition, 0, len(s.custom.crds))
	for _, crd := range s.custom.crds {
		if apihelpers.IsCRDConditionTrue(crd, apiextensionsv1.NamesAccepted) {
			crds = append(crds, crd)
		}
	}
	s.custom.mu.RUnlock()

	v3 := map[string][]*spec3.OpenAPI{}
	var v2 []*spec.Swagger
	for _, crd := range crds {
		for _, v := range crd.Spec.Versions {
			if !v.Served {
				continue
			}
			doc, err := builder.BuildOpenAPIV3(crd, v.Name, builder.Options{V2: false, IncludeSelectableFields: true})
			if err != nil {
				s.log.Warn("failed to build the OpenAPI v3 document of a CRD", "crd", crd.Name, "version", v.Name, "err", err)
				continue
			}
			path := "apis/" + crd.Spec.Group + "/" + v.Name
			v3[path] = append(v3[path], doc)
			sw, err := builder.BuildOpenAPIV2(crd, v.Name, builder.Options{V2: true, IncludeSelectableFields: true})
			if err != nil {
				s.log.Warn("failed to build the OpenAPI v2 document of a CRD", "crd", crd.Name, "version", v.Name, "err", err)
				continue
			}
			// As upstream's openapi controller: defaults are pruned so that
			// the CRDs merge cleanly with the static document, which has
			// its defaults pruned.
			sw.Definitions = handler.PruneDefaults(sw.Definitions)
			v2 = append(v2, sw)
		}
	}
	published := map[string]bool{}
	for path, docs := range v3 {
		merged, err := builder.MergeSpecsV3(docs...)
		if err != nil {
			s.log.Warn("failed to merge the OpenAPI v3 documents of CRDs", "path", path, "err", err)
			continue
		}
		svc.SetCustomV3(path, merged)
		published[path] = true
	}
	for path := range s.crdDocs.published {
		if !published[path] {
			svc.SetCustomV3(path, nil)
		}
	}
	s.crdDocs.published = published
	merged, err := builder.MergeSpecs(svc.StaticV2(), v2...)
	if err != nil {
		s.log.Warn("failed to merge the OpenAPI v2 documents of CRDs", "err", err)
		return
	}
	if err := svc.SetV2(merged); err != nil {
		s.log.Warn("failed to publish the OpenAPI v2 document", "err", err)
	}
}
