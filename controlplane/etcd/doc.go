// Package etcd starts the embedded etcd member that Glassplane keeps its state
// in, or connects to an external etcd cluster. It owns the etcd process and
// its client; only the storage package reads and writes keys through that
// client, and watches the embedded member's store directly (DirectWatch).
package etcd
