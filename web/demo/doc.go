// Package demo holds the classroom demos: guided scenarios, each a script of
// manifests and API calls with a narration per step in English and Korean
// (the seed notes' language). What a step did, and the demo's own
// messages, are said in the run's language too; Kubernetes' own words
// (object names, kinds, reasons, the server's messages) stay as they are,
// as in Korean study material. `glassplane demo list|run` plays them in a
// terminal against the cluster of a kubeconfig, and the dashboard's Demos
// page plays them as the logged-in user. A demo acts only through the API
// client it is given (client-go), like kubectl, so every step is
// authenticated, authorized, admitted, audited and shown on the cluster
// map; it waits on conditions with generous timeouts, never on sleeps. It
// plays in a namespace of its own, glassplane-demo-<name>, which Run
// creates (refusing to run when one is left from another run) and removes;
// in a namespace the presenter names (`-n default`) it touches nothing it
// did not create and stops, reporting the clash, when a name is taken.
// When it ends it deletes only what it created, each with its uid as a
// precondition, so an object of the same name that someone else made is
// never deleted. The node-failure demo plays a node
// agent through that client too: it registers a node and renews its Lease,
// then stops, and leaves the rest to the node lifecycle controller. The
// service-dns demo needs a data path (pod network, service proxy, cluster
// DNS), which only containerd nodes have: it pins its pods there and reads
// its client pod's log (kubectl logs) for the DNS answer and the pod that
// replied, and records each reply once as a ServiceReached Event on the
// client pod, related to the replica that answered, which the dashboard's
// map plays as the lookup, the answer and the connection; with no
// containerd node Ready it plays the Service and EndpointSlice part and
// says so. The custom-resource demo creates a
// cluster-scoped CRD (widgets.demo.glassplane.io) with CRD and dynamic
// clients made from the Env's Config, so one run plays it at a time (a
// second stops at the name clash) and its last step deletes the CRD. The cron-job demo waits for the next
// whole minute of its */1 schedule (up to a minute). The autoscale demo
// puts its load in the pods' metrics.glassplane.io/simulated-usage
// annotation when a simulated node is Ready (pinned there), else burns
// CPU in a shell loop on a containerd node.
package demo
