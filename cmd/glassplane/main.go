// Command glassplane is a Kubernetes-compatible control plane you can see
// through: `glassplane up` runs etcd, the API server, the scheduler, the node
// agents and the dashboard in one process; the other commands run the parts
// separately or help around them.
package main

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := newRootCommand().ExecuteContext(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "Error:", err)
		os.Exit(1)
	}
}

func newRootCommand() *cobra.Command {
	var verbose bool
	root := &cobra.Command{
		Use:           "glassplane",
		Short:         "A Kubernetes-compatible control plane you can see through",
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRun: func(cmd *cobra.Command, args []string) {
			level := slog.LevelInfo
			if verbose {
				level = slog.LevelDebug
			}
			slog.SetDefault(slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level})))
		},
	}
	root.PersistentFlags().BoolVarP(&verbose, "verbose", "v", false, "log per-object detail (debug level)")
	root.AddCommand(
		newUpCommand(),
		newDashboardCommand(),
		newDownCommand(),
		newSchedulerCommand(),
		newControllerManagerCommand(),
		newNodeCommand(),
		newKubeconfigCommand(),
		newImageCommand(),
		newVersionCommand(),
		newDemoCommand(),
	)
	return root
}
