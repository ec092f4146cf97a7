#!/usr/bin/env bash
# run.sh runs Kubernetes v1.37.2's [Conformance] specs against a fresh
# `glassplane up` with a real containerd node (issue 24):
#   1. builds e2e.test from k8s.io/kubernetes v1.37.2 (this module), cached
#      by the module's go.sum and the Go version;
#   2. builds the images the specs run (go run . images) and imports them
#      into the node's containerd under their registry.k8s.io names;
#   3. starts glassplane up on loopback ports and runs e2e.test;
#   4. full: writes docs/conformance.md from the JUnit (go run . report).
#
# Usage: run.sh full|smoke|focus REGEX
#   full   every [Conformance] spec (about 45 minutes on 2 cores with a built e2e.test)
#   smoke  the specs in smoke.txt; exits non-zero when one fails
#   focus  the [Conformance] specs whose names match REGEX (a Ginkgo focus),
#          for working on one area; exits non-zero when one fails
# Environment: GLASSPLANE_BIN (default bin/glassplane), CONFORMANCE_OUT
# (default /tmp/glassplane-conformance), CONFORMANCE_CACHE (where e2e.test
# is kept, default ~/.cache/glassplane-conformance).
set -euo pipefail
mode="${1:-full}"
here="$(cd "$(dirname "$0")" && pwd)"
root="$(cd "$here/../.." && pwd)"
bin="${GLASSPLANE_BIN:-$root/bin/glassplane}"
out="${CONFORMANCE_OUT:-/tmp/glassplane-conformance}"
cache="${CONFORMANCE_CACHE:-$HOME/.cache/glassplane-conformance}"
export GOFLAGS=-mod=mod
cd "$here"

case "$mode" in
full) focus='\[Conformance\]' ;;
smoke)
	# Each line of smoke.txt is a spec's full name, matched literally.
	focus="$(grep -v '^#' smoke.txt | sed -e 's/[][\\.^$*+?(){}|/]/\\&/g' | paste -sd'|')"
	[ -n "$focus" ] || { echo "conformance: smoke.txt lists no specs" >&2; exit 1; }
	;;
focus)
	[ -n "${2:-}" ] || { echo "usage: run.sh focus REGEX" >&2; exit 2; }
	# Ginkgo ORs several --focus flags: the one regex asks for both.
	focus="\[Conformance\].*($2)|($2).*\[Conformance\]"
	;;
*) echo "usage: run.sh full|smoke|focus REGEX" >&2; exit 2 ;;
esac

# 1. e2e.test, cached by content: the module's requirements, Go and the
# build flags. It carries its version as upstream's release build stamps
# it (hack/lib/version.sh): specs that ask for the test binary's version,
# such as those building Pod Security fixtures for it, get v1.37.2.
ldflags="-X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=37 -X k8s.io/component-base/version.gitVersion=v1.37.2 -X k8s.io/component-base/version.gitTreeState=clean"
key="$( (cat go.sum go.mod; echo "$ldflags") | sha256sum | cut -c1-16)-$(go env GOVERSION)"
e2e="$cache/$key/e2e.test"
if [ ! -x "$e2e" ]; then
	mkdir -p "$cache/$key"
	echo "conformance: building e2e.test (k8s.io/kubernetes v1.37.2; 10-40 minutes with a cold build cache)..."
	start=$(date +%s)
	go test -c -vet=off -ldflags "$ldflags" -o "$e2e.tmp" k8s.io/kubernetes/test/e2e
	mv "$e2e.tmp" "$e2e"
	echo "conformance: e2e.test built in $(( $(date +%s) - start ))s"
fi

# 2. The images.
rm -rf "$out" && mkdir -p "$out/images" "$out/report"
# The smoke subset builds only the images its specs run.
specs_arg=()
[ "$mode" = smoke ] && specs_arg=(-specs smoke.txt)
go run . images -out "$out/images" "${specs_arg[@]}" >"$out/images.txt"

# 3. The cluster: one real containerd node, loopback ports of its own.
data="$out/data"
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
api="127.0.0.1:$(free_port)"
"$bin" up --data-dir "$data" --api-listen "$api" --web-listen "" \
	--etcd-listen "127.0.0.1:$(free_port)" --etcd-peer-listen "127.0.0.1:$(free_port)" \
	--node-port "$(free_port)" --node-runtime containerd >"$out/glassplane.log" 2>&1 &
gp=$!
trap 'kill "$gp" 2>/dev/null; wait "$gp" 2>/dev/null || true' EXIT
for _ in $(seq 1 180); do
	if [ -s "$data/kubeconfig" ] && kubectl --kubeconfig "$data/kubeconfig" get --raw /readyz >/dev/null 2>&1; then break; fi
	kill -0 "$gp" 2>/dev/null || { tail -30 "$out/glassplane.log"; exit 1; }
	sleep 1
done
while read -r archive; do
	"$bin" image import --data-dir "$data" "$archive" >/dev/null
done <"$out/images.txt"
kubectl --kubeconfig "$data/kubeconfig" wait --for=condition=Ready nodes --all --timeout=3m >/dev/null

# 4. The specs, on parallel Ginkgo processes (the ginkgo CLI of this
# module); [Serial] specs run alone at the end, as upstream runs them.
ginkgo="$cache/$key/ginkgo"
[ -x "$ginkgo" ] || go build -o "$ginkgo" github.com/onsi/ginkgo/v2/ginkgo
procs="${CONFORMANCE_PROCS:-4}"
echo "conformance: running $mode specs on $procs processes against $api (log: $out/e2e.log)..."
started="$(date -u +%Y-%m-%dT%H:%M:%SZ)"; start_s=$(date +%s)
set +e
"$ginkgo" --procs "$procs" --focus "$focus" --timeout "${CONFORMANCE_TIMEOUT:-3h}" --no-color -v --output-dir "$out/report" --junit-report junit.xml \
	"$e2e" -- --kubeconfig "$data/kubeconfig" --provider skeleton --report-dir "$out/report" >"$out/e2e.log" 2>&1
rc=$?
set -e
tail -5 "$out/e2e.log"
if [ "$mode" = full ]; then
	go run . report -junit "$out/report/junit.xml" -log "$out/e2e.log" -took "$(( $(date +%s) - start_s ))s" -started "$started" -out "$root/docs/conformance.md"
	echo "conformance: wrote docs/conformance.md"
fi
exit "$rc"
