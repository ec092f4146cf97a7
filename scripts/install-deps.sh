#!/usr/bin/env bash
# install-deps.sh installs what Glassplane's tests and `make up` need on Debian:
# containerd and runc (real containers), busybox-static (the offline demo image),
# CNI plugins, etcd (external-etcd test), chromium (browser tests).
# It is idempotent: packages already present are not reinstalled.
set -euo pipefail

pkgs=(containerd runc busybox-static containernetworking-plugins etcd-server etcd-client chromium iproute2 ca-certificates)
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
	exit 1
fi
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
# Debian starts the packaged daemons; Glassplane manages its own containerd and etcd.
for svc in containerd etcd; do
	if command -v systemctl >/dev/null 2>&1; then systemctl disable --now "$svc" >/dev/null 2>&1 || true; fi
done
echo "install-deps: done"
