// Package openapi builds and serves the API server's OpenAPI documents: the
// Swagger 2.0 document at /openapi/v2 (JSON or protobuf by content
// negotiation) and the OpenAPI 3.0 discovery document at /openapi/v3 with one
// document per group version at /openapi/v3/api/v1, /openapi/v3/apis/apps/v1,
// and so on. kubectl needs them for apply/create validation, strategic merge
// patches and explain. The schemas come from zz_generated.openapi.go, made by
// kube-openapi's openapi-gen (generate.sh); the paths are derived from the
// resources the API server says it serves, and every definition that is a
// registered kind carries the x-kubernetes-group-version-kind extension, as
// kube-apiserver's documents do. This package only describes and serves
// documents: it never touches storage, and it knows nothing of the API
// server's handlers beyond the Resource list it is given.
package openapi
