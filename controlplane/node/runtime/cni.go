package runtime

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"

	"github.com/containernetworking/cni/libcni"
	cnitypes "github.com/containernetworking/cni/pkg/types"
	types100 "github.com/containernetworking/cni/pkg/types/100"
)

// Defaults for NetworkConfig.
const (
	DefaultNetworkName = "glassplane"
	DefaultBridge      = "gp0"
	DefaultPodCIDR     = "10.88.0.0/24"
	// DefaultCNICacheDir is libcni's cache (results of ADD, needed by DEL).
	DefaultCNICacheDir = "/var/lib/cni"
	// podInterface is the pod's network interface, as kubelet names it.
	podInterface = "eth0"
	// cniVersion is the highest version Debian's plugins (1.1.x) speak.
	cniVersion = "1.0.0"
)

// DefaultCNIPluginDirs are searched for CNI plugin binaries.
var DefaultCNIPluginDirs = []string{"/usr/lib/cni", "/opt/cni/bin"}

// cniPlugins are the plugins the pod network is built from.
var cniPlugins = []string{"bridge", "host-local", "portmap"}

// NetworkConfig describes the node's pod network: one Linux bridge with
// the pods' veths on it, addresses from PodCIDR by host-local IPAM, and
// hostPorts by the portmap plugin.
type NetworkConfig struct {
	// Name is the CNI network name (DefaultNetworkName); host-local keeps
	// its allocations under /var/lib/cni/networks/<Name>, shared by every
	// agent on the host that uses the same name.
	Name string
	// Bridge is the Linux bridge's name (DefaultBridge).
	Bridge string
	// PodCIDR is the node's pod subnet (DefaultPodCIDR); its first address
	// is the bridge's (the pods' gateway).
	PodCIDR string
	// PluginDirs are searched for plugin binaries (DefaultCNIPluginDirs).
	PluginDirs []string
	// CacheDir is libcni's cache directory (DefaultCNICacheDir).
	CacheDir string
}

// PortMapping publishes a container port on the node (a hostPort).
type PortMapping struct {
	HostPort      int32  `json:"hostPort"`
	ContainerPort int32  `json:"containerPort"`
	Protocol      string `json:"protocol"`
	HostIP        string `json:"hostIP,omitempty"`
}

// Network attaches pods' network namespaces to the node's pod network
// through CNI. It is safe for concurrent use.
type Network struct {
	cfg NetworkConfig
	cni *libcni.CNIConfig
	// list is the full chain (bridge, then portmap for hostPorts);
	// bridgeOnly leaves portmap out for pods without hostPorts, one plugin
	// run less per pod in a start-up burst. Both have the same name, so
	// libcni's cache finds a pod's attachment whichever it was made with.
	list       *libcni.NetworkConfigList
	bridgeOnly *libcni.NetworkConfigList

	masqMu sync.Mutex // guards masqDone
	// masqDone is set once the pod CIDR's masquerade rule is in place.
	masqDone bool
}

// NewNetwork checks that the CNI plugins are installed and that the pod
// CIDR parses. The error names what is missing.
func NewNetwork(cfg NetworkConfig) (*Network, error) {
	if cfg.Name == "" {
		cfg.Name = DefaultNetworkName
	}
	if cfg.Bridge == "" {
		cfg.Bridge = DefaultBridge
	}
	if cfg.PodCIDR == "" {
		cfg.PodCIDR = DefaultPodCIDR
	}
	if len(cfg.PluginDirs) == 0 {
		cfg.PluginDirs = DefaultCNIPluginDirs
	}
	if cfg.CacheDir == "" {
		cfg.CacheDir = DefaultCNICacheDir
	}
	if _, _, err := net.ParseCIDR(cfg.PodCIDR); err != nil {
		return nil, fmt.Errorf("failed to parse pod CIDR %q: %w", cfg.PodCIDR, err)
	}
	var missing []string
	for _, p := range cniPlugins {
		if !pluginPresent(cfg.PluginDirs, p) {
			missing = append(missing, p)
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("failed to find CNI plugins %s in %s", strings.Join(missing, ", "), strings.Join(cfg.PluginDirs, ":"))
	}
	bridge := map[string]any{
		"type":      "bridge",
		"bridge":    cfg.Bridge,
		"isGateway": true,
		// One masquerade rule for the whole pod CIDR (ensureMasquerade)
		// instead of the bridge plugin's chain per pod: each of those is
		// several iptables runs under the xtables lock, which serialized
		// pod start-up.
		"ipMasq":      false,
		"hairpinMode": true,
		"ipam": map[string]any{
			"type":   "host-local",
			"ranges": [][]map[string]string{{{"subnet": cfg.PodCIDR}}},
			"routes": []map[string]string{{"dst": "0.0.0.0/0"}},
		},
	}
	portmap := map[string]any{
		"type":         "portmap",
		"capabilities": map[string]bool{"portMappings": true},
		"snat":         true,
	}
	list, err := networkConfList(cfg.Name, bridge, portmap)
	if err != nil {
		return nil, err
	}
	bridgeOnly, err := networkConfList(cfg.Name, bridge)
	if err != nil {
		return nil, err
	}
	return &Network{
		cfg:        cfg,
		cni:        libcni.NewCNIConfigWithCacheDir(cfg.PluginDirs, cfg.CacheDir, nil),
		list:       list,
		bridgeOnly: bridgeOnly,
	}, nil
}

// networkConfList builds the CNI configuration list of the pod network
// from its plugins' configurations.
func networkConfList(name string, plugins ...map[string]any) (*libcni.NetworkConfigList, error) {
	conf, err := json.Marshal(map[string]any{"cniVersion": cniVersion, "name": name, "plugins": plugins})
	if err != nil {
		return nil, fmt.Errorf("failed to build CNI config: %w", err)
	}
	list, err := libcni.NetworkConfFromBytes(conf)
	if err != nil {
		return nil, fmt.Errorf("failed to parse CNI config: %w", err)
	}
	return list, nil
}

func pluginPresent(dirs []string, name string) bool {
	for _, d := range dirs {
		if fi, err := os.Stat(filepath.Join(d, name)); err == nil && !fi.IsDir() && fi.Mode()&0o111 != 0 {
			return true
		}
	}
	return false
}

// PodCIDR is the subnet pods get their addresses from.
func (n *Network) PodCIDR() string { return n.cfg.PodCIDR }

func (n *Network) runtimeConf(podUID, netnsPath string, pod *PodSpec) *libcni.RuntimeConf {
	rt := &libcni.RuntimeConf{
		ContainerID: NetnsName(podUID),
		NetNS:       netnsPath,
		IfName:      podInterface,
	}
	if pod != nil {
		rt.Args = [][2]string{
			{"IgnoreUnknown", "1"},
			{"K8S_POD_NAMESPACE", pod.Namespace},
			{"K8S_POD_NAME", pod.Name},
			{"K8S_POD_INFRA_CONTAINER_ID", NetnsName(podUID)},
			{"K8S_POD_UID", podUID},
		}
		ports := make([]PortMapping, 0, len(pod.Ports))
		for _, p := range pod.Ports {
			p.Protocol = strings.ToLower(p.Protocol)
			if p.Protocol == "" {
				p.Protocol = "tcp"
			}
			ports = append(ports, p)
		}
		if len(ports) > 0 {
			rt.CapabilityArgs = map[string]any{"portMappings": ports}
		}
	}
	return rt
}

// Setup attaches the pod's network namespace to the pod network and
// returns the pod's IP; the node forgets what it knew of that address
// before (its neighbor entry on the bridge). A namespace already attached
// (the agent restarted) keeps its address.
func (n *Network) Setup(ctx context.Context, pod PodSpec, netnsPath string) (string, error) {
	if err := n.ensureMasquerade(ctx); err != nil {
		return "", err
	}
	rt := n.runtimeConf(pod.UID, netnsPath, &pod)
	if cached, err := n.cni.GetNetworkListCachedResult(n.list, rt); err == nil && cached != nil {
		if ip, err := resultIP(cached); err == nil {
			return ip, nil
		}
	}
	list := n.list
	if len(pod.Ports) == 0 {
		list = n.bridgeOnly
	}
	res, err := n.cni.AddNetworkList(ctx, list, rt)
	if err != nil {
		// Undo what the plugins before the failing one did, as CRI does.
		if delErr := n.cni.DelNetworkList(context.WithoutCancel(ctx), list, rt); delErr != nil {
			err = errors.Join(err, delErr)
		}
		return "", fmt.Errorf("failed to set up network of pod %q: %w", pod.Namespace+"/"+pod.Name, err)
	}
	ip, err := resultIP(res)
	if err == nil {
		// The node may still know the address by the MAC of an earlier
		// pod that had it (see forgetNeighbor).
		err = forgetNeighbor(n.cfg.Bridge, net.ParseIP(ip))
	}
	if err != nil {
		return "", errors.Join(fmt.Errorf("failed to set up network of pod %q: %w", pod.Namespace+"/"+pod.Name, err),
			n.Teardown(context.WithoutCancel(ctx), pod.UID, netnsPath))
	}
	return ip, nil
}

// ensureMasquerade makes traffic from the pod CIDR to anywhere outside it
// leave with the node's address: one iptables rule, added once.
func (n *Network) ensureMasquerade(ctx context.Context) error {
	n.masqMu.Lock()
	defer n.masqMu.Unlock()
	if n.masqDone {
		return nil
	}
	rule := []string{"POSTROUTING", "-s", n.cfg.PodCIDR, "!", "-d", n.cfg.PodCIDR, "-m", "comment", "--comment", "glassplane pod network " + n.cfg.Name, "-j", "MASQUERADE"}
	if exec.CommandContext(ctx, "iptables", append([]string{"-w", "-t", "nat", "-C"}, rule...)...).Run() != nil {
		if out, err := exec.CommandContext(ctx, "iptables", append([]string{"-w", "-t", "nat", "-A"}, rule...)...).CombinedOutput(); err != nil {
			return fmt.Errorf("failed to add the masquerade rule of pod CIDR %s: %w: %s", n.cfg.PodCIDR, err, strings.TrimSpace(string(out)))
		}
	}
	n.masqDone = true
	return nil
}

// Teardown detaches the pod's network namespace: its veth, its address
// and its hostPorts are released (CNI DEL with the configuration it was
// added with). Tearing down a pod that was never attached is a no-op.
func (n *Network) Teardown(ctx context.Context, podUID, netnsPath string) error {
	rt := n.runtimeConf(podUID, netnsPath, nil)
	conf, cachedRT, err := n.cni.GetNetworkListCachedConfig(n.list, rt)
	if err != nil {
		return fmt.Errorf("failed to read network cache of pod %q: %w", podUID, err)
	}
	if conf == nil || cachedRT == nil {
		return nil
	}
	// Delete with the chain the pod was added with.
	list, err := libcni.NetworkConfFromBytes(conf)
	if err != nil {
		return fmt.Errorf("failed to parse cached network config of pod %q: %w", podUID, err)
	}
	rt.CapabilityArgs = cachedRT.CapabilityArgs
	rt.Args = cachedRT.Args
	if _, err := os.Stat(netnsPath); err != nil {
		// Without its namespace the plugins can still release the address
		// and the port rules; the veth went with the namespace.
		rt.NetNS = ""
	}
	if err := n.cni.DelNetworkList(ctx, list, rt); err != nil {
		return fmt.Errorf("failed to tear down network of pod %q: %w", podUID, err)
	}
	return nil
}

func resultIP(res cnitypes.Result) (string, error) {
	r, err := types100.NewResultFromResult(res)
	if err != nil {
		return "", fmt.Errorf("failed to read CNI result: %w", err)
	}
	for _, ipc := range r.IPs {
		if ipc.Address.IP.To4() != nil {
			return ipc.Address.IP.String(), nil
		}
	}
	if len(r.IPs) > 0 {
		return r.IPs[0].Address.IP.String(), nil
	}
	return "", errors.New("CNI result has no IP address")
}
