package apiserver

import (
	"net/http/httptest"
	"reflect"
	"testing"
)

func TestParseRequestInfo(t *testing.T) {
	tests := []struct {
		method, url string
		want        RequestInfo
	}{
		{"GET", "/api", RequestInfo{Verb: "get"}},
		{"GET", "/api/v1", RequestInfo{Verb: "get"}},
		{"GET", "/apis/apps/v1", RequestInfo{Verb: "get"}},
		{"GET", "/api/v1/pods", RequestInfo{IsResourceRequest: true, Verb: "list", APIVersion: "v1", Resource: "pods"}},
		{"GET", "/api/v1/pods?watch=true", RequestInfo{IsResourceRequest: true, Verb: "watch", APIVersion: "v1", Resource: "pods"}},
		{"GET", "/api/v1/namespaces/default/pods/web", RequestInfo{IsResourceRequest: true, Verb: "get", APIVersion: "v1", Namespace: "default", Resource: "pods", Name: "web"}},
		{"PUT", "/api/v1/namespaces/default/pods/web/status", RequestInfo{IsResourceRequest: true, Verb: "update", APIVersion: "v1", Namespace: "default", Resource: "pods", Name: "web", Subresource: "status"}},
		{"POST", "/api/v1/namespaces/default/pods/web/binding", RequestInfo{IsResourceRequest: true, Verb: "create", APIVersion: "v1", Namespace: "default", Resource: "pods", Name: "web", Subresource: "binding"}},
		{"GET", "/api/v1/namespaces/kube-system", RequestInfo{IsResourceRequest: true, Verb: "get", APIVersion: "v1", Namespace: "kube-system", Resource: "namespaces", Name: "kube-system"}},
		{"PUT", "/api/v1/namespaces/gone/finalize", RequestInfo{IsResourceRequest: true, Verb: "update", APIVersion: "v1", Namespace: "gone", Resource: "namespaces", Name: "gone", Subresource: "finalize"}},
		{"GET", "/api/v1/watch/namespaces/default/pods", RequestInfo{IsResourceRequest: true, Verb: "watch", APIVersion: "v1", Namespace: "default", Resource: "pods"}},
		{"DELETE", "/apis/apps/v1/namespaces/default/deployments", RequestInfo{IsResourceRequest: true, Verb: "deletecollection", APIGroup: "apps", APIVersion: "v1", Namespace: "default", Resource: "deployments"}},
		{"PATCH", "/apis/apps/v1/namespaces/default/deployments/web/scale", RequestInfo{IsResourceRequest: true, Verb: "patch", APIGroup: "apps", APIVersion: "v1", Namespace: "default", Resource: "deployments", Name: "web", Subresource: "scale"}},
		{"GET", "/healthz", RequestInfo{Verb: "get"}},
		{"GET", "/api/v1/namespaces/kube-system/configmaps?watch=true&fieldSelector=metadata.name%3Dtempo", RequestInfo{IsResourceRequest: true, Verb: "watch", APIVersion: "v1", Namespace: "kube-system", Resource: "configmaps", SelectorName: "tempo"}},
		{"GET", "/api/v1/namespaces/kube-system/configmaps?fieldSelector=metadata.name%3Dtempo,data.x%3Dy", RequestInfo{IsResourceRequest: true, Verb: "list", APIVersion: "v1", Namespace: "kube-system", Resource: "configmaps", SelectorName: "tempo"}},
		{"GET", "/api/v1/namespaces/kube-system/configmaps?fieldSelector=metadata.name%21%3Dtempo", RequestInfo{IsResourceRequest: true, Verb: "list", APIVersion: "v1", Namespace: "kube-system", Resource: "configmaps"}},
	}
	for _, tc := range tests {
		t.Run(tc.method+" "+tc.url, func(t *testing.T) {
			got := parseRequestInfo(httptest.NewRequest(tc.method, tc.url, nil))
			got.Path, got.Parts, got.APIPrefix = "", nil, ""
			if !reflect.DeepEqual(*got, tc.want) {
				t.Errorf("got %+v, want %+v", *got, tc.want)
			}
		})
	}
}
