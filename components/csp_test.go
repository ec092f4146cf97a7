package components

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"golang.org/x/net/html"
)

// TestTemplatesAreCSPSafe checks no page relies on what the dashboard's
// Content-Security-Policy (style-src 'self'; script-src 'self') refuses:
// inline style attributes, inline scripts and inline event handlers, in
// the templates and in the elements the scripts build.
func TestTemplatesAreCSPSafe(t *testing.T) {
	inline := []struct {
		what string
		re   *regexp.Regexp
	}{
		{"an inline style attribute", regexp.MustCompile(`\sstyle\s*=`)},
		{"an inline script", regexp.MustCompile(`<script\b[^>]*>`)},
		{"an inline event handler", regexp.MustCompile(`\son[a-z]+\s*=`)},
	}
	files, err := filepath.Glob("*.templ")
	if err != nil || len(files) == 0 {
		t.Fatalf("no templates: %v", err)
	}
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range inline {
			for _, m := range c.re.FindAllString(string(src), -1) {
				if c.what == "an inline script" && strings.Contains(m, "src=") {
					continue
				}
				t.Errorf("%s has %s: %s", f, c.what, m)
			}
		}
	}
	scripts, err := filepath.Glob("../static/js/*.js")
	if err != nil || len(scripts) == 0 {
		t.Fatalf("no scripts: %v", err)
	}
	styleAttr := regexp.MustCompile(`setAttribute\(\s*["']style["']|[{,]\s*["']?style["']?\s*:`)
	for _, f := range scripts {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if m := styleAttr.FindString(string(src)); m != "" {
			t.Errorf("%s sets a style attribute: %s", filepath.Base(f), m)
		}
	}
}

// TestRequestStagesStaggerByClass checks the pipeline's stages and pipes
// carry their place as a stage-delay-N class, which static/css defines.
func TestRequestStagesStaggerByClass(t *testing.T) {
	row := RequestRow{Seq: 1, Verb: "create", Stages: []Stage{
		{Name: "authentication", State: "ok"}, {Name: "authorization", State: "ok"},
		{Name: "admission", State: "ok"}, {Name: "etcd", State: "ok"},
	}}
	doc, out := render(t, RequestRowView(row))
	if strings.Contains(out, "style=") {
		t.Errorf("the row has an inline style: %s", out)
	}
	css, err := os.ReadFile("../static/css/app.css")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, n := range findAll(doc, func(n *html.Node) bool {
		c, _ := attr(n, "class")
		return strings.Contains(c, "pstage ") || strings.HasPrefix(c, "pipe ")
	}) {
		c, _ := attr(n, "class")
		delay := regexp.MustCompile(`stage-delay-\d+`).FindString(c)
		got = append(got, delay)
		if delay != "stage-delay-0" && !strings.Contains(string(css), "."+delay+" {") {
			t.Errorf("app.css does not define .%s", delay)
		}
	}
	want := "stage-delay-0 stage-delay-1 stage-delay-1 stage-delay-2 stage-delay-2 stage-delay-3 stage-delay-3"
	if strings.Join(got, " ") != want {
		t.Errorf("delays %q, want %q", strings.Join(got, " "), want)
	}
}
