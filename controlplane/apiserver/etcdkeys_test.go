package apiserver_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/glassplane/glassplane/api/v1alpha1"
)

// TestEtcdKeys reads the etcd key explorer through the API: a ConfigMap's
// key in the list, its value now and at its first revision, its history,
// paging with continue, and a user without rights refused.
func TestEtcdKeys(t *testing.T) {
	env := shared
	ns := env.namespace(t)
	ctx := ctxT(t)
	cms := env.client.CoreV1().ConfigMaps(ns)
	cm, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "explored"}, Data: map[string]string{"v": "1"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	first := cm.ResourceVersion
	cm.Data["v"] = "2"
	if _, err := cms.Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	key := "/registry/configmaps/" + ns + "/explored"
	base := "/apis/glassplane.io/v1alpha1/etcdkeys"

	get := func(path string, out any) int {
		t.Helper()
		resp, body := env.do(t, http.MethodGet, path, "", nil)
		if out != nil && resp.StatusCode == http.StatusOK {
			if err := json.Unmarshal([]byte(body), out); err != nil {
				t.Fatalf("%s: %v: %s", path, err, body)
			}
		}
		if out == nil || resp.StatusCode != http.StatusOK {
			if st := (metav1.Status{}); json.Unmarshal([]byte(body), &st) == nil && out != nil {
				t.Logf("%s: %d %s", path, resp.StatusCode, st.Message)
			}
		}
		return resp.StatusCode
	}

	var list v1alpha1.EtcdKeyList
	if code := get(base, &list); code != http.StatusOK {
		t.Fatalf("list: %d", code)
	}
	var listed *v1alpha1.EtcdKey
	for i := range list.Items {
		if list.Items[i].Key == key {
			listed = &list.Items[i]
		}
	}
	if listed == nil || listed.Version != 2 || listed.Value != nil || listed.Name != v1alpha1.EtcdKeyName(key) {
		t.Fatalf("listed %s = %+v", key, listed)
	}

	var now v1alpha1.EtcdKey
	if code := get(base+"/"+listed.Name, &now); code != http.StatusOK {
		t.Fatalf("get: %d", code)
	}
	if now.Kind != "EtcdKey" || now.Value == nil || now.Value.Encoding != "json" || !strings.Contains(string(now.Value.Object.Raw), `"v":"2"`) {
		t.Errorf("now = %+v", now)
	}
	var then v1alpha1.EtcdKey
	if code := get(base+"/"+listed.Name+"?resourceVersion="+first, &then); code != http.StatusOK {
		t.Fatalf("get at %s: %d", first, code)
	}
	if !strings.Contains(string(then.Value.Object.Raw), `"v":"1"`) {
		t.Errorf("at revision %s: %s", first, then.Value.Object.Raw)
	}

	var hist v1alpha1.EtcdKeyList
	if code := get(base+"/"+listed.Name+"/history", &hist); code != http.StatusOK {
		t.Fatalf("history: %d", code)
	}
	if len(hist.Items) != 2 || hist.History == nil || hist.History.CreatedAt != hist.Items[1].ModRevision {
		t.Errorf("history = %d items, end %+v", len(hist.Items), hist.History)
	}

	var page v1alpha1.EtcdKeyList
	if code := get(base+"?limit=1", &page); code != http.StatusOK || len(page.Items) != 1 || page.Continue == "" {
		t.Fatalf("limit=1: %d, %d items, continue %q", code, len(page.Items), page.Continue)
	}
	var next v1alpha1.EtcdKeyList
	if code := get(base+"?limit=1&continue="+url.QueryEscape(page.Continue), &next); code != http.StatusOK || len(next.Items) != 1 || next.Items[0].Key <= page.Items[0].Key {
		t.Fatalf("the next page: %d, %+v after %q", code, next.Items, page.Items[0].Key)
	}

	// A watch from the list's revision sees the next write.
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, env.url+base+"?watch=1&resourceVersion="+list.ResourceVersion, nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := env.http.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "watched"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	dec := json.NewDecoder(resp.Body)
	for {
		var ev struct {
			Type   string
			Object v1alpha1.EtcdKey
		}
		if err := dec.Decode(&ev); err != nil {
			t.Fatalf("watch: %v", err)
		}
		if ev.Object.Key == "/registry/configmaps/"+ns+"/watched" {
			if ev.Type != "ADDED" || ev.Object.Kind != "EtcdKey" || ev.Object.Size == 0 || ev.Object.Value != nil {
				t.Errorf("watch event = %s %+v", ev.Type, ev.Object)
			}
			break
		}
	}

	for path, want := range map[string]int{
		base + "/" + v1alpha1.EtcdKeyName("/registry/configmaps/"+ns+"/missing"): http.StatusNotFound,
		base + "/not*base64":                      http.StatusBadRequest,
		base + "?continue=bogus":                  http.StatusBadRequest,
		base + "?resourceVersion=abc":             http.StatusBadRequest,
		base + "?resourceVersion=999999999":       http.StatusGatewayTimeout,
		base + "/" + listed.Name + "/nosuchthing": http.StatusNotFound,
	} {
		if code := get(path, nil); code != want {
			t.Errorf("GET %s = %d, want %d", path, code, want)
		}
	}
	if resp, _ := env.do(t, http.MethodDelete, base+"/"+listed.Name, "", nil); resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("DELETE = %d, want 405", resp.StatusCode)
	}

}

// TestEtcdKeysRBAC: raw etcd and the audit stream are for system:masters
// and the dashboard's identity; a user with view everywhere is refused, as
// kube words it.
func TestEtcdKeysRBAC(t *testing.T) {
	env := sharedRBACEnv(t)
	ctx := ctxT(t)
	if _, err := env.admin.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "mallory-view"},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: "view"},
		Subjects:   []rbacv1.Subject{{Kind: "User", APIGroup: "rbac.authorization.k8s.io", Name: "mallory"}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		user   string
		groups []string
		want   int
	}{
		{"mallory", nil, http.StatusForbidden},
		{"system:glassplane-dashboard", nil, http.StatusOK},
		{"root", []string{"system:masters"}, http.StatusOK},
	} {
		cfg, err := env.ca.RESTConfig(env.url, tc.user, tc.groups...)
		if err != nil {
			t.Fatal(err)
		}
		hc, err := rest.HTTPClientFor(cfg)
		if err != nil {
			t.Fatal(err)
		}
		for _, resource := range []string{"etcdkeys", "auditevents"} {
			var code int
			var body []byte
			// RBAC follows the binding through a watch: wait for it.
			eventually(t, tc.user+" gets its answer on "+resource, func() bool {
				resp, err := hc.Get(env.url + "/apis/glassplane.io/v1alpha1/" + resource + "?limit=1")
				if err != nil {
					return false
				}
				defer resp.Body.Close()
				body, _ = io.ReadAll(resp.Body)
				code = resp.StatusCode
				return code == tc.want
			})
			if tc.want == http.StatusForbidden && !strings.Contains(string(body), resource+`.glassplane.io is forbidden: User \"mallory\" cannot list resource \"`+resource+`\" in API group \"glassplane.io\" at the cluster scope`) {
				t.Errorf("mallory's refusal: %s", body)
			}
		}
	}
}
