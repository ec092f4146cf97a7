package apiserver_test

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/metadata"

	"github.com/glassplane/glassplane/controlplane/apiserver/audit"
	"github.com/glassplane/glassplane/controlplane/kubeversion"
	"github.com/glassplane/glassplane/controlplane/pki"
)

func TestDiscoveryThroughClientGo(t *testing.T) {
	dc, err := discovery.NewDiscoveryClientForConfig(shared.config)
	if err != nil {
		t.Fatal(err)
	}
	groups, resources, err := dc.ServerGroupsAndResources()
	if err != nil {
		t.Fatalf("ServerGroupsAndResources: %v", err)
	}
	var groupNames []string
	for _, g := range groups {
		groupNames = append(groupNames, g.Name)
	}
	for _, want := range []string{"", "coordination.k8s.io", "apps", "rbac.authorization.k8s.io", "authorization.k8s.io", "authentication.k8s.io"} {
		if !slices.Contains(groupNames, want) {
			t.Errorf("groups %v miss %q", groupNames, want)
		}
	}
	served := map[string]bool{}
	for _, list := range resources {
		gv, _ := schema.ParseGroupVersion(list.GroupVersion)
		for _, r := range list.APIResources {
			served[gv.WithResource(r.Name).String()] = true
			if gv.Group == "" && r.Name == "pods" && (strings.Join(r.ShortNames, ",") != "po" || strings.Join(r.Categories, ",") != "all" || !r.Namespaced) {
				t.Errorf("pods discovery: %+v", r)
			}
		}
	}
	for _, want := range []string{"/v1, Resource=pods", "/v1, Resource=pods/status", "/v1, Resource=pods/binding", "/v1, Resource=nodes",
		"/v1, Resource=namespaces", "/v1, Resource=events", "apps/v1, Resource=deployments/scale", "apps/v1, Resource=replicasets",
		"coordination.k8s.io/v1, Resource=leases"} {
		if !served[want] {
			t.Errorf("discovery misses %s", want)
		}
	}
	prefixes := map[string]string{}
	for _, r := range shared.server.Resources() {
		prefixes[r.Resource] = r.StoragePrefix
	}
	if prefixes["nodes"] != "/registry/minions/" || prefixes["services"] != "/registry/services/specs/" || prefixes["endpoints"] != "/registry/services/endpoints/" {
		t.Errorf("storage prefixes %v", prefixes)
	}
	v, err := dc.ServerVersion()
	if err != nil || v.GitVersion != kubeversion.GitVersion || v.Minor != kubeversion.Minor {
		t.Errorf("version %+v %v", v, err)
	}
}

func TestAggregatedDiscovery(t *testing.T) {
	for _, path := range []string{"/api", "/apis"} {
		req, _ := http.NewRequest(http.MethodGet, shared.url+path, nil)
		req.Header.Set("Accept", "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList,application/json")
		resp, err := shared.http.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if ct := resp.Header.Get("Content-Type"); ct != "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList" {
			t.Errorf("%s content type %q", path, ct)
		}
		var list struct {
			Kind  string `json:"kind"`
			Items []struct {
				Metadata struct{ Name string } `json:"metadata"`
			} `json:"items"`
		}
		if err := json.Unmarshal(b, &list); err != nil || list.Kind != "APIGroupDiscoveryList" || len(list.Items) == 0 {
			t.Errorf("%s: %s", path, b)
		}
	}
}

func TestOpenAPIIsServed(t *testing.T) {
	for _, path := range []string{"/openapi/v2", "/openapi/v3", "/openapi/v3/api/v1"} {
		resp, body := shared.do(t, http.MethodGet, path, "", nil)
		if resp.StatusCode != http.StatusOK || len(body) < 100 {
			t.Errorf("%s: %s", path, resp.Status)
		}
	}
}

func TestAuthentication(t *testing.T) {
	pool := x509.NewCertPool()
	pool.AppendCertsFromPEM(shared.ca.CertPEM)
	anon := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	resp, err := anon.Get(shared.url + "/api/v1/namespaces")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized || !strings.Contains(string(b), `"reason":"Unauthorized"`) || !strings.Contains(string(b), `"message":"Unauthorized"`) {
		t.Errorf("no certificate: %s %s", resp.Status, b)
	}

	otherCA, err := pki.LoadOrCreateCA(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	certPEM, keyPEM, _ := otherCA.Client("mallory", "system:masters")
	cert, _ := tls.X509KeyPair(certPEM, keyPEM)
	foreign := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, Certificates: []tls.Certificate{cert}}}}
	if resp, err := foreign.Get(shared.url + "/api/v1/namespaces"); err == nil {
		resp.Body.Close()
		t.Errorf("a certificate from another CA got %s", resp.Status)
	}

	resp, err = anon.Get(shared.url + "/healthz")
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Errorf("healthz: %v %v", resp, err)
	}
	resp, err = anon.Get(shared.url + "/readyz")
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Errorf("readyz: %v %v", resp, err)
	}
	for path, want := range map[string]string{
		"/readyz?verbose": "[+]ping ok\n[+]log ok\n[+]etcd ok\n[+]etcd-readiness ok\n[+]poststarthook/bootstrap-controller ok\n" +
			"[+]poststarthook/scheduling/bootstrap-system-priority-classes ok\n[+]shutdown ok\nreadyz check passed\n",
		"/livez?verbose": "[+]ping ok\n[+]log ok\n[+]etcd ok\n[+]poststarthook/bootstrap-controller ok\n" +
			"[+]poststarthook/scheduling/bootstrap-system-priority-classes ok\nlivez check passed\n",
		"/healthz/etcd":          "ok",
		"/readyz/etcd-readiness": "ok",
		"/livez?exclude=etcd":    "ok",
		"/healthz/poststarthook/scheduling/bootstrap-system-priority-classes": "ok",
	} {
		resp, err := anon.Get(shared.url + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || string(body) != want {
			t.Errorf("%s: %s %q, want %q", path, resp.Status, body, want)
		}
	}
	resp, err = anon.Get(shared.url + "/readyz/no-such-check")
	if err != nil || resp.StatusCode != http.StatusNotFound {
		t.Errorf("an unknown check: %v %v", resp, err)
	}
}

func TestAuditEventsRecordThePipeline(t *testing.T) {
	ns := shared.namespace(t)
	before := shared.audit.Since(0)
	var seq int64
	if len(before) > 0 {
		seq = before[len(before)-1].Seq
	}
	body := `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"audited"},"spec":{"containers":[{"name":"c","image":"busybox"}]}}`
	shared.do(t, http.MethodPost, "/api/v1/namespaces/"+ns+"/pods", "application/json", strings.NewReader(body))
	shared.do(t, http.MethodPost, "/api/v1/namespaces/"+ns+"/pods", "application/json", strings.NewReader(strings.Replace(body, "audited", "Bad", 1)))
	shared.do(t, http.MethodPost, "/api/v1/namespaces/"+ns+"/secrets", "application/json", strings.NewReader(`{"apiVersion":"v1","kind":"Secret","metadata":{"name":"s"},"stringData":{"password":"hunter2"}}`))

	var created, refused, secret *audit.Event
	for _, rec := range shared.audit.Since(seq) {
		ev := rec.Event
		if ev.ObjectRef == nil || ev.ObjectRef.Namespace != ns || ev.Verb != "create" {
			continue
		}
		switch ev.ObjectRef.Name {
		case "audited":
			created = ev
		case "Bad":
			refused = ev
		case "s":
			secret = ev
		}
	}
	if created == nil || refused == nil || secret == nil {
		t.Fatalf("missing audit events: created %v refused %v secret %v", created, refused, secret)
	}
	a := created.Annotations
	if created.User.Username != pki.AdminUser || created.Stage != audit.StageResponseComplete || created.ResponseStatus.Code != 201 {
		t.Errorf("created event: user %q stage %s status %+v", created.User.Username, created.Stage, created.ResponseStatus)
	}
	if a[audit.AnnotationStages] != "authentication,authorization,decoding,admission,etcd" || a[audit.AnnotationDecision] != "allow" ||
		a[audit.AnnotationEtcdKey] != "/registry/pods/"+ns+"/audited" || a[audit.AnnotationEtcdRevision] == "" || a[audit.AnnotationAuthenticator] != "x509" {
		t.Errorf("created annotations: %v", a)
	}
	// Each stage entered has its start, in order, within the request's time.
	var names []string
	var last int64 = -1
	took := created.StageTimestamp.Sub(created.RequestReceivedTimestamp.Time).Microseconds()
	for entry := range strings.SplitSeq(a[audit.AnnotationStageStarts], ",") {
		name, v, _ := strings.Cut(entry, "=")
		us, err := strconv.ParseInt(v, 10, 64)
		if err != nil || us < last || us > took {
			t.Errorf("stage %q started at %q µs: want a number from %d to the request's %d µs (%v)", name, v, last, took, err)
		}
		names, last = append(names, name), us
	}
	if strings.Join(names, ",") != a[audit.AnnotationStages] {
		t.Errorf("stage starts %q name other stages than %q", a[audit.AnnotationStageStarts], a[audit.AnnotationStages])
	}
	if created.ObjectRef.UID == "" || created.ObjectRef.ResourceVersion == "" || created.RequestObject == nil || created.Level != audit.LevelRequest {
		t.Errorf("created objectRef %+v level %s", created.ObjectRef, created.Level)
	}
	hasAdmission := false
	for k := range a {
		hasAdmission = hasAdmission || strings.HasPrefix(k, audit.AnnotationAdmissionPrefix)
	}
	if !hasAdmission {
		t.Errorf("no admission annotations: %v", a)
	}
	if refused.Annotations[audit.AnnotationFailedStage] != "admission" || refused.ResponseStatus.Code != 422 {
		t.Errorf("refused event: %v %+v", refused.Annotations, refused.ResponseStatus)
	}
	if secret.RequestObject != nil {
		t.Errorf("secret data recorded in audit: %s", secret.RequestObject.Raw)
	}
}

func TestMetadataClient(t *testing.T) {
	ctx := ctxT(t)
	ns := shared.namespace(t)
	if _, err := shared.client.CoreV1().Pods(ns).Create(ctx, testPod("meta"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	mc, err := metadata.NewForConfig(shared.config)
	if err != nil {
		t.Fatal(err)
	}
	pods := mc.Resource(corev1.SchemeGroupVersion.WithResource("pods")).Namespace(ns)
	list, err := pods.List(ctx, metav1.ListOptions{})
	if err != nil || len(list.Items) != 1 || list.Items[0].Name != "meta" || list.Items[0].UID == "" {
		t.Fatalf("metadata list: %+v %v", list, err)
	}
	one, err := pods.Get(ctx, "meta", metav1.GetOptions{})
	if err != nil || one.Labels["app"] != "meta" {
		t.Fatalf("metadata get: %+v %v", one, err)
	}
	w, err := pods.Watch(ctx, metav1.ListOptions{ResourceVersion: list.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	if err := shared.client.CoreV1().Pods(ns).Delete(ctx, "meta", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	ev := nextEvent(t, w)
	if pom, ok := ev.Object.(*metav1.PartialObjectMetadata); ev.Type != watch.Deleted || !ok || pom.Name != "meta" {
		t.Fatalf("metadata watch event %s %T", ev.Type, ev.Object)
	}
}
