// Package nodeaffinity is the NodeAffinity plugin: its filter keeps only
// nodes whose labels satisfy the pod's spec.nodeSelector and its required
// node affinity (ORed nodeSelectorTerms of ANDed matchExpressions and
// matchFields), and its score sums the weights of the preferred node
// affinity terms a node matches. It reads only the pod and node; the
// selector matching follows k8s.io/component-helpers' nodeaffinity package.
package nodeaffinity
