package web

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apiextensionsinformers "k8s.io/apiextensions-apiserver/pkg/client/informers/externalversions"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
)

// kindInfo is one API resource as discovery serves it.
type kindInfo struct {
	Group, Version, Kind string
	// Resource is the plural ("widgets").
	Resource   string
	Namespaced bool
	// Custom is true for a CustomResourceDefinition's resource, whose
	// objects are stored at /registry/<group>/<plural>/.
	Custom bool
}

// customLooking reports whether a group can only be a custom resource's
// (a dotted name outside *.k8s.io, other than Glassplane's own): the key
// of such a resource is right even while the CRDs are not known yet, as
// web/source/kube guesses too.
func customLooking(group string) bool {
	return strings.Contains(group, ".") && !strings.HasSuffix(group, ".k8s.io") && group != "k8s.io" && !groupKeyed[group]
}

// groupKeyed are the built-in groups whose objects are stored under their
// group, as custom resources' are: Glassplane's own.
var groupKeyed = map[string]bool{"glassplane.io": true}

// storage is the resource's part of its etcd keys.
func (k kindInfo) storage() string {
	if k.Custom || groupKeyed[k.Group] || customLooking(k.Group) {
		return k.Group + "/" + k.Resource
	}
	return storageResource(k.Resource)
}

// kindSnapshot is the kinds one discovery answered, looked up by kind, by
// plural and by plural.group. Built-in resources win a kind or plural that
// a custom resource also uses, as kubectl's short forms resolve.
type kindSnapshot struct {
	byKind     map[string]kindInfo
	byResource map[string]kindInfo
}

// buildKinds reads discovery's preferred resources and the CRDs into a
// snapshot. Subresources are left out; a CRD whose names are accepted but
// that discovery does not list yet is added from its spec (its storage
// version), so its objects have pages a moment earlier.
func buildKinds(lists []*metav1.APIResourceList, crds []*apiextensionsv1.CustomResourceDefinition) kindSnapshot {
	custom := map[schema.GroupResource]bool{}
	for _, crd := range crds {
		custom[schema.GroupResource{Group: crd.Spec.Group, Resource: crd.Spec.Names.Plural}] = true
	}
	s := kindSnapshot{byKind: map[string]kindInfo{}, byResource: map[string]kindInfo{}}
	add := func(k kindInfo) {
		if k.Group != "" {
			if _, ok := s.byResource[k.Resource+"."+k.Group]; !ok {
				s.byResource[k.Resource+"."+k.Group] = k
			}
		}
		if old, ok := s.byResource[k.Resource]; !ok || (old.Custom && !k.Custom) {
			s.byResource[k.Resource] = k
		}
		if old, ok := s.byKind[k.Kind]; !ok || (old.Custom && !k.Custom) {
			s.byKind[k.Kind] = k
		}
	}
	for _, list := range lists {
		gv, err := schema.ParseGroupVersion(list.GroupVersion)
		if err != nil {
			continue
		}
		for _, r := range list.APIResources {
			if strings.Contains(r.Name, "/") || r.Kind == "" {
				continue
			}
			add(kindInfo{
				Group: gv.Group, Version: gv.Version, Kind: r.Kind, Resource: r.Name, Namespaced: r.Namespaced,
				Custom: custom[schema.GroupResource{Group: gv.Group, Resource: r.Name}],
			})
		}
	}
	for _, crd := range crds {
		if _, ok := s.byResource[crd.Spec.Names.Plural+"."+crd.Spec.Group]; ok || !crdCondition(crd, apiextensionsv1.NamesAccepted) {
			continue
		}
		add(kindInfo{
			Group: crd.Spec.Group, Version: storageVersion(crd), Kind: crd.Spec.Names.Kind, Resource: crd.Spec.Names.Plural,
			Namespaced: crd.Spec.Scope == apiextensionsv1.NamespaceScoped, Custom: true,
		})
	}
	return s
}

// storageVersion is the version a CRD's objects are stored in.
func storageVersion(crd *apiextensionsv1.CustomResourceDefinition) string {
	for _, v := range crd.Spec.Versions {
		if v.Storage {
			return v.Name
		}
	}
	return ""
}

// crdCondition tells whether the CRD's condition t is True.
func crdCondition(crd *apiextensionsv1.CustomResourceDefinition, t apiextensionsv1.CustomResourceDefinitionConditionType) bool {
	for _, c := range crd.Status.Conditions {
		if c.Type == t {
			return c.Status == apiextensionsv1.ConditionTrue
		}
	}
	return false
}

// kindTable is what the API server serves, as discovery and the CRDs
// say: the dashboard's kind ↔ resource ↔ etcd key mapping for built-in
// and custom resources alike. Until discovery answers (and in a dashboard
// without an API connection) it knows only the built-ins of kindResources
// and storageToAPI.
type kindTable struct {
	mu   sync.RWMutex // guards snap
	snap kindSnapshot
}

// kinds is the process's table, refreshed by the running dashboard
// (Dashboard.Run) whenever a CustomResourceDefinition changes. The free
// functions that map kinds (resourceOfKind, kindOfResource,
// storageResource) read it; a process serves one cluster.
var kinds = &kindTable{}

func (t *kindTable) set(s kindSnapshot) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.snap = s
}

func (t *kindTable) snapshot() kindSnapshot {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.snap
}

// byKind is the resource of kind, when discovery knows it.
func (t *kindTable) byKind(kind string) (kindInfo, bool) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	k, ok := t.snap.byKind[kind]
	return k, ok
}

// byResource is the resource named "plural" or "plural.group", when
// discovery knows it.
func (t *kindTable) byResource(resource string) (kindInfo, bool) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	k, ok := t.snap.byResource[resource]
	return k, ok
}

// customStorage is the storage resource ("example.com/widgets") of a
// custom resource, or of a group stored under its name (groupKeyed),
// named "plural" or "plural.group"; false for anything else.
func (t *kindTable) customStorage(resource string) (string, bool) {
	k, ok := t.byResource(resource)
	if !ok || !k.Custom && !groupKeyed[k.Group] && !customLooking(k.Group) {
		return "", false
	}
	return k.storage(), true
}

// kindsRefreshDelay gathers a burst of CRD changes (a create, then its
// NamesAccepted and Established status writes) into one discovery.
const kindsRefreshDelay = 200 * time.Millisecond

// kindsResync asks discovery again even without a CRD change, for API
// groups that come and go otherwise.
const kindsResync = 5 * time.Minute

// runKinds keeps kinds current through the API, as the dashboard itself:
// it watches CustomResourceDefinitions and, after each change (and every
// kindsResync), asks discovery again. It closes known after the first
// refresh that set the table, and blocks until ctx ends.
func runKinds(ctx context.Context, cfg *rest.Config, log *slog.Logger, known chan<- struct{}) error {
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return fmt.Errorf("failed to create the dashboard's discovery client: %w", err)
	}
	ext, err := apiextensionsclient.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("failed to create the dashboard's CRD client: %w", err)
	}
	factory := apiextensionsinformers.NewSharedInformerFactory(ext, 0)
	informer := factory.Apiextensions().V1().CustomResourceDefinitions()
	changed := make(chan struct{}, 1)
	poke := func(any) {
		select {
		case changed <- struct{}{}:
		default:
		}
	}
	if _, err := informer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    poke,
		UpdateFunc: func(_, obj any) { poke(obj) },
		DeleteFunc: poke,
	}); err != nil {
		return fmt.Errorf("failed to watch CustomResourceDefinitions: %w", err)
	}
	// A new dashboard does not inherit a stopped one's table (tests run
	// several in one process); until the first refresh, keys map by the
	// built-ins' names only. The informer only says when to refresh: a
	// refresh lists the CRDs from the API (below).
	kinds.set(kindSnapshot{})
	factory.Start(ctx.Done())
	defer factory.Shutdown()
	factory.WaitForCacheSync(ctx.Done())
	var setOnce sync.Once
	// refresh reads discovery, then the CRDs, into kinds; on failure it
	// asks again a little later. The CRDs are listed from the API after
	// discovery answered, not from the informer's cache, whose watch can
	// lag: a resource discovery serves always finds its CRD in the list,
	// so it is never taken for a built-in.
	refresh := func() {
		// A group that fails discovery (an aggregated API that is down)
		// leaves out only its own resources.
		lists, err := dc.ServerPreferredResources()
		if err != nil && len(lists) == 0 {
			log.Debug("dashboard discovery failed; retrying", "err", err)
			time.AfterFunc(kindsRetry, func() { poke(nil) })
			return
		}
		list, err := ext.ApiextensionsV1().CustomResourceDefinitions().List(ctx, metav1.ListOptions{})
		if err != nil {
			log.Debug("dashboard could not list CRDs; retrying", "err", err)
			time.AfterFunc(kindsRetry, func() { poke(nil) })
			return
		}
		crds := make([]*apiextensionsv1.CustomResourceDefinition, len(list.Items))
		for i := range list.Items {
			crds[i] = &list.Items[i]
		}
		if ctx.Err() == nil {
			kinds.set(buildKinds(lists, crds))
			setOnce.Do(func() { close(known) })
		}
	}
	refresh()
	resync := time.NewTicker(kindsResync)
	defer resync.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-changed:
			select {
			case <-time.After(kindsRefreshDelay):
			case <-ctx.Done():
				return nil
			}
			refresh()
		case <-resync.C:
			refresh()
		}
	}
}

// kindsRetry is how soon a failed discovery is asked again.
const kindsRetry = 2 * time.Second

// apiName is the plural of a resource named "plural" or "plural.group"
// ("widgets.example.com" → "widgets"), as RBAC and audit name it; a name
// discovery does not know comes back as it is.
func apiName(resource string) string {
	if k, ok := kinds.byResource(resource); ok {
		return k.Resource
	}
	return resource
}

// hrefResource is how object pages name a storage resource: its API
// resource, or "plural.group" for one stored under its group
// ("example.com/widgets" → "widgets.example.com"), so that a custom
// resource's page names its group.
func hrefResource(storageRes string) string {
	if _, ok := storageToAPI[storageRes]; ok {
		return apiResource(storageRes)
	}
	group, plural, ok := strings.Cut(storageRes, "/")
	if !ok || !strings.Contains(group, ".") {
		return apiResource(storageRes)
	}
	return plural + "." + group
}
