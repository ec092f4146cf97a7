// Package interpodaffinity is the InterPodAffinity plugin: its filter
// enforces the pod's required pod affinity and anti-affinity and the
// required anti-affinity of the pods already placed, per topology domain
// (topologyKey); its score adds the weights of preferred terms (the pod's
// and the placed pods') per domain and scales them to 0..100. It reads only
// the pod and the snapshot's NodeInfos. Like kube-scheduler's, PreFilter and
// PreScore look at every placed pod in each cycle, but through flat lists
// on each NodeInfo: the placed pods' terms with the Bloom filters of their
// selectors (framework.LabelBloom) turn most of them away without reading
// a pod, a node whose pods' blooms together cannot match the pod's own
// terms is skipped whole, and Filter compares the node's labels by their
// hashes with the domains the counts reached.
package interpodaffinity
