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

// PurgeManagedContainerd removes every pod the node agent of dataDir left
// in its managed containerd (see StartManagedContainerd): their tasks and
// containers, network namespaces, addresses and hostPorts on network (nil
// when the node had none) and tmpfs mounts, as RemovePod does. It starts
// the daemon for this and stops it after; the images and snapshots stay
// in <dataDir>/containerd and go with the directory. It returns how many
// pods it removed; a data directory whose node never ran a managed
// containerd has none.
func PurgeManagedContainerd(ctx context.Context, dataDir string, network *Network) (int, error) {
	if _, err := os.Stat(filepath.Join(dataDir, "containerd", "config.toml")); errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	dctx, stop := context.WithCancel(context.WithoutCancel(ctx))
	defer stop()
	m, err := StartManagedContainerd(dctx, dataDir)
	if err != nil {
		return 0, err
	}
	defer m.Stop()
	rt, err := NewContainerd(ctx, ContainerdConfig{Address: m.Address(), StateDir: filepath.Join(dataDir, "pods"), Network: network})
	if err != nil {
		return 0, err
	}
	defer rt.Close()
	uids, err := rt.ListPods(ctx)
	if err != nil {
		return 0, err
	}
	var errs []error
	for _, uid := range uids {
		if err := rt.RemovePod(ctx, uid); err != nil {
			errs = append(errs, err)
		}
	}
	return len(uids), errors.Join(errs...)
}

// RemoveDir unmounts whatever is mounted at or below dir (a pod's tmpfs
// left behind), so that nothing outside it is deleted through a mount,
// then removes dir and everything in it.
func RemoveDir(dir string) error {
	if err := unmountUnder(dir); err != nil {
		return err
	}
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("failed to remove %q: %w", dir, err)
	}
	return nil
}

// RemoveIfUnused deletes what the pod network made on the host once no
// pod is attached to its bridge: the bridge, the masquerade rule of its
// pod CIDR and host-local's empty allocation directory. The network is
// shared by every Glassplane node on the host that uses its name, so while
// any pod is attached it removes nothing. It reports whether it removed
// the network.
func (n *Network) RemoveIfUnused(ctx context.Context) (bool, error) {
	ports, err := os.ReadDir(filepath.Join("/sys/class/net", n.cfg.Bridge, "brif"))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return false, fmt.Errorf("failed to list the ports of bridge %q: %w", n.cfg.Bridge, err)
	}
	if len(ports) > 0 {
		return false, nil
	}
	var errs []error
	if err == nil {
		if out, err := exec.CommandContext(ctx, "ip", "link", "delete", n.cfg.Bridge).CombinedOutput(); err != nil {
			errs = append(errs, fmt.Errorf("failed to delete bridge %q: %w: %s", n.cfg.Bridge, err, strings.TrimSpace(string(out))))
		}
	}
	if err := n.removeMasquerade(ctx); err != nil {
		errs = append(errs, err)
	}
	ipam := filepath.Join(n.cfg.CacheDir, "networks", n.cfg.Name)
	if entries, err := os.ReadDir(ipam); err == nil && onlyIPAMBookkeeping(entries) {
		if err := os.RemoveAll(ipam); err != nil {
			errs = append(errs, fmt.Errorf("failed to remove %q: %w", ipam, err))
		}
	}
	return len(errs) == 0, errors.Join(errs...)
}

// removeMasquerade deletes the masquerade rules ensureMasquerade adds for
// this network, whatever pod CIDR they were added with.
func (n *Network) removeMasquerade(ctx context.Context) error {
	out, err := exec.CommandContext(ctx, "iptables", "-w", "-t", "nat", "-S", "POSTROUTING").Output()
	if err != nil {
		return fmt.Errorf("failed to list the nat table's POSTROUTING rules: %w", err)
	}
	comment := `--comment "glassplane pod network ` + n.cfg.Name + `"`
	var errs []error
	for _, line := range strings.Split(string(out), "\n") {
		rule, ok := strings.CutPrefix(line, "-A ")
		if !ok || !strings.Contains(rule, comment) {
			continue
		}
		args := append([]string{"-w", "-t", "nat", "-D"}, splitRule(rule)...)
		if out, err := exec.CommandContext(ctx, "iptables", args...).CombinedOutput(); err != nil {
			errs = append(errs, fmt.Errorf("failed to delete the masquerade rule %q: %w: %s", rule, err, strings.TrimSpace(string(out))))
		}
	}
	return errors.Join(errs...)
}

// splitRule splits a rule as `iptables -S` prints it into arguments; a
// double-quoted word (a comment) is one argument.
func splitRule(rule string) []string {
	var args []string
	var cur strings.Builder
	quoted, inWord := false, false
	for _, r := range rule {
		switch {
		case r == '"':
			quoted, inWord = !quoted, true
		case r == ' ' && !quoted:
			if inWord {
				args = append(args, cur.String())
				cur.Reset()
			}
			inWord = false
		default:
			cur.WriteRune(r)
			inWord = true
		}
	}
	if inWord {
		args = append(args, cur.String())
	}
	return args
}

// onlyIPAMBookkeeping says whether a host-local allocation directory holds
// no address reservation: only its lock and last_reserved_ip files.
func onlyIPAMBookkeeping(entries []os.DirEntry) bool {
	for _, e := range entries {
		if name := e.Name(); name != "lock" && !strings.HasPrefix(name, "last_reserved_ip") {
			return false
		}
	}
	return true
}
