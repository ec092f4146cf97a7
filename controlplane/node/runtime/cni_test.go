package runtime

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestNewNetworkReportsMissingPlugins(t *testing.T) {
	tests := []struct {
		name    string
		cfg     NetworkConfig
		wantErr string
	}{
		{name: "no plugins", cfg: NetworkConfig{PluginDirs: []string{t.TempDir()}}, wantErr: "failed to find CNI plugins bridge, host-local, portmap"},
		{name: "bad CIDR", cfg: NetworkConfig{PodCIDR: "10.88.0.0"}, wantErr: "failed to parse pod CIDR"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := NewNetwork(tt.cfg)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("NewNetwork = %v, want error containing %q", err, tt.wantErr)
			}
		})
	}
}

// runDemoPod starts one demo container in a new pod and returns the pod's IP.
func runDemoPod(t *testing.T, ctx context.Context, rt *Containerd, pod PodSpec, spec ContainerSpec) (ip, id string) {
	t.Helper()
	ip, err := rt.StartPod(ctx, pod)
	if err != nil {
		t.Fatalf("StartPod(%s): %v", pod.Name, err)
	}
	id, err = rt.CreateContainer(ctx, pod, spec)
	if err != nil {
		t.Fatalf("CreateContainer(%s): %v", pod.Name, err)
	}
	if err := rt.StartContainer(ctx, id); err != nil {
		t.Fatalf("StartContainer(%s): %v", pod.Name, err)
	}
	return ip, id
}

func httpGet(url string) (string, error) {
	c := http.Client{Timeout: 2 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}

func TestContainerdPodNetwork(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	rt := startTestContainerd(t, ctx)
	if err := rt.EnsureDemoImage(ctx); err != nil {
		t.Fatalf("EnsureDemoImage: %v", err)
	}
	server := PodSpec{UID: "0d1c2b3a-0000-4000-8000-0000000000a1", Namespace: "default", Name: "server",
		Ports: []PortMapping{{HostPort: 18481, ContainerPort: DemoPort, Protocol: "TCP"}}}
	serverIP, _ := runDemoPod(t, ctx, rt, server, ContainerSpec{Name: "web", Image: DemoImage})
	_, subnet, _ := net.ParseCIDR("10.89.0.0/24")
	if !subnet.Contains(net.ParseIP(serverIP)) {
		t.Fatalf("server pod IP = %q, want an address in %s", serverIP, subnet)
	}
	again, err := rt.StartPod(ctx, server)
	if err != nil || again != serverIP {
		t.Fatalf("StartPod again = %q, %v; want the same address %q", again, err, serverIP)
	}

	t.Run("host reaches the pod by its IP", func(t *testing.T) {
		waitFor(t, "the server pod to answer the host", time.Minute, func() (bool, error) {
			body, err := httpGet(fmt.Sprintf("http://%s:%d/", serverIP, DemoPort))
			return strings.Contains(body, "Hello from server"), err
		})
	})
	t.Run("hostPort reaches the pod", func(t *testing.T) {
		waitFor(t, "the server pod to answer on its hostPort", time.Minute, func() (bool, error) {
			body, err := httpGet(fmt.Sprintf("http://%s:18481/", hostIPv4ForTest(t)))
			return strings.Contains(body, "Hello from server"), err
		})
	})
	t.Run("another pod reaches the pod by its IP", func(t *testing.T) {
		client := PodSpec{UID: "0d1c2b3a-0000-4000-8000-0000000000a2", Namespace: "default", Name: "client"}
		clientIP, id := runDemoPod(t, ctx, rt, client, ContainerSpec{Name: "wget", Image: DemoImage,
			Command: []string{"wget", "-q", "-O", "-", fmt.Sprintf("http://%s:%d/", serverIP, DemoPort)}})
		if clientIP == "" || clientIP == serverIP {
			t.Fatalf("client pod IP = %q, want its own address (server has %q)", clientIP, serverIP)
		}
		waitFor(t, "the client pod to exit", time.Minute, func() (bool, error) {
			st, ok := findContainer(t, ctx, rt, client.UID, id)
			return ok && st.State == StateExited, nil
		})
		st, _ := findContainer(t, ctx, rt, client.UID, id)
		out, _ := logStreams(t, rt.LogPath(client.UID, "wget", 0))
		if st.ExitCode != 0 || !strings.Contains(out, "Hello from server") {
			t.Fatalf("client exited %d with output %q; want 0 and the server's page", st.ExitCode, out)
		}
		// The client has no hostPorts: its network was set up without the
		// portmap plugin, and is torn down with the chain it was set up with.
		if err := rt.RemovePod(ctx, client.UID); err != nil {
			t.Fatalf("RemovePod of the client: %v", err)
		}
		if _, err := os.Stat(filepath.Join("/var/lib/cni/networks/glassplane-test", clientIP)); !os.IsNotExist(err) {
			t.Errorf("address %s of the client still allocated (stat: %v)", clientIP, err)
		}
	})

	t.Run("removing the pod releases its address and veth", func(t *testing.T) {
		if err := rt.RemovePod(ctx, server.UID); err != nil {
			t.Fatalf("RemovePod: %v", err)
		}
		if _, err := os.Stat(filepath.Join("/var/lib/cni/networks/glassplane-test", serverIP)); !os.IsNotExist(err) {
			t.Errorf("address %s still allocated (stat: %v)", serverIP, err)
		}
		if _, err := os.Stat(NetnsPath(server.UID)); !os.IsNotExist(err) {
			t.Errorf("network namespace still present (stat: %v)", err)
		}
		if _, err := httpGet(fmt.Sprintf("http://%s:18481/", hostIPv4ForTest(t))); err == nil {
			t.Errorf("hostPort 18481 still answers after the pod was removed")
		}
	})
}

// hostIPv4ForTest is the host's first non-loopback IPv4 address.
func hostIPv4ForTest(t *testing.T) string {
	t.Helper()
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && !n.IP.IsLoopback() && n.IP.To4() != nil && !strings.HasPrefix(n.IP.String(), "10.89.") {
			return n.IP.String()
		}
	}
	t.Skip("no non-loopback IPv4 address")
	return ""
}

// TestContainerdPodAtReusedAddressAnswersAtOnce: a pod that gets an
// address the node still knows by an earlier pod's MAC (a stale neighbor
// entry on the bridge) answers the node's first request, instead of
// after that entry failed its probes (5 s of delay, then 3 probes).
func TestContainerdPodAtReusedAddressAnswersAtOnce(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	rt := startTestContainerd(t, ctx)
	if err := rt.EnsureDemoImage(ctx); err != nil {
		t.Fatalf("EnsureDemoImage: %v", err)
	}
	// The first pod makes the bridge.
	first := PodSpec{UID: "0d1c2b3a-0000-4000-8000-0000000000a3", Namespace: "default", Name: "first"}
	t.Cleanup(func() { _ = rt.RemovePod(context.Background(), first.UID) })
	runDemoPod(t, ctx, rt, first, ContainerSpec{Name: "web", Image: DemoImage})

	next := nextHostLocalAddress(t, "glassplane-test")
	if out, err := exec.Command("ip", "neigh", "replace", next, "lladdr", "02:00:00:00:00:a3", "dev", "gptest0", "nud", "stale").CombinedOutput(); err != nil {
		t.Fatalf("planting a stale neighbor entry for %s: %v: %s", next, err, out)
	}
	t.Cleanup(func() { _ = exec.Command("ip", "neigh", "del", next, "dev", "gptest0").Run() })

	second := PodSpec{UID: "0d1c2b3a-0000-4000-8000-0000000000a4", Namespace: "default", Name: "second"}
	t.Cleanup(func() { _ = rt.RemovePod(context.Background(), second.UID) })
	ip, _ := runDemoPod(t, ctx, rt, second, ContainerSpec{Name: "web", Image: DemoImage})
	if ip != next {
		t.Fatalf("the second pod got %s, want %s (the address the neighbor entry was planted for)", ip, next)
	}
	// Wait for the server from inside the pod, which leaves the node's
	// neighbor table alone; then the node's first request must be answered.
	waitFor(t, "the second pod's server to listen", time.Minute, func() (bool, error) {
		conn, err := rt.DialPod(ctx, second, DemoPort)
		if err != nil {
			return false, err
		}
		conn.Close()
		return true, nil
	})
	body, err := httpGet(fmt.Sprintf("http://%s:%d/", ip, DemoPort))
	if err != nil || !strings.Contains(body, "Hello from second") {
		t.Errorf("the node's first request to %s answered %q, %v", ip, body, err)
	}
}

// nextHostLocalAddress is the address host-local gives the next pod of
// network (a /24 whose .1 is the gateway): the first free one after the
// last it gave, wrapping around.
func nextHostLocalAddress(t *testing.T, network string) string {
	t.Helper()
	dir := filepath.Join("/var/lib/cni/networks", network)
	last := net.ParseIP("10.89.0.1").To4()
	if b, err := os.ReadFile(filepath.Join(dir, "last_reserved_ip.0")); err == nil {
		if ip := net.ParseIP(strings.TrimSpace(string(b))).To4(); ip != nil {
			last = ip
		}
	}
	for i := 1; i <= 254; i++ {
		// From .1 to .254; .1 is the gateway.
		octet := byte((int(last[3])-1+i)%254 + 1)
		if octet == 1 {
			continue
		}
		cand := net.IPv4(last[0], last[1], last[2], octet).String()
		if _, err := os.Stat(filepath.Join(dir, cand)); os.IsNotExist(err) {
			return cand
		}
	}
	t.Fatalf("no free address in network %s", network)
	return ""
}
