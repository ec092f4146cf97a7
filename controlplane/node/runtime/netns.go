package runtime

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// netnsDir is where `ip netns` keeps named network namespaces.
const netnsDir = "/var/run/netns"

// NetnsName is the name of a pod's network namespace.
func NetnsName(podUID string) string { return "glassplane-" + podUID }

// NetnsPath is the bind-mounted file of a pod's network namespace.
func NetnsPath(podUID string) string { return filepath.Join(netnsDir, NetnsName(podUID)) }

// ensureNetns creates the pod's network namespace with loopback up.
func ensureNetns(ctx context.Context, podUID string) (retErr error) {
	if _, err := os.Stat(NetnsPath(podUID)); err == nil {
		return nil
	}
	name := NetnsName(podUID)
	if err := runIP(ctx, "netns", "add", name); err != nil {
		return fmt.Errorf("failed to create network namespace %q: %w", name, err)
	}
	defer func() {
		if retErr != nil {
			retErr = errors.Join(retErr, removeNetns(context.WithoutCancel(ctx), podUID))
		}
	}()
	if err := runIP(ctx, "-n", name, "link", "set", "lo", "up"); err != nil {
		return fmt.Errorf("failed to set loopback up in network namespace %q: %w", name, err)
	}
	return nil
}

// removeNetns deletes the pod's network namespace if it exists.
func removeNetns(ctx context.Context, podUID string) error {
	if _, err := os.Stat(NetnsPath(podUID)); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	name := NetnsName(podUID)
	if err := runIP(ctx, "netns", "delete", name); err != nil {
		return fmt.Errorf("failed to delete network namespace %q: %w", name, err)
	}
	return nil
}

func runIP(ctx context.Context, args ...string) error {
	out, err := exec.CommandContext(ctx, "ip", args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("ip %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}
