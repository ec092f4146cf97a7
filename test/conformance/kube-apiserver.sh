#!/usr/bin/env bash
# kube-apiserver.sh builds kube-apiserver v1.37.2 from this module (the same
# k8s.io/kubernetes requirement and staging replaces as e2e.test), with its
# version stamped, keeps it beside e2e.test in the cache (same key: the
# module's go.sum and the Go version) and prints its path. The dashboard's
# e2e test against upstream Kubernetes (issue 27) runs it.
# Environment: CONFORMANCE_CACHE (default ~/.cache/glassplane-conformance).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
cache="${CONFORMANCE_CACHE:-$HOME/.cache/glassplane-conformance}"
export GOFLAGS=-mod=mod
cd "$here"
key="$(cat go.sum go.mod | sha256sum | cut -c1-16)-$(go env GOVERSION)"
bin="$cache/$key/kube-apiserver"
if [ ! -x "$bin" ]; then
	mkdir -p "$cache/$key"
	version="$(go list -m -f '{{.Version}}' k8s.io/kubernetes)"
	minor="$(echo "$version" | cut -d. -f2)"
	echo "kube-apiserver.sh: building kube-apiserver $version (minutes with a cold build cache)..." >&2
	start=$(date +%s)
	go build -o "$bin.tmp" -ldflags "-X k8s.io/component-base/version.gitVersion=$version -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$minor -X k8s.io/component-base/version.gitTreeState=clean" k8s.io/kubernetes/cmd/kube-apiserver
	mv "$bin.tmp" "$bin"
	echo "kube-apiserver.sh: built in $(( $(date +%s) - start ))s" >&2
fi
echo "$bin"
