package kubeversion

// The Kubernetes version of the k8s.io modules in go.mod (k8s.io/api
// v0.37.2 implements Kubernetes v1.37.2).
const (
	Major = "1"
	Minor = "37"
	Patch = "2"
	// GitVersion is the version as Kubernetes components print it, with
	// Glassplane named in the build metadata as k3s does ("+k3s1"): semver
	// ignores it, so kubectl's version skew check compares 1.37 only.
	GitVersion = "v" + Major + "." + Minor + "." + Patch + "+glassplane"
)
