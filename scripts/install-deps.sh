#!/usr/bin/env bash
# install-deps.sh installs what Glassplane's tests and `make up` need on Debian:
# containerd and runc (real containers), busybox-static (the offline demo image),
# CNI plugins, nftables (the service proxy, through knftables), etcd (external-etcd test; etcdctl also for `make up`), docker-registry (image pull test), chromium and a Korean font (browser
# tests and screenshots of the Korean narration), python3-kubernetes (the official
# Python client's e2e test), nginx-light, bind9-dnsutils, netcat-openbsd and
# bash-static (the conformance images' nginx, dig, nc and /bin/sh,
# test/conformance).
# It is idempotent: packages already present are not reinstalled.
#
# Usage: install-deps.sh [runtime|test]
#   runtime  what `make up` needs for real containers, and etcdctl
#   test     everything the tests need (the default)
set -euo pipefail

profile="${1:-test}"
pkgs=(containerd runc busybox-static containernetworking-plugins iproute2 nftables ca-certificates)
case "$profile" in
runtime) pkgs+=(etcd-client) ;;
test) pkgs+=(etcd-server etcd-client docker-registry chromium fonts-nanum python3-kubernetes nginx-light bind9-dnsutils netcat-openbsd bash-static) ;;
*) echo "install-deps: unknown profile $profile (want runtime or test)" >&2; exit 2 ;;
esac
missing=()
for p in "${pkgs[@]}"; do
	if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
		missing+=("$p")
	fi
done
if [ "${#missing[@]}" -eq 0 ]; then
	echo "install-deps: all packages present"
	exit 0
fi
if [ "$(id -u)" != 0 ]; then
	echo "install-deps: missing ${missing[*]}; run as root to install them" >&2
	# Without root `make up` still runs, with simulated nodes.
	[ "$profile" = runtime ] && exit 0
	exit 1
fi
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
# Debian starts the packaged daemons; Glassplane manages its own containerd and etcd,
# the image pull test its own registry.
for svc in containerd etcd docker-registry nginx; do
	if command -v systemctl >/dev/null 2>&1; then systemctl disable --now "$svc" >/dev/null 2>&1 || true; fi
done
echo "install-deps: done"
