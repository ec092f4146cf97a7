package apiserver_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// hostileCase is one malformed or hostile request and the answer Kubernetes
// gives it.
type hostileCase struct {
	name        string
	method      string
	path        string
	contentType string
	body        string
	want        int
}

// nested returns depth levels of JSON objects, {"a":{"a":...}}.
func nested(depth int) string {
	return strings.Repeat(`{"a":`, depth) + `"x"` + strings.Repeat(`}`, depth)
}

func podJSON(name string, extra string) string {
	return fmt.Sprintf(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":%q%s},"spec":{"containers":[{"name":"c","image":"busybox"}]}}`, name, extra)
}

func configMapJSON(meta string) string {
	return `{"apiVersion":"v1","kind":"ConfigMap","metadata":{` + meta + `}}`
}

func hostileCases(ns string) []hostileCase {
	pods := "/api/v1/namespaces/" + ns + "/pods"
	cms := "/api/v1/namespaces/" + ns + "/configmaps"
	target := cms + "/target"
	const (
		jsonCT  = "application/json"
		merge   = "application/merge-patch+json"
		jpatch  = "application/json-patch+json"
		smpatch = "application/strategic-merge-patch+json"
	)
	return []hostileCase{
		// Bodies that are not JSON objects, or not the right one.
		{"truncated JSON", "POST", pods, jsonCT, `{"apiVersion":"v1","kind":"Pod",`, 400},
		{"not JSON", "POST", pods, jsonCT, `hello`, 400},
		{"JSON array", "POST", pods, jsonCT, `[]`, 400},
		{"JSON string", "POST", pods, jsonCT, `"pod"`, 400},
		{"empty body", "POST", pods, jsonCT, ``, 400},
		{"invalid UTF-8", "POST", pods, jsonCT, "{\"apiVersion\":\"v1\",\"kind\":\"Pod\",\"metadata\":{\"name\":\"\xff\xfe\"}}", 422},
		{"wrong kind", "POST", pods, jsonCT, `{"apiVersion":"v1","kind":"Service","metadata":{"name":"s"}}`, 400},
		{"wrong API version", "POST", pods, jsonCT, `{"apiVersion":"apps/v1","kind":"Pod","metadata":{"name":"p"}}`, 400},
		{"unknown kind", "POST", pods, jsonCT, `{"apiVersion":"v1","kind":"Banana","metadata":{"name":"b"}}`, 400},
		{"field of the wrong type", "POST", pods, jsonCT, `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"spec":{"containers":"busybox"}}`, 400},
		{"namespace differs from the URL", "POST", pods, jsonCT, podJSON("p", `,"namespace":"kube-system"`), 400},
		{"name differs from the URL", "PUT", target, jsonCT, configMapJSON(`"name":"other"`), 400},
		{"unknown field, strict", "POST", pods + "?fieldValidation=Strict", jsonCT, podJSON("p", `,"bogus":1`), 400},
		{"duplicate field, strict", "POST", pods + "?fieldValidation=Strict", jsonCT, `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p","name":"q"},"spec":{"containers":[{"name":"c","image":"busybox"}]}}`, 400},
		{"deep nesting in labels", "POST", cms, jsonCT, configMapJSON(`"name":"deep","labels":` + nested(5000)), 400},
		{"deep nesting beyond the decoder's limit", "POST", cms + "?fieldValidation=Strict", jsonCT, configMapJSON(`"name":"deeper","x":` + nested(20000)), 400},
		// Names and metadata.
		{"name with ../", "POST", pods, jsonCT, podJSON("../../etc/passwd", ""), 422},
		{"name with a slash", "POST", pods, jsonCT, podJSON("a/b", ""), 422},
		{"name with %2F", "POST", pods, jsonCT, podJSON("a%2Fb", ""), 422},
		{"name with a NUL byte", "POST", pods, jsonCT, `{"apiVersion":"v1","kind":"Pod","metadata":{"name":"a\u0000b"},"spec":{"containers":[{"name":"c","image":"busybox"}]}}`, 422},
		{"upper-case name", "POST", pods, jsonCT, podJSON("Web", ""), 422},
		{"huge name", "POST", pods, jsonCT, podJSON(strings.Repeat("a", 10000), ""), 422},
		{"huge generateName", "POST", cms, jsonCT, configMapJSON(`"generateName":"` + strings.Repeat("g", 300) + `"`), 422},
		{"no name", "POST", cms, jsonCT, configMapJSON(`"labels":{"a":"b"}`), 422},
		{"invalid label value", "POST", cms, jsonCT, configMapJSON(`"name":"l1","labels":{"app":"bad value!"}`), 422},
		{"invalid label key", "POST", cms, jsonCT, configMapJSON(`"name":"l2","labels":{"-app":"x"}`), 422},
		{"label value too long", "POST", cms, jsonCT, configMapJSON(`"name":"l3","labels":{"app":"` + strings.Repeat("v", 64) + `"}`), 422},
		{"annotations too large", "POST", cms, jsonCT, configMapJSON(`"name":"a1","annotations":{"big":"` + strings.Repeat("x", 300<<10) + `"}`), 422},
		{"invalid namespace name", "POST", "/api/v1/namespaces", jsonCT, `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"Bad.NS"}}`, 422},
		{"pod into a missing namespace", "POST", "/api/v1/namespaces/no-such-ns/pods", jsonCT, podJSON("p", ""), 404},
		// Path traversal and odd paths.
		{"traversal in the path", "GET", "/api/v1/namespaces/" + ns + "/pods/..%2F..%2Fsecrets", "", "", 404},
		{"encoded slash in a name", "GET", target + "%2Fextra", "", "", 404},
		{"encoded traversal in a namespace", "GET", "/api/v1/namespaces/..%2Fkube-system/configmaps", "", "", 404},
		{"huge name in the URL", "GET", cms + "/" + strings.Repeat("n", 10000), "", "", 404},
		{"unknown resource", "GET", "/api/v1/namespaces/" + ns + "/bananas", "", "", 404},
		{"unknown group", "GET", "/apis/bananas.example.com/v1/things", "", "", 404},
		{"unknown subresource", "GET", target + "/nope", "", "", 404},
		// Sizes and media types.
		{"oversize body", "POST", cms, jsonCT, configMapJSON(`"name":"big"},"data":{"x":"` + strings.Repeat("x", 4<<20) + `"`), 413},
		{"text/plain body", "POST", cms, "text/plain", configMapJSON(`"name":"t"`), 415},
		{"garbage content type", "POST", cms, ";;;", configMapJSON(`"name":"t"`), 415},
		{"garbage protobuf", "POST", cms, "application/vnd.kubernetes.protobuf", "k8s\x00garbage", 400},
		{"invalid YAML", "POST", cms, "application/yaml", "a: b: c: [", 400},
		// Patches.
		{"JSON patch that is not JSON", "PATCH", target, jpatch, `not json`, 400},
		{"JSON patch with an unknown op", "PATCH", target, jpatch, `[{"op":"explode","path":"/data"}]`, 422},
		{"JSON patch test that fails", "PATCH", target, jpatch, `[{"op":"test","path":"/metadata/name","value":"nope"}]`, 422},
		{"merge patch that is not an object", "PATCH", target, merge, `[1,2]`, 400},
		{"merge patch of the wrong type", "PATCH", target, merge, `{"data":5}`, 400},
		{"strategic merge patch renaming", "PATCH", target, smpatch, `{"metadata":{"name":"renamed"}}`, 400},
		{"patch with an unsupported type", "PATCH", target, "application/xml", `<data/>`, 415},
		{"patch of a missing object", "PATCH", cms + "/missing", merge, `{"data":{"a":"b"}}`, 404},
		// Query parameters.
		{"non-numeric resourceVersion on update", "PUT", target, jsonCT, configMapJSON(`"name":"target","resourceVersion":"abc"`), 409},
		{"stale resourceVersion on update", "PUT", target, jsonCT, configMapJSON(`"name":"target","resourceVersion":"1"`), 409},
		{"bad resourceVersion on list", "GET", cms + "?resourceVersion=abc", "", "", 400},
		{"bad resourceVersion on get", "GET", target + "?resourceVersion=garbage", "", "", 400},
		{"negative resourceVersion on get", "GET", target + "?resourceVersion=-1", "", "", 400},
		{"bad resourceVersion on watch", "GET", cms + "?watch=True&resourceVersion=garbage", "", "", 400},
		// kube-apiserver's etcd3 store refuses it with a plain error (a 500
		// there); the same text as a 400 here.
		{"resourceVersion on create", "POST", cms, jsonCT, configMapJSON(`"name":"with-rv","resourceVersion":"5"`), 400},
		{"non-numeric limit", "GET", cms + "?limit=ten", "", "", 400},
		{"non-numeric timeoutSeconds", "GET", cms + "?watch=1&timeoutSeconds=0.1s", "", "", 400},
		{"non-numeric gracePeriodSeconds", "DELETE", target + "?gracePeriodSeconds=soon", "", "", 400},
		{"bad resourceVersionMatch", "GET", cms + "?resourceVersion=0&resourceVersionMatch=Sometimes", "", "", 400},
		{"bad label selector", "GET", cms + "?labelSelector=a%3D%3D%3Db", "", "", 400},
		{"bad field selector", "GET", cms + "?fieldSelector=spec.bogus%3D1", "", "", 400},
		{"bad continue token", "GET", cms + "?limit=1&continue=garbage", "", "", 400},
		{"bad dryRun", "POST", cms + "?dryRun=Some", jsonCT, configMapJSON(`"name":"d"`), 400},
		{"bad fieldValidation", "POST", cms + "?fieldValidation=Loose", jsonCT, configMapJSON(`"name":"f"`), 400},
		{"bad propagationPolicy", "DELETE", target, jsonCT, `{"kind":"DeleteOptions","apiVersion":"v1","propagationPolicy":"Sideways"}`, 422},
		// Verbs.
		{"unknown method", "BREW", cms, "", "", 405},
		{"TRACE", "TRACE", cms, "", "", 405},
		{"POST to a named object", "POST", target, jsonCT, configMapJSON(`"name":"target"`), 405},
		{"deletecollection of namespaces", "DELETE", "/api/v1/namespaces", "", "", 405},
		{"create on a status subresource", "POST", pods + "/p/status", jsonCT, podJSON("p", ""), 405},
	}
}

// registryKeys counts the keys under /registry/.
func registryKeys(t *testing.T) int64 {
	t.Helper()
	resp, err := shared.etcd.Client().Get(context.Background(), "/registry/", clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		t.Fatal(err)
	}
	return resp.Count
}

// TestHostileRequests sends malformed and hostile requests through the real
// API server: each gets the error kube-apiserver gives it (a 4xx but for a
// create carrying a resourceVersion) as a metav1.Status, and nothing is
// stored.
func TestHostileRequests(t *testing.T) {
	env := shared
	ns := env.namespace(t)
	ctx := context.Background()
	if _, err := env.client.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "target"}, Data: map[string]string{"k": "v"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cases := hostileCases(ns)
	if len(cases) < 40 {
		t.Fatalf("only %d cases", len(cases))
	}
	before := registryKeys(t)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var body *bytes.Reader
			if tc.body != "" {
				body = bytes.NewReader([]byte(tc.body))
			}
			var resp *http.Response
			var text string
			if body == nil {
				resp, text = env.do(t, tc.method, tc.path, tc.contentType, nil)
			} else {
				resp, text = env.do(t, tc.method, tc.path, tc.contentType, body)
			}
			if resp.StatusCode != tc.want {
				t.Fatalf("%s %s: code %d, want %d: %.300s", tc.method, tc.path[:min(len(tc.path), 120)], resp.StatusCode, tc.want, text)
			}
			var st metav1.Status
			if err := json.Unmarshal([]byte(text), &st); err != nil || st.Kind != "Status" || st.APIVersion != "v1" || st.Status != metav1.StatusFailure || int(st.Code) != tc.want || st.Message == "" {
				t.Errorf("body is not a failure Status with code %d: %v: %.300s", tc.want, err, text)
			}
		})
	}
	if after := registryKeys(t); after != before {
		t.Errorf("etcd holds %d keys under /registry/ after the hostile requests, %d before", after, before)
	}
	cm, err := env.client.CoreV1().ConfigMaps(ns).Get(ctx, "target", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(cm.Data) != 1 || cm.Data["k"] != "v" || len(cm.Labels) != 0 {
		t.Errorf("the target configmap changed: %+v", cm)
	}
}

// TestQueryParameterMessages checks the messages of refused query
// parameters and of a create carrying a resourceVersion against
// kube-apiserver's.
func TestQueryParameterMessages(t *testing.T) {
	env := shared
	ns := env.namespace(t)
	cms := "/api/v1/namespaces/" + ns + "/configmaps"
	if _, err := env.client.CoreV1().ConfigMaps(ns).Create(context.Background(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "target"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, method, path, body string
		wantCode                 int32
		wantReason               metav1.StatusReason
		wantMessage              string
	}{
		{"resourceVersion on create", "POST", cms, configMapJSON(`"name":"with-rv","resourceVersion":"5"`), 400, metav1.StatusReasonBadRequest,
			"resourceVersion should not be set on objects to be created"},
		{"bad resourceVersion on get", "GET", cms + "/target?resourceVersion=garbage", "", 400, metav1.StatusReasonBadRequest,
			`invalid resource version: resourceVersion: Invalid value: "garbage": strconv.ParseUint: parsing "garbage": invalid syntax`},
		{"non-numeric limit", "GET", cms + "?limit=ten", "", 400, metav1.StatusReasonBadRequest, `strconv.ParseInt: parsing "ten": invalid syntax`},
		{"non-numeric timeoutSeconds", "GET", cms + "?watch=true&timeoutSeconds=0.1s", "", 400, metav1.StatusReasonBadRequest, `strconv.ParseInt: parsing "0.1s": invalid syntax`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var body *strings.Reader
			if tc.body != "" {
				body = strings.NewReader(tc.body)
			}
			var text string
			if body == nil {
				_, text = env.do(t, tc.method, tc.path, "application/json", nil)
			} else {
				_, text = env.do(t, tc.method, tc.path, "application/json", body)
			}
			var st metav1.Status
			if err := json.Unmarshal([]byte(text), &st); err != nil {
				t.Fatalf("%v: %s", err, text)
			}
			if st.Code != tc.wantCode || st.Reason != tc.wantReason || st.Message != tc.wantMessage {
				t.Errorf("got %d %q %q, want %d %q %q", st.Code, st.Reason, st.Message, tc.wantCode, tc.wantReason, tc.wantMessage)
			}
		})
	}
	t.Run("a create with an unparsable or zero resourceVersion", func(t *testing.T) {
		for name, rv := range map[string]string{"rv-zero": "0", "rv-junk": "junk"} {
			resp, text := env.do(t, "POST", cms, "application/json", strings.NewReader(configMapJSON(`"name":"`+name+`","resourceVersion":"`+rv+`"`)))
			if resp.StatusCode != http.StatusCreated {
				t.Errorf("resourceVersion %q: %s %s", rv, resp.Status, text)
			}
		}
	})
	t.Run("a dry-run create with a resourceVersion", func(t *testing.T) {
		resp, text := env.do(t, "POST", cms+"?dryRun=All", "application/json", strings.NewReader(configMapJSON(`"name":"dry","resourceVersion":"5"`)))
		if resp.StatusCode != http.StatusCreated {
			t.Errorf("%s %s", resp.Status, text)
		}
	})
}

// TestWatchParameterAsTheCodecReadsIt checks that watch is true for any
// value but "0" and "false" in any case, as apimachinery's parameter codec
// decodes booleans.
func TestWatchParameterAsTheCodecReadsIt(t *testing.T) {
	env := shared
	ns := env.namespace(t)
	if _, err := env.client.CoreV1().ConfigMaps(ns).Create(context.Background(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "seen"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for value, wantWatch := range map[string]bool{"True": true, "maybe": true, "": true, "1": true, "FALSE": false, "0": false} {
		t.Run("watch="+value, func(t *testing.T) {
			resp, text := env.do(t, "GET", "/api/v1/namespaces/"+ns+"/configmaps?timeoutSeconds=1&watch="+value, "", nil)
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("%s %s", resp.Status, text)
			}
			watched := strings.Contains(text, `"type":"ADDED"`)
			listed := strings.Contains(text, `"kind":"ConfigMapList"`)
			if watched != wantWatch || listed == wantWatch {
				t.Errorf("watch=%q: watched %v, listed %v: %.300s", value, watched, listed, text)
			}
		})
	}
}
