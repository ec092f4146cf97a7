package node

import (
	"strings"
	"testing"
)

// TestExpandSubPathExpr expands subPathExpr as the kubelet does, refusing
// what it refuses.
func TestExpandSubPathExpr(t *testing.T) {
	env := []string{"POD_NAME=web-0", "UP=..", "ABS=/etc", "EMPTY="}
	for _, tc := range []struct{ expr, want, err string }{
		{"$(POD_NAME)", "web-0", ""},
		{"logs/$(POD_NAME)/x", "logs/web-0/x", ""},
		{"$(UP)", "", "must not contain '..'"},
		{"$(ABS)", "", "must not be an absolute path"},
		{"$(NOPE)/$(EMPTY)", "", "missing value for EMPTY, NOPE"},
	} {
		got, err := expandSubPathExpr(tc.expr, env)
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: %q, %v; want error %q", tc.expr, got, err, tc.err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%s = %q, %v; want %q", tc.expr, got, err, tc.want)
		}
	}
}
