package openapi

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// discoveryStub answers the legacy discovery requests kubectl makes before it
// reads OpenAPI: /api, /apis, /api/v1 and /apis/apps/v1, with pods and
// deployments.
func discoveryStub() http.Handler {
	verbs := metav1.Verbs(allVerbs)
	docs := map[string]any{
		"/api": &metav1.APIVersions{
			TypeMeta: metav1.TypeMeta{Kind: "APIVersions"},
			Versions: []string{"v1"},
		},
		"/apis": &metav1.APIGroupList{
			TypeMeta: metav1.TypeMeta{Kind: "APIGroupList", APIVersion: "v1"},
			Groups: []metav1.APIGroup{{
				Name:             "apps",
				Versions:         []metav1.GroupVersionForDiscovery{{GroupVersion: "apps/v1", Version: "v1"}},
				PreferredVersion: metav1.GroupVersionForDiscovery{GroupVersion: "apps/v1", Version: "v1"},
			}},
		},
		"/api/v1": &metav1.APIResourceList{
			TypeMeta:     metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"},
			GroupVersion: "v1",
			APIResources: []metav1.APIResource{{Name: "pods", SingularName: "pod", Namespaced: true, Kind: "Pod", Verbs: verbs, ShortNames: []string{"po"}}},
		},
		"/apis/apps/v1": &metav1.APIResourceList{
			TypeMeta:     metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"},
			GroupVersion: "apps/v1",
			APIResources: []metav1.APIResource{{Name: "deployments", SingularName: "deployment", Namespaced: true, Kind: "Deployment", Verbs: verbs, ShortNames: []string{"deploy"}}},
		},
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		doc, ok := docs[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(doc)
	})
}

// pathLog records the paths of the requests a server received.
type pathLog struct {
	mu    sync.Mutex // guards paths
	paths []string
}

func (l *pathLog) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		l.mu.Lock()
		l.paths = append(l.paths, r.URL.Path)
		l.mu.Unlock()
		next.ServeHTTP(w, r)
	})
}

// take returns the recorded paths and forgets them.
func (l *pathLog) take() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := l.paths
	l.paths = nil
	return out
}

// TestKubectl runs the real kubectl against the documents, behind a stub of
// discovery: explain must find fields, and create must validate without
// "failed to download openapi".
func TestKubectl(t *testing.T) {
	kubectl, err := exec.LookPath("kubectl")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("kubectl is required in CI (it ships with this machine image)")
		}
		t.Skip("kubectl is not installed")
	}
	s, err := NewService(testResources())
	if err != nil {
		t.Fatalf("NewService: %v", err)
	}
	mux := http.NewServeMux()
	mux.Handle("/openapi/", s.Handler())
	mux.Handle("/", discoveryStub())
	requests := &pathLog{}
	srv := httptest.NewServer(requests.wrap(mux))
	t.Cleanup(srv.Close)

	dir := t.TempDir()
	manifest := filepath.Join(dir, "pod.yaml")
	if err := os.WriteFile(manifest, []byte("apiVersion: v1\nkind: Pod\nmetadata:\n  name: web\n  namespace: default\nspec:\n  containers:\n  - name: web\n    image: busybox\n"), 0o600); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name    string
		args    []string
		want    []string
		fetched string
	}{
		{"explain pod.spec", []string{"explain", "pod.spec"}, []string{"KIND:       Pod", "containers\t<[]Container> -required-"}, "/openapi/v3/api/v1"},
		{"explain pods.spec.containers.image", []string{"explain", "pods.spec.containers.image"}, []string{"FIELD: image <string>", "Container image name"}, "/openapi/v3/api/v1"},
		{"explain deployment.spec.replicas", []string{"explain", "deployment.spec.replicas"}, []string{"GROUP:      apps", "FIELD: replicas <integer>"}, "/openapi/v3/apis/apps/v1"},
		{"explain with the v2 document", []string{"explain", "pod.spec.nodeName", "--output=plaintext-openapiv2"}, []string{"FIELD:    nodeName <string>"}, "/openapi/v2"},
		{"create validates", []string{"create", "-f", manifest, "--dry-run=client", "--validate=strict", "-o", "name"}, []string{"pod/web"}, "/openapi/v3/api/v1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := append([]string{"--kubeconfig=/dev/null", "--server=" + srv.URL, "--cache-dir=" + t.TempDir()}, tt.args...)
			requests.take()
			cmd := exec.Command(kubectl, args...)
			cmd.Env = append(os.Environ(), "HOME="+dir)
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Fatalf("kubectl %s: %v\n%s", strings.Join(tt.args, " "), err, out)
			}
			for _, want := range tt.want {
				if !strings.Contains(string(out), want) {
					t.Errorf("kubectl %s output lacks %q:\n%s", strings.Join(tt.args, " "), want, out)
				}
			}
			if paths := requests.take(); !containsString(paths, tt.fetched) {
				t.Errorf("kubectl %s did not fetch %s; it fetched %v", strings.Join(tt.args, " "), tt.fetched, paths)
			}
		})
	}
}
