// Package storage is Glassplane's object store over etcd. It knows the
// Kubernetes key layout (/registry/<resource>/<namespace>/<name>), writes with
// etcd transactions (create only if absent, update and delete only at the
// expected ModRevision), lists with pagination, and runs one etcd watch
// (through the client, or Config.Watch: the embedded member's own watch
// stream) whose events fan out to every API watcher and dashboard stream, each live event
// carrying one Memo that its watchers share, so that the API server decodes
// and encodes it once however many watch. A prefix can have an index
// (SetIndexer) that WatchIndexed narrows a watcher by, so that a node's pod
// watch is not woken for other nodes' pods. The fan-out routes each event
// by the watchers' distinct prefixes and, within a prefix, by index value:
// an event costs a look at a few dozen prefixes, not at each of the
// thousands of watchers a thousand simulated node agents hold; each of those
// holds a channel of a few events, and queues more (to a limit, past which
// it is closed to resume) only while it lags. The feed counts itself read
// up to its last event's revision, not up to a response's header (etcd
// catches a lagging watch up in batches whose header runs ahead of their
// events), and up to a progress notification's header; a watch from a
// revision it has not read yet waits for it. etcd hands a write's events
// to the feed before the write is readable on its member, so a serializable
// read older than what the feed has delivered is done again with a quorum
// round: a client that reads on a watch event finds the change. Newest
// answers the most recently written keys under a prefix from the watch's
// history (the dashboard's recent Events) when it reaches back far enough.
// Recent answers the watch's
// newest value of a recently changed key, the guess an update starts from
// before it must read etcd (as kube-apiserver's updates start from the
// watch cache). For the last few hundred changes of the last two seconds
// the store also keeps each one's Memo: Recent hands it out with the value, and the next change of
// the same key carries it as PrevMemo, so what was decoded of a value once
// is not decoded again for the update that replaces it or for matching the
// watchers' selectors against the old value. Values are opaque bytes here (JSON
// in practice); decoding belongs to the API server. Keys under a prefix
// with a time to live (Config.TTLs: Events) are attached to shared etcd
// leases, as kube-apiserver's lease manager does, and etcd deletes them when
// the lease runs out. Only this package talks to etcd's key space.
package storage
