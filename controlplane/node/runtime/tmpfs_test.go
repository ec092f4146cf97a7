package runtime

import "testing"

func TestUnescapeMountPath(t *testing.T) {
	for in, want := range map[string]string{
		"/var/lib/pods":          "/var/lib/pods",
		`/mnt/with\040space`:     "/mnt/with space",
		`/a\011tab\134backslash`: "/a\ttab\\backslash",
		`/trailing\04`:           `/trailing\04`,
	} {
		if got := unescapeMountPath(in); got != want {
			t.Errorf("unescapeMountPath(%q) = %q, want %q", in, got, want)
		}
	}
}
