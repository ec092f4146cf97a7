package main

import (
	"fmt"
	"runtime/debug"

	"github.com/spf13/cobra"

	"github.com/glassplane/glassplane/controlplane/kubeversion"
)

// Version is Glassplane's version, set at build time with
// -ldflags "-X main.Version=...".
var Version = "v0.1.0-dev"

func newVersionCommand() *cobra.Command {
	return &cobra.Command{
		Use:   "version",
		Short: "Print the version",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			goVersion := "unknown"
			if bi, ok := debug.ReadBuildInfo(); ok {
				goVersion = bi.GoVersion
			}
			fmt.Fprintf(cmd.OutOrStdout(), "glassplane %s (Kubernetes %s, %s)\n", Version, kubeversion.GitVersion, goVersion)
			return nil
		},
	}
}
