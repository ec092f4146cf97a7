package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/sys/unix"

	"github.com/glassplane/glassplane/controlplane/node/runtime"
	"github.com/glassplane/glassplane/controlplane/proxy"
)

// defaultDownTimeout bounds how long `glassplane down` waits for up to
// stop its parts (the node agents, the managed containerd, etcd).
const defaultDownTimeout = time.Minute

// newDownCommand stops the `glassplane up` of a data directory and, with
// --purge, removes what it left on the host.
func newDownCommand() *cobra.Command {
	var (
		dataDir string
		purge   bool
		timeout time.Duration
	)
	cmd := &cobra.Command{
		Use:   "down",
		Short: "Stop the glassplane up of a data directory; with --purge, also remove its pods, their network and the data directory",
		Long: "Stops the \"glassplane up\" running with --data-dir (SIGTERM, then waits for it to exit) and says so when none runs; " +
			"its pods' containers keep running, as after Ctrl-C, and the next up adopts them.\n" +
			"With --purge it then removes the pods' containers and tasks from the managed containerd (its images and snapshots go with the data directory), " +
			"their network namespaces and addresses, the pod network's bridge gp0 and masquerade rule once no pod of any Glassplane on this host uses them, " +
			"the service proxy's nftables table (ip glassplane-proxy, shared by the Glassplanes on this host), and the data directory. Containers in a containerd named by \"glassplane up --containerd-address\" are left alone.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, args []string) error {
			dir, err := existingDataDir(dataDir)
			if err != nil {
				return err
			}
			if purge {
				// Refuse any directory "glassplane up" did not make.
				if _, err := os.Stat(filepath.Join(dir, "pki", "ca.crt")); err != nil {
					return fmt.Errorf("%s does not look like a Glassplane data directory (no pki/ca.crt), so --purge leaves it alone", dir)
				}
			}
			out := cmd.OutOrStdout()
			if err := stopUp(cmd.Context(), out, dir, timeout); err != nil {
				return err
			}
			if purge {
				return purgeDataDir(cmd.Context(), out, dir)
			}
			return nil
		},
	}
	addDataDirFlag(cmd.Flags(), &dataDir, "the data directory of the \"glassplane up\" to stop")
	cmd.Flags().BoolVar(&purge, "purge", false, "also remove the pods' containers, their network and the data directory")
	cmd.Flags().DurationVar(&timeout, "timeout", defaultDownTimeout, "how long to wait for glassplane up to exit")
	return cmd
}

// stopUp sends SIGTERM to the `glassplane up` of dataDir and waits up to
// timeout for it to exit. None running is not an error, as for `systemctl
// stop`: it says so.
func stopUp(ctx context.Context, out io.Writer, dataDir string, timeout time.Duration) error {
	pid, pidFile, err := runningUp(dataDir)
	if err != nil {
		return err
	}
	if pid == 0 {
		fmt.Fprintf(out, "no glassplane up runs with data directory %s\n", dataDir)
		return nil
	}
	defer pidFile.Close()
	fmt.Fprintf(out, "stopping glassplane up (pid %d, data directory %s)...\n", pid, dataDir)
	if err := unix.Kill(pid, unix.SIGTERM); err != nil && !errors.Is(err, unix.ESRCH) {
		return fmt.Errorf("failed to stop glassplane up (pid %d): %w", pid, err)
	}
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	// up holds the pid file's lock until it exits.
	for unix.Flock(int(pidFile.Fd()), unix.LOCK_EX|unix.LOCK_NB) != nil {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-deadline.C:
			return fmt.Errorf("glassplane up (pid %d) did not exit within %s; it may still be stopping (kill -9 %d ends it at once)", pid, timeout, pid)
		case <-tick.C:
		}
	}
	fmt.Fprintf(out, "glassplane up (pid %d) stopped\n", pid)
	return nil
}

// purgeDataDir removes the pods the node agent of dataDir left in its
// managed containerd, the pod network when no other pod uses it, and
// dataDir. A failure leaves the data directory, so a second run can
// finish the job.
func purgeDataDir(ctx context.Context, out io.Writer, dataDir string) error {
	if _, err := os.Stat(filepath.Join(dataDir, "containerd")); err == nil {
		network, err := runtime.NewNetwork(runtime.NetworkConfig{})
		if err != nil {
			slog.Debug("no pod network to tear down", "err", err)
			network = nil
		}
		n, err := runtime.PurgeManagedContainerd(ctx, dataDir, network)
		if err != nil {
			return fmt.Errorf("failed to remove the pods of %s (the data directory stays; run again once fixed): %w", dataDir, err)
		}
		fmt.Fprintf(out, "removed %d pods (containers, tasks, network namespaces) from the managed containerd\n", n)
		if network != nil {
			removed, err := network.RemoveIfUnused(ctx)
			switch {
			case err != nil:
				return fmt.Errorf("failed to remove the pod network (the data directory stays): %w", err)
			case removed:
				fmt.Fprintf(out, "removed the pod network (bridge %s and its masquerade rule)\n", runtime.DefaultBridge)
			default:
				fmt.Fprintf(out, "left the pod network (bridge %s): pods of another Glassplane on this host use it\n", runtime.DefaultBridge)
			}
		}
	}
	if err := purgeServiceProxy(ctx, out); err != nil {
		return err
	}
	if err := runtime.RemoveDir(dataDir); err != nil {
		return err
	}
	fmt.Fprintf(out, "removed data directory %s\n", dataDir)
	return nil
}

// purgeServiceProxy removes the service proxy's nftables table, which
// every Glassplane node on this host shares (the next proxy to sync
// writes it again). Without nft there is no table to remove.
func purgeServiceProxy(ctx context.Context, out io.Writer) error {
	if _, err := exec.LookPath("nft"); err != nil {
		return nil
	}
	removed, err := proxy.DeleteTable(ctx, proxy.DefaultTable)
	if err != nil {
		return fmt.Errorf("failed to remove the service proxy's rules (the data directory stays): %w", err)
	}
	if removed {
		fmt.Fprintf(out, "removed the service proxy's nftables table ip %s\n", proxy.DefaultTable)
	}
	return nil
}
