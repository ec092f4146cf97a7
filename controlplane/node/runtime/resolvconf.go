package runtime

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/containerd/containerd/v2/pkg/oci"
	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// resolvConfFile is the name, in a pod's directory, of the /etc/resolv.conf
// its containers see.
const resolvConfFile = "resolv.conf"

// resolvConf is the file a pod's DNS configuration makes, as containerd's
// CRI writes it for the kubelet: the search line, a nameserver line each,
// the options line.
func resolvConf(c DNSConfig) []byte {
	var b bytes.Buffer
	if len(c.Searches) > 0 {
		fmt.Fprintf(&b, "search %s\n", strings.Join(c.Searches, " "))
	}
	for _, ns := range c.Nameservers {
		fmt.Fprintf(&b, "nameserver %s\n", ns)
	}
	if len(c.Options) > 0 {
		fmt.Fprintf(&b, "options %s\n", strings.Join(c.Options, " "))
	}
	return b.Bytes()
}

// writeResolvConf writes the pod's resolv.conf in place (containers
// bind-mount the file, so it keeps its inode) when the pod comes with a
// DNS configuration.
func writeResolvConf(dir string, pod PodSpec) error {
	if pod.DNS == nil {
		return nil
	}
	if err := os.WriteFile(filepath.Join(dir, resolvConfFile), resolvConf(*pod.DNS), 0o644); err != nil {
		return fmt.Errorf("failed to write the pod's resolv.conf: %w", err)
	}
	return nil
}

// withResolvConf mounts the pod's resolv.conf on the container's
// /etc/resolv.conf, or the host's when the pod has none, unless the
// container mounts a file of its own there.
func withResolvConf(podDir string, spec ContainerSpec) ([]oci.SpecOpts, error) {
	if path.Clean("/"+spec.TerminationMessagePath) == "/etc/resolv.conf" ||
		slices.ContainsFunc(spec.Mounts, func(m Mount) bool { return path.Clean(m.ContainerPath) == "/etc/resolv.conf" }) {
		return nil, nil
	}
	file := filepath.Join(podDir, resolvConfFile)
	if _, err := os.Stat(file); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return []oci.SpecOpts{oci.WithHostResolvconf}, nil
		}
		return nil, fmt.Errorf("failed to find the pod's resolv.conf: %w", err)
	}
	return []oci.SpecOpts{oci.WithMounts([]specs.Mount{{Destination: "/etc/resolv.conf", Type: "bind",
		Source: file, Options: []string{"rbind", "rprivate", "rw"}}})}, nil
}
