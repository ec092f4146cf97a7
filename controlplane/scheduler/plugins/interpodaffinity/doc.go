// Package interpodaffinity is the InterPodAffinity plugin: its filter
// enforces the pod's required pod affinity and anti-affinity and the
// required anti-affinity of the pods already placed, per topology domain
// (topologyKey); its score adds the weights of preferred terms (the pod's
// and the placed pods') per domain and scales them to 0..100. It reads only
// the pod and the snapshot's NodeInfos. Like kube-scheduler's, PreFilter and
// PreScore check every placed pod in each cycle; a Bloom filter of each
// pod's labels (framework.LabelBloom) turns most of them away without
// reading their labels.
package interpodaffinity
