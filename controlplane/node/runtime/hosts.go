package runtime

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// etcHostsFile is the name, in a pod's directory, of the /etc/hosts its
// containers see when the pod has a network namespace of its own.
const etcHostsFile = "etc-hosts"

// managedHosts is the /etc/hosts the kubelet writes for a pod on the pod
// network: localhost, the pod's own addresses under its hostname, and
// the pod's hostAliases. ips may be empty while the pod waits for its
// address.
func managedHosts(ips []string, hostname, hostDomain string, aliases []HostAlias) []byte {
	var b bytes.Buffer
	b.WriteString("# Kubernetes-managed hosts file.\n")
	b.WriteString("127.0.0.1\tlocalhost\n")
	b.WriteString("::1\tlocalhost ip6-localhost ip6-loopback\n")
	b.WriteString("fe00::0\tip6-localnet\n")
	b.WriteString("fe00::0\tip6-mcastprefix\n")
	b.WriteString("fe00::1\tip6-allnodes\n")
	b.WriteString("fe00::2\tip6-allrouters\n")
	for _, ip := range ips {
		if hostDomain != "" {
			fmt.Fprintf(&b, "%s\t%s.%s\t%s\n", ip, hostname, hostDomain, hostname)
		} else {
			fmt.Fprintf(&b, "%s\t%s\n", ip, hostname)
		}
	}
	if len(aliases) > 0 {
		b.WriteString("\n# Entries added by HostAliases.\n")
		for _, a := range aliases {
			fmt.Fprintf(&b, "%s\t%s\n", a.IP, strings.Join(a.Hostnames, "\t"))
		}
	}
	return b.Bytes()
}

// writeHosts writes the pod's hosts file in place (containers bind-mount
// the file, so it keeps its inode). With no address yet it writes only a
// missing file: a pod adopted after a restart keeps the one it has.
func writeHosts(dir string, pod PodSpec, ips []string) error {
	path := filepath.Join(dir, etcHostsFile)
	if len(ips) == 0 {
		if _, err := os.Stat(path); err == nil || !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	hostname := pod.Hostname
	if hostname == "" {
		hostname = pod.Name
	}
	if err := os.WriteFile(path, managedHosts(ips, hostname, pod.HostDomain, pod.HostAliases), 0o644); err != nil {
		return fmt.Errorf("failed to write the pod's hosts file: %w", err)
	}
	return nil
}
