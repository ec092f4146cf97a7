package storage_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/glassplane/glassplane/controlplane/storage"
)

// TestNewest checks that Newest gives the most recently written keys under
// a prefix, newest first, as of a revision, leaving out deleted keys and
// other prefixes, and says when the history is too short to know.
func TestNewest(t *testing.T) {
	s := newStore(t, storage.Config{History: 16})
	ctx := context.Background()
	key := func(i int) string { return storage.Key("events", "default", fmt.Sprintf("e%d", i)) }
	for i := range 6 {
		if _, err := s.Create(ctx, key(i), []byte(fmt.Sprintf(`{"v":%d}`, i))); err != nil {
			t.Fatal(err)
		}
		if _, err := s.Create(ctx, storage.Key("pods", "default", fmt.Sprintf("p%d", i)), []byte(`{}`)); err != nil {
			t.Fatal(err)
		}
	}
	// e1 is written again (now the newest), e4 deleted.
	kv, err := s.Get(ctx, key(1))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Update(ctx, key(1), []byte(`{"v":"1b"}`), kv.ModRevision); err != nil {
		t.Fatal(err)
	}
	del, err := s.Get(ctx, key(4))
	if err != nil {
		t.Fatal(err)
	}
	_, rev, err := s.Delete(ctx, key(4), 0)
	if err != nil {
		t.Fatal(err)
	}
	items, ok, err := s.Newest(ctx, storage.Prefix("events", ""), 3, rev)
	if err != nil || !ok {
		t.Fatalf("Newest: %v, ok %v", err, ok)
	}
	var got []string
	for _, it := range items {
		got = append(got, it.Key+"="+string(it.Value))
	}
	want := []string{key(1) + `={"v":"1b"}`, key(5) + `={"v":5}`, key(3) + `={"v":3}`}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("Newest = %v, want %v", got, want)
	}
	// As of before the delete, e4 is there.
	items, _, err = s.Newest(ctx, storage.Prefix("events", ""), 1, del.ModRevision)
	if err != nil || len(items) != 1 || items[0].Key != key(4) {
		t.Errorf("Newest as of e4's write = %v, %v; want e4", items, err)
	}
	// More keys than the history holds changes of: not known.
	if _, ok, err := s.Newest(ctx, storage.Prefix("events", ""), 50, rev); err != nil || ok {
		t.Errorf("Newest of 50: ok %v, %v; want not ok", ok, err)
	}
}
