package main

import (
	"fmt"
	"io"
	"os"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/glassplane/glassplane/web/demo"
)

// newDemoCommand plays the classroom demos against the cluster of a
// kubeconfig, narrating each step.
func newDemoCommand() *cobra.Command {
	var lang string
	cmd := &cobra.Command{Use: "demo", Short: "List and run the classroom demos (guided scenarios with narration)"}
	cmd.PersistentFlags().StringVar(&lang, "lang", "en", "narration language: en or ko")

	list := &cobra.Command{
		Use:   "list",
		Short: "List the demos",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkLang(lang); err != nil {
				return err
			}
			w := tabwriter.NewWriter(cmd.OutOrStdout(), 0, 4, 2, ' ', 0)
			fmt.Fprintln(w, "NAME\tSTEPS\tWHAT IT SHOWS")
			for _, d := range demo.All() {
				fmt.Fprintf(w, "%s\t%d\t%s\n", d.Name, len(d.Steps), d.Title.In(lang))
			}
			return w.Flush()
		},
	}

	var kubeconfig, namespace string
	run := &cobra.Command{
		Use:   "run NAME",
		Short: "Run one demo against the cluster in --kubeconfig, narrating each step",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := checkLang(lang); err != nil {
				return err
			}
			d, ok := demo.Find(args[0])
			if !ok {
				return fmt.Errorf("no demo %q; `glassplane demo list` shows them", args[0])
			}
			cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
			if err != nil {
				return fmt.Errorf("failed to load kubeconfig %q: %w", kubeconfig, err)
			}
			client, err := kubernetes.NewForConfig(cfg)
			if err != nil {
				return fmt.Errorf("failed to create a client: %w", err)
			}
			out := cmd.OutOrStdout()
			fmt.Fprintf(out, "%s: %s\n%s\n\n", d.Name, d.Title.In(lang), demo.Where(d, namespace).In(lang))
			env := &demo.Env{Client: client, Config: cfg, Namespace: namespace}
			return demo.Run(cmd.Context(), d, env, lang, func(l demo.Line) { printLine(out, l) })
		},
	}
	run.Flags().StringVar(&kubeconfig, "kubeconfig", os.Getenv("KUBECONFIG"), "kubeconfig of the cluster (and the identity) to run the demo with")
	run.Flags().StringVarP(&namespace, "namespace", "n", "", "an existing namespace for the demo's objects, where it deletes only what it created (default: a namespace of its own, "+demo.NamespacePrefix+"NAME, created for the run and removed after it)")
	cmd.AddCommand(list, run)
	return cmd
}

func checkLang(lang string) error {
	if lang != "en" && lang != "ko" {
		return fmt.Errorf("--lang must be en or ko, got %q", lang)
	}
	return nil
}

// printLine prints a step's narration when it starts and its outcome when
// it ends.
func printLine(out io.Writer, l demo.Line) {
	switch {
	case l.Err != "":
		fmt.Fprintf(out, "      ✗ %s\n\n", l.Err)
	case l.Result != "":
		fmt.Fprintf(out, "      → %s\n\n", l.Result)
	default:
		fmt.Fprintf(out, "[%d/%d] %s\n", l.Step, l.Total, l.Narration)
	}
}
