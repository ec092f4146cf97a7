package main

import (
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// TestFlagUsagesNameNoType guards against back-quotes in a flag's usage:
// pflag takes a back-quoted word as the flag's type name, so
// "the data directory of `glassplane up`" showed in --help as
// "--data-dir glassplane up".
func TestFlagUsagesNameNoType(t *testing.T) {
	var walk func(cmd *cobra.Command)
	walk = func(cmd *cobra.Command) {
		check := func(f *pflag.Flag) {
			if strings.Contains(f.Usage, "`") {
				name, _ := pflag.UnquoteUsage(f)
				t.Errorf("%s --%s: usage %q shows in --help as the type %q", cmd.CommandPath(), f.Name, f.Usage, name)
			}
		}
		cmd.LocalFlags().VisitAll(check)
		cmd.PersistentFlags().VisitAll(check)
		for _, sub := range cmd.Commands() {
			walk(sub)
		}
	}
	walk(newRootCommand())
}

func TestDataDirFlagFollowsEnv(t *testing.T) {
	for _, tc := range []struct{ env, want string }{
		{"", defaultDataDir},
		{"/srv/gp", "/srv/gp"},
	} {
		t.Run("env="+tc.env, func(t *testing.T) {
			t.Setenv(dataDirEnv, tc.env)
			for _, path := range [][]string{{"up"}, {"down"}, {"kubeconfig"}, {"node"}, {"image", "import"}} {
				cmd, _, err := newRootCommand().Find(path)
				if err != nil {
					t.Fatal(err)
				}
				if got := cmd.Flags().Lookup("data-dir").DefValue; got != tc.want {
					t.Errorf("%s --data-dir defaults to %q, want %q", strings.Join(path, " "), got, tc.want)
				}
			}
		})
	}
}

// TestUpGCPercent: up raises the collector's target only when GOGC does
// not choose one.
func TestUpGCPercent(t *testing.T) {
	env := func(m map[string]string) func(string) (string, bool) {
		return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
	}
	if p, ok := upGCPercent(env(nil)); !ok || p != defaultUpGCPercent {
		t.Errorf("without GOGC: got %d, %v; want %d, true", p, ok, defaultUpGCPercent)
	}
	for _, v := range []string{"100", "off", ""} {
		if p, ok := upGCPercent(env(map[string]string{"GOGC": v})); ok {
			t.Errorf("GOGC=%q: up set the target to %d, want the user's", v, p)
		}
	}
}
