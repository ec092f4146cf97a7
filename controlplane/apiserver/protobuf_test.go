package apiserver_test

import (
	"net/http"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
)

// protobufClient is a client-go clientset that speaks Kubernetes' protobuf
// both ways, as kube-scheduler and kube-controller-manager do.
func protobufClient(t *testing.T) (kubernetes.Interface, *rest.Config) {
	t.Helper()
	cfg := rest.CopyConfig(shared.config)
	cfg.ContentType = runtime.ContentTypeProtobuf
	cfg.AcceptContentTypes = runtime.ContentTypeProtobuf + "," + runtime.ContentTypeJSON
	c, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c, cfg
}

func TestProtobufClientReadsWritesAndWatches(t *testing.T) {
	ctx := ctxT(t)
	ns := shared.namespace(t)
	c, _ := protobufClient(t)
	pods := c.CoreV1().Pods(ns)

	created, err := pods.Create(ctx, testPod("pb"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if created.Name != "pb" || created.Spec.Containers[0].Image == "" || created.UID == "" {
		t.Fatalf("created = %+v", created.ObjectMeta)
	}
	got, err := pods.Get(ctx, "pb", metav1.GetOptions{})
	if err != nil || got.ResourceVersion != created.ResourceVersion || got.Spec.RestartPolicy != corev1.RestartPolicyAlways {
		t.Fatalf("get = %+v, %v", got, err)
	}
	list, err := pods.List(ctx, metav1.ListOptions{})
	if err != nil || len(list.Items) != 1 || list.ResourceVersion == "" {
		t.Fatalf("list = %+v, %v", list, err)
	}
	// Errors stay JSON metav1.Status, which client-go reads whatever it asked.
	if _, err := pods.Get(ctx, "missing", metav1.GetOptions{}); !apierrors.IsNotFound(err) || !strings.Contains(err.Error(), `pods "missing" not found`) {
		t.Errorf("get missing: %v", err)
	}

	w, err := pods.Watch(ctx, metav1.ListOptions{ResourceVersion: list.ResourceVersion, AllowWatchBookmarks: true})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	got.Labels["v"] = "2"
	if _, err := pods.Update(ctx, got, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	ev := nextEvent(t, w)
	if ev.Type != watch.Modified || ev.Object.(*corev1.Pod).Labels["v"] != "2" {
		t.Fatalf("event %s %+v, want MODIFIED with v=2", ev.Type, ev.Object)
	}
	if err := pods.Delete(ctx, "pb", metav1.DeleteOptions{GracePeriodSeconds: new(int64)}); err != nil {
		t.Fatal(err)
	}
	for ev = nextEvent(t, w); ev.Type == watch.Modified; ev = nextEvent(t, w) {
	}
	if ev.Type != watch.Deleted || ev.Object.(*corev1.Pod).Name != "pb" {
		t.Fatalf("event %s, want DELETED pb", ev.Type)
	}
}

// The raw stream is Kubernetes' protobuf watch framing, and an informer
// (sendInitialEvents, bookmarks) works over it.
func TestProtobufWatchStreamAndInformer(t *testing.T) {
	ctx := ctxT(t)
	ns := shared.namespace(t)
	c, cfg := protobufClient(t)
	if _, err := c.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "one"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, shared.url+"/api/v1/namespaces/"+ns+"/configmaps?watch=true&resourceVersion=0", nil)
	req.Header.Set("Accept", runtime.ContentTypeProtobuf+","+runtime.ContentTypeJSON)
	resp, err := shared.http.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); ct != "application/vnd.kubernetes.protobuf;stream=watch" {
		t.Fatalf("Content-Type = %q", ct)
	}
	head := make([]byte, 8)
	if _, err := resp.Body.Read(head); err != nil {
		t.Fatal(err)
	}
	if n := int(head[0])<<24 | int(head[1])<<16 | int(head[2])<<8 | int(head[3]); n <= 0 || n > 1<<20 {
		t.Errorf("frame length %d", n)
	}

	var mu sync.Mutex
	names := map[string]bool{}
	factory := informers.NewSharedInformerFactoryWithOptions(c, 0, informers.WithNamespace(ns))
	inf := factory.Core().V1().ConfigMaps().Informer()
	inf.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: func(obj any) {
		mu.Lock()
		defer mu.Unlock()
		names[obj.(*corev1.ConfigMap).Name] = true
	}})
	stop := make(chan struct{})
	defer close(stop)
	factory.Start(stop)
	if !cache.WaitForCacheSync(ctx.Done(), inf.HasSynced) {
		t.Fatal("informer did not sync")
	}
	if _, err := c.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "two"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the informer sees both config maps", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return names["one"] && names["two"]
	})

	// client-go's metadata client asks for PartialObjectMetadata in
	// protobuf first; a Table has no protobuf form, so the JSON entry after
	// it is the answer.
	for _, tc := range []struct{ accept, want string }{
		{"application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json", "application/vnd.kubernetes.protobuf"},
		{"application/vnd.kubernetes.protobuf;as=Table;g=meta.k8s.io;v=v1,application/json;as=Table;g=meta.k8s.io;v=v1", "application/json"},
		{"application/json,application/vnd.kubernetes.protobuf", "application/json"},
	} {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, shared.url+"/api/v1/namespaces/"+ns+"/configmaps", nil)
		req.Header.Set("Accept", tc.accept)
		resp, err := shared.http.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if got := resp.Header.Get("Content-Type"); resp.StatusCode != http.StatusOK || got != tc.want {
			t.Errorf("Accept %s: %s, Content-Type %q, want %q", tc.accept, resp.Status, got, tc.want)
		}
	}
	mc, err := metadata.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ml, err := mc.Resource(corev1.SchemeGroupVersion.WithResource("configmaps")).Namespace(ns).List(ctx, metav1.ListOptions{})
	if err != nil || len(ml.Items) < 2 {
		t.Fatalf("metadata list = %+v, %v", ml, err)
	}
}
