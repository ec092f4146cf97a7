package apiserver

import (
	"context"
	"errors"
	"net/http/httptest"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"

	"github.com/glassplane/glassplane/controlplane/apiserver/admission"
)

// fuzzNamespaces says every namespace exists and is active.
type fuzzNamespaces struct{}

func (fuzzNamespaces) GetNamespacePhase(context.Context, string) (corev1.NamespacePhase, bool, error) {
	return corev1.NamespaceActive, true, nil
}

// fuzzAccounts says every service account exists.
type fuzzAccounts struct{}

func (fuzzAccounts) GetServiceAccount(_ context.Context, namespace, name string) (*corev1.ServiceAccount, bool, error) {
	sa := &corev1.ServiceAccount{}
	sa.Namespace, sa.Name = namespace, name
	return sa, true, nil
}

// GetBoundObject finds no bound object (the fuzzer binds none).
func (fuzzAccounts) GetBoundObject(context.Context, string, string, string) (string, bool, error) {
	return "", false, nil
}

// fuzzSeeds are request bodies the fuzzer starts from, one per resource
// kind it decodes into.
var fuzzSeeds = []string{
	`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web","labels":{"app":"web"}},"spec":{"containers":[{"name":"c","image":"nginx:1.27","ports":[{"containerPort":80}]}]}}`,
	`{"apiVersion":"v1","kind":"Pod","metadata":{"generateName":"job-"},"spec":{"initContainers":[{"name":"i","image":"busybox"}],"containers":[{"name":"c","image":"busybox","resources":{"limits":{"cpu":"1"}}}],"volumes":[{"name":"v"}],"tolerations":[{"operator":"Exists"}]}}`,
	`{"apiVersion":"v1","kind":"Service","metadata":{"name":"svc"},"spec":{"selector":{"app":"web"},"ports":[{"port":80,"targetPort":"http"}]}}`,
	`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"cm","annotations":{"a":"b"}},"data":{"k":"v"}}`,
	`{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"team-a"}}`,
	`{"apiVersion":"v1","kind":"ServiceAccount","metadata":{"name":"robot"},"automountServiceAccountToken":false}`,
	`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"d"},"spec":{"replicas":2,"selector":{"matchLabels":{"app":"d"}},"template":{"metadata":{"labels":{"app":"d"}},"spec":{"containers":[{"name":"c","image":"nginx"}]}}}}`,
	`{"apiVersion":"apps/v1","kind":"ReplicaSet","metadata":{"name":"rs"},"spec":{"selector":{"matchExpressions":[{"key":"a","operator":"In","values":["b"]}]},"template":{"metadata":{"labels":{"a":"b"}},"spec":{"containers":[{"name":"c","image":"x"}]}}}}`,
	"apiVersion: v1\nkind: Pod\nmetadata:\n  name: y\nspec:\n  containers:\n  - name: c\n    image: busybox\n",
	`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"../x","labels":{"-":"bad value"}},"spec":{"containers":"no"}}`,
	`[{"a":{"a":{"a":{"a":null}}}}]`,
	``,
}

// FuzzDecodeAndAdmit feeds arbitrary bodies to the API server's decoder and
// the admission chain (defaulting, DefaultTolerationSeconds, ServiceAccount,
// NamespaceLifecycle, validation), for each kind it serves: nothing may
// panic, every refusal is a 4xx Status, and an admitted object encodes for
// storage and decodes back.
func FuzzDecodeAndAdmit(f *testing.F) {
	s := &Server{resources: newResources()}
	chain := admission.NewChain(
		admission.NewDefaultValues(),
		admission.NewDefaultTolerationSeconds(),
		admission.NewServiceAccount(fuzzAccounts{}, fuzzNamespaces{}),
		admission.NewNamespaceLifecycle(fuzzNamespaces{}),
		admission.NewValidation(),
	)
	var writable []*resource
	for _, res := range s.resources {
		if containsVerb(res.Verbs, "create") {
			writable = append(writable, res)
		}
	}
	for i, seed := range fuzzSeeds {
		f.Add(uint8(i), false, []byte(seed))
		f.Add(uint8(i), true, []byte(seed))
	}
	f.Fuzz(func(t *testing.T, which uint8, yaml bool, body []byte) {
		res := writable[int(which)%len(writable)]
		path := "/api/v1/namespaces/default/" + res.Resource + "?fieldValidation=Strict"
		r := httptest.NewRequest("POST", path, nil)
		ser := strictJSON
		if yaml {
			ser = strictYAML
		}
		q := &request{s: s, r: r, w: &statusWriter{ResponseWriter: httptest.NewRecorder()}}
		obj, err := q.decodeWith(ser, body, res.GVK)
		if err != nil {
			requireClientError(t, "decode", err)
			return
		}
		m, err := meta.Accessor(obj)
		if err != nil {
			t.Fatalf("decoded %T without object metadata: %v", obj, err)
		}
		if res.Namespaced {
			m.SetNamespace("default")
		} else {
			m.SetNamespace("")
		}
		prepareForCreate(res, obj)
		_, err = chain.Run(context.Background(), &admission.Attributes{
			Operation: admission.Create, Resource: res.GroupVersionResource(), Kind: res.GVK,
			Namespace: m.GetNamespace(), Name: m.GetName(), Object: obj, UserName: "fuzzer",
		})
		if err != nil {
			requireClientError(t, "admission", err)
			return
		}
		stored, err := encodeForStorage(res, obj)
		if err != nil {
			t.Fatalf("admitted %s does not encode for storage: %v", res.Resource, err)
		}
		if _, err := decodeStored(res, stored, 1); err != nil {
			t.Fatalf("stored %s does not decode: %v\n%s", res.Resource, err, stored)
		}
	})
}

// requireClientError fails unless err is a Status error with a 4xx code.
func requireClientError(t *testing.T, step string, err error) {
	t.Helper()
	var serr apierrors.APIStatus
	if !errors.As(err, &serr) {
		t.Fatalf("%s: %v is not a Status error", step, err)
	}
	if code := serr.Status().Code; code < 400 || code >= 500 {
		t.Fatalf("%s: code %d for user input: %v", step, code, err)
	}
}
