#!/usr/bin/env bash
# upstream-one-node.sh runs [Conformance] specs on upstream Kubernetes in the
# runner's set-up, one schedulable node, to check a "not applicable" reason
# of not-applicable.txt: kube-apiserver v1.37.2 (kube-apiserver.sh) on
# Debian's etcd, one Node object that is Ready and untainted (no kubelet: the
# specs checked this way stop at counting nodes, before any pod), and the
# same e2e.test as run.sh. It prints the specs' results.
#
# Usage: upstream-one-node.sh REGEX
# Environment: CONFORMANCE_CACHE (default ~/.cache/glassplane-conformance),
# CONFORMANCE_OUT (default /tmp/glassplane-upstream-one-node).
set -euo pipefail
[ -n "${1:-}" ] || { echo "usage: upstream-one-node.sh REGEX" >&2; exit 2; }
here="$(cd "$(dirname "$0")" && pwd)"
cache="${CONFORMANCE_CACHE:-$HOME/.cache/glassplane-conformance}"
out="${CONFORMANCE_OUT:-/tmp/glassplane-upstream-one-node}"
export GOFLAGS=-mod=mod
cd "$here"

# e2e.test as run.sh builds it (the same cache key), and kube-apiserver.
ldflags="-X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=37 -X k8s.io/component-base/version.gitVersion=v1.37.2 -X k8s.io/component-base/version.gitTreeState=clean"
key="$( (cat go.sum go.mod; echo "$ldflags") | sha256sum | cut -c1-16)-$(go env GOVERSION)"
e2e="$cache/$key/e2e.test"
if [ ! -x "$e2e" ]; then
	mkdir -p "$cache/$key"
	go test -c -vet=off -ldflags "$ldflags" -o "$e2e.tmp" k8s.io/kubernetes/test/e2e
	mv "$e2e.tmp" "$e2e"
fi
kas="$(bash kube-apiserver.sh)"

rm -rf "$out" && mkdir -p "$out/pki"
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
pids=()
# kube-apiserver may wait on its storage at SIGTERM: SIGKILL what is left.
stop() {
	kill "${pids[@]}" 2>/dev/null || true
	sleep 3
	kill -9 "${pids[@]}" 2>/dev/null || true
	wait 2>/dev/null || true
}
trap stop EXIT

etcd_client="127.0.0.1:$(free_port)"
etcd --data-dir "$out/etcd" --listen-client-urls "http://$etcd_client" --advertise-client-urls "http://$etcd_client" \
	--listen-peer-urls "http://127.0.0.1:$(free_port)" >"$out/etcd.log" 2>&1 &
pids+=($!)

# The certificates: a CA, the serving certificate, an admin in
# system:masters, and the ServiceAccount signing key.
cd "$out/pki"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 -subj /CN=kubernetes -keyout ca.key -out ca.crt 2>/dev/null
openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj /CN=kube-apiserver -keyout apiserver.key -out apiserver.csr 2>/dev/null
printf 'subjectAltName=DNS:localhost,IP:127.0.0.1,IP:10.0.0.1\nextendedKeyUsage=serverAuth\n' >apiserver.ext
openssl x509 -req -in apiserver.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 1 -extfile apiserver.ext -out apiserver.crt 2>/dev/null
openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/O=system:masters/CN=upstream-admin" -keyout admin.key -out admin.csr 2>/dev/null
printf 'extendedKeyUsage=clientAuth\n' >admin.ext
openssl x509 -req -in admin.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 1 -extfile admin.ext -out admin.crt 2>/dev/null
openssl ecparam -name prime256v1 -genkey -noout -out sa.key
openssl ec -in sa.key -pubout -out sa.pub 2>/dev/null
cd "$here"

port="$(free_port)"
"$kas" --etcd-servers "http://$etcd_client" \
	--bind-address 127.0.0.1 --secure-port "$port" --advertise-address 127.0.0.1 \
	--tls-cert-file "$out/pki/apiserver.crt" --tls-private-key-file "$out/pki/apiserver.key" \
	--client-ca-file "$out/pki/ca.crt" \
	--service-account-issuer https://kubernetes.default.svc \
	--service-account-key-file "$out/pki/sa.pub" --service-account-signing-key-file "$out/pki/sa.key" \
	--service-cluster-ip-range 10.0.0.0/24 --endpoint-reconciler-type none \
	--authorization-mode Node,RBAC >"$out/kube-apiserver.log" 2>&1 &
pids+=($!)

kc="$out/kubeconfig"
kubectl config --kubeconfig "$kc" set-cluster upstream --server "https://127.0.0.1:$port" --certificate-authority "$out/pki/ca.crt" --embed-certs >/dev/null
kubectl config --kubeconfig "$kc" set-credentials admin --client-certificate "$out/pki/admin.crt" --client-key "$out/pki/admin.key" --embed-certs >/dev/null
kubectl config --kubeconfig "$kc" set-context upstream --cluster upstream --user admin >/dev/null
kubectl config --kubeconfig "$kc" use-context upstream >/dev/null
for _ in $(seq 1 120); do
	kubectl --kubeconfig "$kc" get --raw /readyz >/dev/null 2>&1 && break
	sleep 1
done
kubectl --kubeconfig "$kc" get --raw /readyz >/dev/null

# The one node: Ready, untainted, its network available.
kubectl --kubeconfig "$kc" create -f - >/dev/null <<'EOF'
apiVersion: v1
kind: Node
metadata: {name: node-1, labels: {kubernetes.io/hostname: node-1, kubernetes.io/os: linux}}
EOF
now="$(date -u +%Y-%m-%dT%H:%M:%SZ)"
kubectl --kubeconfig "$kc" patch node node-1 --subresource=status --type=merge -p "{\"status\":{
  \"conditions\":[{\"type\":\"Ready\",\"status\":\"True\",\"reason\":\"KubeletReady\",\"message\":\"a Node object of upstream-one-node.sh\",\"lastHeartbeatTime\":\"$now\",\"lastTransitionTime\":\"$now\"},
                  {\"type\":\"NetworkUnavailable\",\"status\":\"False\",\"reason\":\"RouteCreated\",\"message\":\"\",\"lastHeartbeatTime\":\"$now\",\"lastTransitionTime\":\"$now\"}],
  \"capacity\":{\"cpu\":\"2\",\"memory\":\"4Gi\",\"pods\":\"110\"},\"allocatable\":{\"cpu\":\"2\",\"memory\":\"4Gi\",\"pods\":\"110\"}}}" >/dev/null

# kube-apiserver's TaintNodesByCondition admission gave the new node the
# not-ready taint, which only the node lifecycle controller takes off.
kubectl --kubeconfig "$kc" taint nodes node-1 node.kubernetes.io/not-ready:NoSchedule- >/dev/null

# No kube-controller-manager runs, so no namespace gets a default
# ServiceAccount: the specs' framework is told not to wait for it.
set +e
"$e2e" --kubeconfig "$kc" --provider skeleton --e2e-verify-service-account=false \
	--ginkgo.focus "\[Conformance\].*($1)|($1).*\[Conformance\]" --ginkgo.no-color --ginkgo.v >"$out/e2e.log" 2>&1
rc=$?
set -e
grep -E '^\s*\[(FAILED|PASSED)\]|^(Ran|FAIL|SUCCESS)|Conformance requires|needs a cluster' "$out/e2e.log" | sed 's/^/upstream-one-node: /'
echo "upstream-one-node: e2e.test exit $rc (log: $out/e2e.log)"
