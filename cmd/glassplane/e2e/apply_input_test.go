package e2e

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestApplyFormInput sends the apply form what kubectl refuses or reads
// specially: a key given twice, a document without apiVersion, a List, and
// a manifest of many documents (which client-go's default of five requests
// a second would take two minutes over, past the client's one-minute
// timeout).
func TestApplyFormInput(t *testing.T) {
	c := SharedCluster(t)
	ctx := context.Background()
	d := newDashClient(t, c)
	if resp, _ := d.do(http.MethodGet, c.DashboardLoginLink(t), nil); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("login link: %d", resp.StatusCode)
	}
	ns := "e2e-apply-input"
	c.MustKubectl(t, "", "create", "namespace", ns)
	t.Cleanup(func() { c.Kubectl(t, "", "delete", "namespace", ns, "--wait=false") })
	absent := func(name string) {
		t.Helper()
		if _, err := c.Client.CoreV1().ConfigMaps(ns).Get(ctx, name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("configmap %s: err = %v, want NotFound (nothing stored)", name, err)
		}
	}

	t.Run("duplicate key", func(t *testing.T) {
		_, body := d.apply("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: dup-a\n  name: dup-b\n  namespace: " + ns + "\n")
		if !strings.Contains(body, `key &#34;name&#34; already set in map`) && !strings.Contains(body, `key "name" already set in map`) {
			t.Errorf("no duplicate-key error in the page: %s", excerpt(body, "already set"))
		}
		absent("dup-a")
		absent("dup-b")
	})
	t.Run("missing apiVersion", func(t *testing.T) {
		_, body := d.apply("kind: ConfigMap\nmetadata:\n  name: no-api-version\n  namespace: " + ns + "\n")
		if !strings.Contains(body, "error validating data: apiVersion not set") {
			t.Errorf("no apiVersion error in the page: %s", excerpt(body, "apiVersion"))
		}
		absent("no-api-version")
	})
	t.Run("List", func(t *testing.T) {
		_, body := d.apply("apiVersion: v1\nkind: List\nitems:\n" +
			"- apiVersion: v1\n  kind: ConfigMap\n  metadata: {name: list-a, namespace: " + ns + "}\n" +
			"- apiVersion: v1\n  kind: ConfigMap\n  metadata: {name: list-b, namespace: " + ns + "}\n")
		for _, name := range []string{"list-a", "list-b"} {
			if _, err := c.Client.CoreV1().ConfigMaps(ns).Get(ctx, name, metav1.GetOptions{}); err != nil {
				t.Errorf("configmap %s of the List: %v; page: %s", name, err, excerpt(body, "configmap/"))
			}
		}
	})
	t.Run("many documents", func(t *testing.T) {
		const n = 300
		var b strings.Builder
		for i := range n {
			fmt.Fprintf(&b, "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: many-%d\n  namespace: %s\n", i, ns)
		}
		resp, body := d.apply(b.String())
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("apply of %d documents: %d %s", n, resp.StatusCode, excerpt(body, "error"))
		}
		list, err := c.Client.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		many := 0
		for _, cm := range list.Items {
			if strings.HasPrefix(cm.Name, "many-") {
				many++
			}
		}
		if many != n {
			t.Errorf("%d of %d ConfigMaps created", many, n)
		}
	})
}

// excerpt is up to 300 bytes of body around the first sub (its start when
// sub is absent), for a failure message.
func excerpt(body, sub string) string {
	i := max(strings.Index(body, sub)-100, 0)
	return body[i:min(len(body), i+300)]
}
