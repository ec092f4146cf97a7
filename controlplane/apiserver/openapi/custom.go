package openapi

import (
	"k8s.io/kube-openapi/pkg/spec3"
	"k8s.io/kube-openapi/pkg/validation/spec"
)

// SetCustomV3 publishes doc as the OpenAPI v3 document of path ("apis/<group>/<version>"),
// or withdraws it when doc is nil: the documents of CustomResourceDefinitions'
// group versions, which come and go while the server runs.
func (s *Service) SetCustomV3(path string, doc *spec3.OpenAPI) {
	if doc == nil {
		s.custom.Delete(path)
		s.v3.DeleteGroupVersion(path)
		return
	}
	s.v3.UpdateGroupVersion(path, doc)
	s.custom.Store(path, true)
}

// StaticV2 returns the v2 document of the fixed resources; callers must not
// change it.
func (s *Service) StaticV2() *spec.Swagger { return s.v2Static }

// SetV2 serves doc as the v2 document (the static one merged with the
// custom resources').
func (s *Service) SetV2(doc *spec.Swagger) error { return s.v2.UpdateSpec(doc) }
