package main

import (
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"path/filepath"

	"golang.org/x/sync/errgroup"

	"github.com/glassplane/glassplane/controlplane/apiserver/auth/rbac"
	"github.com/glassplane/glassplane/controlplane/dns"
	"github.com/glassplane/glassplane/controlplane/pki"
)

// dnsKubeconfigFile is, in the data directory, the kubeconfig CoreDNS's
// kubernetes plugin reads the API with, as rbac.UserDNS.
const dnsKubeconfigFile = "dns-kubeconfig"

// startClusterDNS starts the cluster DNS server on --cluster-dns-listen
// (by default the advertise address, on a port free for UDP and TCP). It
// returns the server (Ready once it answers and kube-system/kube-dns points
// at it), the function that stops it, and the kube-dns Service's IP, which
// node agents write into pods' resolv.conf.
func startClusterDNS(ctx context.Context, g *errgroup.Group, o upOptions, dataDir string, advertise netip.Addr, api apiEndpoint) (*dns.Server, func(), netip.Addr, error) {
	serviceIP, err := dns.ServiceIP(o.serviceClusterIPRange)
	if err != nil {
		return nil, nil, netip.Addr{}, err
	}
	listen := o.clusterDNSListen
	if listen == "" {
		listen = net.JoinHostPort(advertise.String(), "0")
	}
	kubeconfig := filepath.Join(dataDir, dnsKubeconfigFile)
	kc, err := api.ca.Kubeconfig(api.url, rbac.UserDNS)
	if err != nil {
		return nil, nil, netip.Addr{}, err
	}
	if err := os.WriteFile(kubeconfig, kc, 0o600); err != nil {
		return nil, nil, netip.Addr{}, fmt.Errorf("failed to write %q: %w", kubeconfig, err)
	}
	// The add-on's Service and EndpointSlice are applied as the admin, as
	// kubeadm applies CoreDNS's manifests; CoreDNS itself only reads.
	client, err := api.client(pki.AdminUser, pki.AdminGroup)
	if err != nil {
		return nil, nil, netip.Addr{}, err
	}
	srv, err := dns.New(dns.Config{
		Listen: listen, ClusterDomain: o.clusterDomain, ServiceIP: serviceIP,
		Kubeconfig: kubeconfig, ResolvConf: o.clusterDNSResolvConf, Logger: slog.Default(),
	}, client)
	if err != nil {
		return nil, nil, netip.Addr{}, err
	}
	return srv, runPart(ctx, g, "cluster-dns", srv.Run), serviceIP, nil
}
