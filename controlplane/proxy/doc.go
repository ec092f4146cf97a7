// Package proxy is the node's service proxy, kube-proxy's nftables mode:
// an API client (client-go informers on Services and EndpointSlices, never
// etcd) that programs the kernel through sigs.k8s.io/knftables so that
// connections to a Service's ClusterIP and NodePort reach its endpoints.
//
// It owns one nftables table, family ip, named DefaultTable
// ("glassplane-proxy"), one per host: the ClusterIPs of two clusters on one
// host come from the same range, so only one proxy can own the data path,
// and a table per cluster would let a dead cluster's rules shadow a live
// one's. The proxy that wrote it whole last owns it: its random mark is the
// one element of the proxy-owner set, and every difference it writes
// deletes and re-adds that element, so a proxy whose table another one
// rewrote fails its next difference and writes the table whole; every
// OwnerCheckInterval (5 s) it also reads the mark and takes the table
// back when it lost it. Two clusters with containerd nodes on one host
// therefore take turns: each one's Services work only while it holds the
// table (one cluster per host is the setting the data path is made for). Each sync (after changes, at
// most once per MinSyncInterval) builds the whole desired table from the
// informers' caches and writes it in one knftables transaction, as
// kube-proxy's nftables mode: the first sync, one every SyncPeriod (an
// hour) and the one after a failure delete and recreate the table, so
// nothing else stays in it (rules added by hand, a previous run's
// chains); the others write only the difference from what the proxy wrote
// last (new, changed and stale chains, map elements and affinity sets),
// so a change to one Service costs far less than a rewrite
// (BenchmarkProxySync, 1,000 Services × 10 endpoints, 11,008 chains and
// 22,010 rules on a shared 2-core machine: 0.2 s per sync when quiet,
// 0.5–1.1 s at load average 20; the whole table 4–5 s).
//
// The table follows kube-proxy's layout: base chains nat-prerouting and
// nat-output jump to "services", which looks up
// `ip daddr . meta l4proto . th dport` in the service-ips verdict map and,
// for any local address (`fib daddr type local`, so the node's addresses
// and 127.0.0.1), `meta l4proto . th dport` in service-nodeports. Each
// Service port has a chain service-<hash>-<ns>/<name>/<proto>/<port>
// balancing over its usable endpoints with `numgen random mod N vmap`, a
// local-<hash>-... chain with only this node's endpoints when a traffic
// policy is Local, an external-<hash>-... chain for its NodePort, and an
// endpoint-<hash>-...__<ip>/<port> chain per endpoint that DNATs. Usable
// endpoints are the ready ones, or when none is ready the serving ones
// that are terminating. Masquerading is marked (mark-for-masquerade, bit
// 0x4000) and done in nat-postrouting: NodePort traffic, ClusterIP traffic
// from outside the pod CIDR, and hairpin traffic (a pod reaching itself
// through its Service). sessionAffinity ClientIP keeps an
// affinity-<hash>-... set per endpoint with the Service's timeout. A
// Service port without usable endpoints gets an element in
// no-endpoint-services / no-endpoint-nodeports that the filter chains use
// to reject new connections (TCP reset, else ICMP host-unreachable), or
// drop them when a Local policy finds endpoints on other nodes only.
// Every programmed ClusterIP is in the cluster-ips map: a new connection
// still addressed to one after DNAT (a port or protocol its Service does
// not serve) is rejected in filter-forward and filter-output, as
// kube-proxy's cluster-ips-check does.
//
// Endpoints on 127.0.0.1 (the kubernetes Service when the API server
// listens on loopback, the cluster DNS) are reached from pods by DNAT
// alone: the proxy sets net.ipv4.conf.all.route_localnet=1, as
// kube-proxy's iptables mode does for NodePorts on 127.0.0.1, so the
// kernel routes a pod's packet to 127.0.0.1 and the reply from 127.0.0.1
// back out of the pod bridge (conntrack turns its source back into the
// ClusterIP). The same sysctl lets 127.0.0.1:<nodePort> reach pods. Its
// risk (CVE-2020-8558: other machines reaching the host's loopback
// services) is closed as kube-proxy closes it: the filter-input chain
// drops new connections to 127.0.0.0/8 from outside loopback that were
// not DNATed by the proxy.
//
// When the endpoints programmed for a Service port change, the proxy
// records a Normal Event EndpointsProgrammed on the Service (source
// glassplane-proxy, host the node), e.g. "Programmed 2 ready endpoints for
// 10.96.12.3:80/TCP on node vm (nftables, 3ms)", through client-go's
// event recorder. Rules lists what the kernel holds for one Service (or
// the whole table) as nft prints it; the node agent serves that at
// /glassplane/proxy-rules. The proxy runs as system:kube-proxy (the
// system:node-proxier ClusterRole) beside the node agent on containerd
// nodes only; simulated nodes have no data path. DeleteTable removes the
// table for `glassplane down --purge`. Not done: IPv6, externalIPs and
// load-balancer IPs, firewall source ranges, and clearing UDP conntrack
// entries of removed endpoints.
//
// This room touches the API through its client and the kernel through
// nft (one table) and the route_localnet sysctl, nothing else.
package proxy
