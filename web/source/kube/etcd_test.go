package kube

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/client-go/discovery"

	"github.com/glassplane/glassplane/web/source"
)

// TestEtcd reads the same etcd through Glassplane's etcdkeys API and
// directly, and checks both against the keys the API server's storage
// wrote.
func TestEtcd(t *testing.T) {
	c := startCluster(t)
	c.namespace(t, "e")
	c.configMap(t, "e", "cm", "one")
	c.configMap(t, "e", "cm", "two")
	last := c.configMap(t, "e", "other", "x")
	ctx := c.ctx

	disco, err := discovery.NewDiscoveryClientForConfig(c.cfg)
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := EtcdKeysServed(disco); err != nil || !ok {
		t.Fatalf("EtcdKeysServed = %v, %v; want true", ok, err)
	}
	api, err := NewEtcdAPI(c.cfg)
	if err != nil {
		t.Fatal(err)
	}
	admin := c.etcd.AdminTLS
	direct, err := NewEtcdDirect(ctx, EtcdDirectConfig{Endpoints: c.etcd.Endpoints, CACert: admin.CAFile, Cert: admin.CertFile, Key: admin.KeyFile})
	if err != nil {
		t.Fatal(err)
	}
	defer direct.Close()

	for name, e := range map[string]source.Etcd{"api": api, "direct": direct} {
		t.Run(name, func(t *testing.T) {
			t.Run("Keys", func(t *testing.T) {
				for _, prefix := range []string{source.Root, "/registry/configmaps/e/", "/registry/configmaps/e/c", "/registry/zzz/"} {
					got, err := e.Keys(ctx, prefix, last)
					if err != nil {
						t.Fatal(err)
					}
					want, _ := c.etcdKeys(t, prefix, last)
					gotKeys := map[string]int64{}
					for _, kv := range got.Items {
						gotKeys[kv.Key] = kv.ModRevision
						if kv.CreateRevision == 0 || kv.CreateRevision > kv.ModRevision {
							t.Errorf("%q: CreateRevision %d, ModRevision %d", kv.Key, kv.CreateRevision, kv.ModRevision)
						}
					}
					if diff := cmp.Diff(want, gotKeys); diff != "" {
						t.Errorf("keys under %q at %d (-etcd +%s):\n%s", prefix, last, name, diff)
					}
					if got.Revision != last {
						t.Errorf("Revision = %d, want %d", got.Revision, last)
					}
				}
				now, err := e.Keys(ctx, "/registry/configmaps/e/", 0)
				if err != nil {
					t.Fatal(err)
				}
				if now.Revision < last || len(now.Items) != 2 {
					t.Errorf("keys now: %v at %d", keysOf(now.Items), now.Revision)
				}
			})
			t.Run("History", func(t *testing.T) {
				versions, end, err := e.History(ctx, "/registry/configmaps/e/cm", 0, 10)
				if err != nil {
					t.Fatal(err)
				}
				if len(versions) != 2 || versions[0].Version != 2 || versions[1].Version != 1 || end.CreatedAt != versions[1].ModRevision {
					t.Fatalf("history: %+v, end %+v", versions, end)
				}
				for i, want := range []string{"two", "one"} {
					var cm struct {
						Data map[string]string `json:"data"`
					}
					if err := json.Unmarshal(versions[i].Value, &cm); err != nil || cm.Data["v"] != want {
						t.Errorf("version %d: %s (%v), want v=%s", i, versions[i].Value, err, want)
					}
				}
				one, end, err := e.History(ctx, "/registry/configmaps/e/cm", 0, 1)
				if err != nil || len(one) != 1 || !end.Truncated {
					t.Errorf("history of length 1: %d versions, end %+v, %v", len(one), end, err)
				}
				_, _, err = e.History(ctx, "/registry/configmaps/e/nope", 0, 10)
				isErr(t, "history of a missing key", err, source.ErrNotFound)
				if errors.Is(err, ErrNotServed) {
					t.Errorf("a missing key is not a missing API: %v", err)
				}
			})
		})
	}
}
