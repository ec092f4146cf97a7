package main

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/glassplane/glassplane/controlplane/pki"
)

func newKubeconfigCommand() *cobra.Command {
	var (
		dataDir string
		user    string
		groups  []string
		server  string
	)
	cmd := &cobra.Command{
		Use:   "kubeconfig",
		Short: "Print the admin kubeconfig, or issue one for another user",
		Long: "Without --user, prints the admin kubeconfig that `glassplane up` wrote to <data-dir>/kubeconfig.\n" +
			"With --user, issues a client certificate from the cluster CA for that user and groups and prints a kubeconfig for it.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			dataDir, err := existingDataDir(dataDir)
			if err != nil {
				return err
			}
			adminPath := filepath.Join(dataDir, "kubeconfig")
			if user == "" {
				b, err := os.ReadFile(adminPath)
				if err != nil {
					return fmt.Errorf("failed to read %q (has \"glassplane up --data-dir %s\" run?): %w", adminPath, dataDir, err)
				}
				_, err = cmd.OutOrStdout().Write(b)
				return err
			}
			if server == "" {
				admin, err := clientcmd.LoadFromFile(adminPath)
				if err != nil {
					return fmt.Errorf("failed to read the API server address from %q (or pass --server): %w", adminPath, err)
				}
				if c := admin.Clusters[pki.ClusterName]; c != nil {
					server = c.Server
				}
			}
			ca, err := pki.LoadOrCreateCA(dataDir)
			if err != nil {
				return err
			}
			b, err := ca.Kubeconfig(server, user, groups...)
			if err != nil {
				return err
			}
			_, err = cmd.OutOrStdout().Write(b)
			return err
		},
	}
	addDataDirFlag(cmd.Flags(), &dataDir, "the data directory of \"glassplane up\"")
	cmd.Flags().StringVar(&user, "user", "", "issue a client certificate for this user name")
	cmd.Flags().StringArrayVar(&groups, "group", nil, "a group of the user (repeatable)")
	cmd.Flags().StringVar(&server, "server", "", "the API server URL (default: the one in <data-dir>/kubeconfig)")
	return cmd
}
