// Package etcd starts the embedded etcd member that Glassplane keeps its state
// in, or connects to an external etcd cluster. It owns the etcd process and
// its client; only the storage package reads and writes keys through that
// client, and watches the embedded member's store directly (DirectWatch).
//
// The control plane reaches its embedded member in process, with no socket.
// On its client and peer URLs the member serves only TLS and, as kubeadm's
// and k3s's etcd do, answers only clients with a certificate of its own CA:
// a second CA in <data-dir>/pki/etcd, apart from the cluster CA, so that no
// API user's or node's certificate opens etcd. There is no JSON gateway and
// no CORS. The package writes only under <data-dir>/etcd (the member),
// <data-dir>/pki/etcd (the CA, the serving, peer and admin certificates,
// reused on restart while they cover the listen hosts; keys 0600) and
// <data-dir>/etcdctl.env (0600), which sets etcdctl's endpoint, CA and the
// admin's client certificate.
package etcd
