#!/usr/bin/env bash
# generate.sh regenerates zz_generated.openapi.go with kube-openapi's openapi-gen,
# pinned to the k8s.io/kube-openapi version in go.mod so the output is reproducible.
# The inputs are the packages of the kinds the API server serves (and those the
# issues 25 and 26 add: autoscaling/v2, admissionregistration/v1, events/v1,
# storage/v1, apiextensions/v1, metrics v1beta1), Glassplane's own
# glassplane.io/v1alpha1 (api/v1alpha1, issue 27), plus the ones
# their fields reach: autoscaling/v1 for the scale subresource's Scale, and
# scheduling/v1alpha3 for batch/v1 JobSchedulingConfiguration's fields.
set -euo pipefail

pkg_dir="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo_root="$(cd "${pkg_dir}/../../.." && pwd)"
cd "${repo_root}"

kube_openapi_version="$(go list -m -f '{{.Version}}' k8s.io/kube-openapi)"

pkgs=(
	k8s.io/api/core/v1
	k8s.io/api/apps/v1
	k8s.io/api/autoscaling/v1
	k8s.io/api/autoscaling/v2
	k8s.io/api/admissionregistration/v1
	k8s.io/api/events/v1
	k8s.io/api/storage/v1
	k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1
	k8s.io/metrics/pkg/apis/metrics/v1beta1
	github.com/glassplane/glassplane/api/v1alpha1
	k8s.io/apiserver/pkg/apis/audit/v1
	k8s.io/api/coordination/v1
	k8s.io/api/rbac/v1
	k8s.io/api/authorization/v1
	k8s.io/api/authentication/v1
	k8s.io/api/scheduling/v1
	k8s.io/api/scheduling/v1alpha3
	k8s.io/api/batch/v1
	k8s.io/api/discovery/v1
	k8s.io/api/networking/v1
	k8s.io/api/policy/v1
	k8s.io/api/node/v1
	k8s.io/api/flowcontrol/v1
	k8s.io/api/certificates/v1
	k8s.io/api/resource/v1
	k8s.io/api/storagemigration/v1
	k8s.io/kube-aggregator/pkg/apis/apiregistration/v1
	k8s.io/apimachinery/pkg/apis/meta/v1
	k8s.io/apimachinery/pkg/runtime
	k8s.io/apimachinery/pkg/api/resource
	k8s.io/apimachinery/pkg/util/intstr
	k8s.io/apimachinery/pkg/version
)
# Glassplane's own packages get their OpenAPIModelName accessors
# (zz_generated.model_name.go); the upstream ones already have theirs.
readonly=()
for p in "${pkgs[@]}"; do
	case "$p" in
	github.com/glassplane/*) ;;
	*) readonly+=(--readonly-pkg "$p") ;;
	esac
done

go run "k8s.io/kube-openapi/cmd/openapi-gen@${kube_openapi_version}" \
	--output-dir "${pkg_dir}" \
	--output-pkg github.com/glassplane/glassplane/controlplane/apiserver/openapi \
	--output-file zz_generated.openapi.go \
	--go-header-file /dev/null \
	--report-filename /dev/null \
	--output-model-name-file zz_generated.model_name.go \
	"${readonly[@]}" \
	"${pkgs[@]}"
