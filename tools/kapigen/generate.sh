#!/usr/bin/env bash
# make generate-kubeapi: regenerate internal/services/kubeapi/openapi/*.gz,
# the OpenAPI documents and the server-side-apply schema of podhost's
# Kubernetes API (see main.go for the files), from the served table in
# served.go. Run it after a change of served.go or of the k8s.io modules
# in go.mod, and commit the result; the output is byte-for-byte the same
# for the same inputs and Go release.
#
#  1. this module's k8s.io/api, apimachinery, kube-openapi and
#     structured-merge-diff are set to the main module's versions (and
#     k8s.io/apiserver, client-go, metrics to k8s.io/api's), so that the
#     documents describe the types podhost links;
#  2. openapi-gen (the kube-openapi of go.mod, a `tool` of this module)
#     writes internal/openapi/zz_generated.openapi.go (not committed);
#  3. kapigen serves the table from a generic API server and writes the
#     documents (main.go).
set -euo pipefail
cd "$(dirname "$0")"
GO=${GO:-go}
ROOT=$(cd ../.. && pwd)
OUT=$ROOT/internal/services/kubeapi/openapi

# version MODULE DIR: MODULE's version in the module at DIR ("" if none).
version() { (cd "$2" && $GO list -m -f '{{.Version}}' "$1" 2>/dev/null) || true; }

api=$(version k8s.io/api "$ROOT")
want=(
	"k8s.io/api@$api"
	"k8s.io/apimachinery@$(version k8s.io/apimachinery "$ROOT")"
	"k8s.io/apiserver@$api"
	"k8s.io/client-go@$api"
	"k8s.io/metrics@$api"
	"k8s.io/kube-openapi@$(version k8s.io/kube-openapi "$ROOT")"
	"sigs.k8s.io/structured-merge-diff/v6@$(version sigs.k8s.io/structured-merge-diff/v6 "$ROOT")"
)
sync=()
for mv in "${want[@]}"; do
	if [[ $mv == *@ ]]; then
		echo "generate.sh: ${mv%@} is not in $ROOT/go.mod" >&2
		exit 1
	fi
	[[ $(version "${mv%@*}" .) == "${mv#*@}" ]] || sync+=("$mv")
done
if ((${#sync[@]})); then
	echo "generate.sh: go get ${sync[*]}" >&2
	$GO get "${sync[@]}"
	$GO mod tidy
fi

mkdir -p "$OUT"
report=$(mktemp)
trap 'rm -f "$report"' EXIT
# API rule violations of k8s.io/api (kube-apiserver keeps a list of them)
# go to $report: they are upstream's, not ours.
$GO tool openapi-gen \
	--output-dir internal/openapi \
	--output-pkg github.com/podhost/podhost/tools/kapigen/internal/openapi \
	--output-file zz_generated.openapi.go \
	--go-header-file /dev/null \
	--report-filename "$report" \
	k8s.io/api/core/v1 \
	k8s.io/api/events/v1 \
	k8s.io/api/authorization/v1 \
	k8s.io/api/policy/v1 \
	k8s.io/api/apps/v1 \
	k8s.io/api/batch/v1 \
	k8s.io/api/scheduling/v1alpha3 \
	k8s.io/metrics/pkg/apis/metrics/v1beta1 \
	k8s.io/apimachinery/pkg/apis/meta/v1 \
	k8s.io/apimachinery/pkg/runtime \
	k8s.io/apimachinery/pkg/version \
	k8s.io/apimachinery/pkg/api/resource \
	k8s.io/apimachinery/pkg/util/intstr
$GO run . -out "$OUT"
echo "generate.sh: wrote $OUT" >&2
