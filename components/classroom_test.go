package components

import (
	"strings"
	"testing"

	"golang.org/x/net/html"
)

func TestTempoPanel(t *testing.T) {
	tests := []struct {
		name        string
		tempo       Tempo
		wantEnabled bool
		wantNext    bool
	}{
		{"step, allowed", Tempo{Mode: "step", Modes: []string{"realtime", "slow", "step"}, CanChange: true}, true, true},
		{"realtime, allowed", Tempo{Mode: "realtime", Modes: []string{"realtime", "slow", "step"}, CanChange: true}, true, false},
		{"step, not allowed", Tempo{Mode: "step", Modes: []string{"realtime", "slow", "step"}}, false, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.tempo.Waiting = []string{"scheduler: schedule pod default/" + hostile}
			tc.tempo.LastStep = "node/" + hostile + ": start container"
			tc.tempo.ActingAs = hostile
			doc, raw := render(t, TempoPanel(tc.tempo))
			if strings.Contains(raw, "<img") {
				t.Fatal("a hostile name rendered as markup")
			}
			if _, disabled := attr(one(t, doc, "tempo-set"), "disabled"); disabled == tc.wantEnabled {
				t.Errorf("set disabled = %v", disabled)
			}
			if _, disabled := attr(one(t, doc, "tempo-next"), "disabled"); disabled == tc.wantNext {
				t.Errorf("next disabled = %v", disabled)
			}
			if _, checked := attr(one(t, doc, "tempo-mode-"+tc.tempo.Mode), "checked"); !checked {
				t.Errorf("mode %s not checked", tc.tempo.Mode)
			}
			if got := text(one(t, doc, "tempo-waiting-item")); got != "scheduler: schedule pod default/"+hostile {
				t.Errorf("waiting item %q", got)
			}
		})
	}
}

func TestApplyPageDryRunAndFieldErrors(t *testing.T) {
	a := Apply{
		Manifest: "kind: Pod\nmetadata:\n  name: " + hostile + "\n",
		DryRun:   true,
		Results: []ApplyResult{
			{Ref: "pod/a", Action: "created (server dry run)", Added: []FieldChange{{Path: "spec.restartPolicy", Value: `"Always"`, Added: true}, {Path: "metadata.labels.x", Value: `"y"`, Was: hostile}}},
			{Ref: "pod/" + hostile, Error: "invalid", Fields: []FieldError{{Path: "metadata.name", Message: hostile, Line: 3}}},
		},
		Lines: []ManifestLine{{N: 1, Text: "kind: Pod"}, {N: 2, Text: "metadata:"}, {N: 3, Text: "  name: " + hostile, Error: true}},
	}
	doc, raw := render(t, ApplyPage(layout(PageApply), a))
	if strings.Contains(raw, "<img") {
		t.Fatal("a hostile value rendered as markup")
	}
	if got := len(byTestID(doc, "added-field")); got != 2 {
		t.Errorf("added fields = %d", got)
	}
	f := one(t, doc, "field-error")
	if p, _ := attr(f, "data-path"); p != "metadata.name" {
		t.Errorf("field error path %q", p)
	}
	if l, _ := attr(f, "data-line"); l != "3" {
		t.Errorf("field error line %q", l)
	}
	marked := findAll(doc, func(n *html.Node) bool {
		v, _ := attr(n, "data-error")
		return n.Type == html.ElementNode && v == "true"
	})
	if len(marked) != 1 || !strings.Contains(text(marked[0]), hostile) {
		t.Errorf("marked lines: %d", len(marked))
	}
}

func TestDemosPage(t *testing.T) {
	d := Demos{Lang: "en", ActingAs: hostile, CanRun: true,
		Demos: []DemoInfo{{Name: "pod-lifecycle", Title: "The pod", Steps: 4}},
		Runs:  []DemoRun{{ID: "r1", Name: "pod-lifecycle", By: hostile, Lines: []DemoLine{{Step: 1, Total: 4, Narration: hostile, Result: "pod/" + hostile + " created"}}}},
	}
	doc, raw := render(t, DemosPage(layout(PageDemos), d))
	if strings.Contains(raw, "<img") {
		t.Fatal("a hostile value rendered as markup")
	}
	one(t, doc, "demo-run-pod-lifecycle")
	if got := text(one(t, doc, "demo-step")); !strings.Contains(got, "pod/"+hostile+" created") {
		t.Errorf("step text %q", got)
	}
}
