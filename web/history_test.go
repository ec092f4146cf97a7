package web

import (
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestLineDiff(t *testing.T) {
	tests := []struct {
		name, a, b string
		want       string
	}{
		{"same", "a\nb\n", "a\nb\n", " a| b"},
		{"added line", "a\nc", "a\nb\nc", " a|+b| c"},
		{"removed line", "a\nb\nc", "a\nc", " a|-b| c"},
		{"changed line", "a\nb\nc", "a\nB\nc", " a|-b|+B| c"},
		{"from nothing", "", "a", "+a"},
		{"to nothing", "a", "", "-a"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, l := range lineDiff(tt.a, tt.b) {
				got = append(got, string(l.Op)+l.Text)
			}
			if s := strings.Join(got, "|"); s != tt.want {
				t.Errorf("lineDiff = %q, want %q", s, tt.want)
			}
		})
	}
}

func TestEtcdHistory(t *testing.T) {
	e := newEnv(t)
	key := "/registry/pods/default/web"
	r1 := e.put(t, key, pod("default", "web", "", corev1.PodPending))
	r2 := e.put(t, key, pod("default", "web", "node1", corev1.PodPending))
	r3 := e.put(t, key, pod("default", "web", "node1", corev1.PodRunning))
	e.put(t, "/registry/pods/default/later", pod("default", "later", "", corev1.PodPending))
	secret := "/registry/secrets/default/token"
	e.put(t, secret, map[string]any{"apiVersion": "v1", "kind": "Secret", "metadata": map[string]any{"name": "token", "namespace": "default"}, "data": map[string]any{"password": "aHVudGVyMg=="}})
	e.put(t, secret, map[string]any{"apiVersion": "v1", "kind": "Secret", "metadata": map[string]any{"name": "token", "namespace": "default"}, "data": map[string]any{"password": "c2VjcmV0Mg=="}})

	revs := func(n []string) string { return strings.Join(n, ",") }
	t.Run("history lists every revision newest first down to creation", func(t *testing.T) {
		doc, _ := e.get(t, "/etcd?key="+key)
		var got []string
		for _, v := range byTestID(doc, "etcd-version-item") {
			got = append(got, attr(v, "data-revision"))
		}
		want := []string{itoa(r3), itoa(r2), itoa(r1)}
		if revs(got) != revs(want) {
			t.Errorf("history = %v, want %v", got, want)
		}
		if h := text(byTestID(doc, "etcd-history")[0]); !strings.Contains(h, "created at revision "+itoa(r1)) {
			t.Errorf("history note = %q", h)
		}
		diff := byTestID(doc, "etcd-diff")
		if len(diff) != 1 || attr(diff[0], "data-from") != itoa(r2) || attr(diff[0], "data-to") != itoa(r3) {
			t.Fatalf("default diff is not previous → newest")
		}
		if d := text(diff[0]); !strings.Contains(d, `- "phase": "Pending" + "phase": "Running"`) {
			t.Errorf("diff = %q", d)
		}
	})
	t.Run("an earlier revision and any two compared", func(t *testing.T) {
		doc, _ := e.get(t, "/etcd?key="+key+"&rev="+itoa(r1)+"&from="+itoa(r1)+"&to="+itoa(r3))
		if got := text(byTestID(doc, "etcd-json")[0]); strings.Contains(got, "node1") {
			t.Errorf("value at rev %d = %q, want the unscheduled pod", r1, got)
		}
		if len(byTestID(doc, "etcd-past")) != 1 {
			t.Error("the past value is not marked as past")
		}
		d := text(byTestID(doc, "etcd-diff")[0])
		if !strings.Contains(d, `+ "nodeName": "node1"`) {
			t.Errorf("diff %d → %d = %q", r1, r3, d)
		}
	})
	t.Run("the cluster at an earlier revision", func(t *testing.T) {
		doc, _ := e.get(t, "/etcd?at="+itoa(r2))
		var keys []string
		for _, k := range byTestID(doc, "etcd-key") {
			keys = append(keys, attr(k, "data-key"))
		}
		if !strings.Contains(revs(keys), key) || strings.Contains(revs(keys), "later") {
			t.Errorf("keys at %d = %v", r2, keys)
		}
		if len(byTestID(doc, "at-banner")) != 1 {
			t.Error("no banner saying which revision is shown")
		}
	})
	t.Run("a secret's values stay masked in its history", func(t *testing.T) {
		_, raw := e.get(t, "/etcd?key="+secret)
		if strings.Contains(raw, "aHVudGVyMg==") || strings.Contains(raw, "c2VjcmV0Mg==") {
			t.Error("secret data is visible")
		}
	})
	t.Run("history stops at compaction", func(t *testing.T) {
		if err := e.store.Compact(e.ctx, r2); err != nil {
			t.Fatal(err)
		}
		doc, _ := e.get(t, "/etcd?key="+key)
		if n := len(byTestID(doc, "etcd-version-item")); n != 2 {
			t.Errorf("versions after compaction = %d, want 2", n)
		}
		if h := text(byTestID(doc, "etcd-history")[0]); !strings.Contains(h, "compacted") {
			t.Errorf("history note = %q", h)
		}
		doc, _ = e.get(t, "/etcd?at="+strconv.FormatInt(r1, 10))
		if len(byTestID(doc, "at-error")) != 1 {
			t.Error("a compacted revision is not explained")
		}
	})
}

func TestPreciseEventTime(t *testing.T) {
	second := time.Date(2026, 3, 1, 10, 0, 5, 0, time.UTC)
	exact := second.Add(734 * time.Millisecond)
	named := func(name string, count int32) *corev1.Event {
		return &corev1.Event{
			ObjectMeta: metav1.ObjectMeta{Name: name}, Count: count,
			FirstTimestamp: metav1.NewTime(second), LastTimestamp: metav1.NewTime(second),
		}
	}
	hexNanos := strconv.FormatInt(exact.UnixNano(), 16)
	tests := []struct {
		name     string
		ev       *corev1.Event
		recorded map[string]time.Time
		want     time.Time
	}{
		{"recorder's name", named("mypod."+hexNanos, 1), nil, exact},
		{"name far from the timestamp", named("mypod."+strconv.FormatInt(exact.Add(time.Hour).UnixNano(), 16), 1), nil, second},
		{"write time just after the second", named("mypod.x", 1), map[string]time.Time{"k": second.Add(1200 * time.Millisecond)}, second.Add(1200 * time.Millisecond)},
		{"write time before the event", named("mypod.x", 1), map[string]time.Time{"k": second.Add(-time.Second)}, second},
		{"repeated event uses its latest write", named("mypod."+hexNanos, 3), map[string]time.Time{"k": second.Add(100 * time.Millisecond)}, second.Add(100 * time.Millisecond)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := preciseEventTime(tt.ev, "k", tt.recorded); !got.Equal(tt.want) {
				t.Errorf("preciseEventTime = %s, want %s", got, tt.want)
			}
		})
	}
}
