#!/usr/bin/env bash
# Builds the test binaries (etcd, kube-apiserver, kubectl, helm) from their Go modules
# with the machine's Go, and renders cert-manager's CRD manifests from its module zip.
# Nothing is downloaded except through the Go module proxy. Also builds the benchmark's load
# generator (tools/loadgen, our own code, standard library only), the Bento stream processor the
# gateway runs for streams (tools/bento) and a Kafka wire-protocol broker for tests (tools/kfake).
#
# Binaries land in $SVC_TOOLS_DIR (default ~/.cache/svc-tools/bin), each under a
# name that carries its version, and are reused when present: a second run is a no-op.
#
#   tools/build.sh            build everything missing
#   tools/build.sh --print    print the directory the binaries live in
#   tools/build.sh loadgen    build only the load generator (what `make bench-gateway` needs)
#   tools/build.sh streams    build only Bento and the Kafka broker (what streams tests need)
#   tools/build.sh node       build only the test node's binaries (what `make node` needs):
#                             kubelet, kube-controller-manager, kube-scheduler, kube-proxy (the
#                             kube-apiserver's version), CoreDNS and the sandbox's pause
#   tools/build.sh cert-manager build only cert-manager's controller, webhook and cainjector and
#                             put its Helm chart together (what the node's cert-manager needs;
#                             tools/cert-manager-images.sh runs it)
set -euo pipefail
# The whole script is one block, parsed before it runs: an edit to this file (a shared working
# tree) does not change a run already started.
{

here=$(cd "$(dirname "$0")" && pwd)
out=${SVC_TOOLS_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/svc-tools/bin}

if [[ ${1:-} == --print ]]; then
  echo "$out"
  exit 0
fi

command -v go >/dev/null || { echo "tools/build.sh: Go is required (https://go.dev), none on PATH" >&2; exit 1; }
mkdir -p "$out"

# version_of MODULE_DIR MODULE: the version go.mod requires.
version_of() { awk -v m="$2" '$1=="require" && $2==m {print $3} $1==m {print $2}' "$1/go.mod" | head -n1; }

# build MODULE_DIR PACKAGE NAME VERSION [LDFLAGS]
build() {
  local dir=$1 pkg=$2 name=$3 version=$4 ldflags=${5:-}
  local target="$out/$name-$version"
  if [[ -x $target ]]; then
    echo "tools: $name $version (cached)"
  else
    echo "tools: building $name $version (first time only, a few minutes)"
    (cd "$dir" && CGO_ENABLED=0 go build -trimpath -ldflags "-s -w $ldflags" -o "$target.tmp" "$pkg")
    mv "$target.tmp" "$target"
  fi
  ln -sf "$name-$version" "$out/$name"
}

kube=$(version_of "$here/kube" k8s.io/kubernetes)
minor=${kube#v1.}; minor=${minor%%.*}
kv="-X k8s.io/component-base/version.gitVersion=$kube -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$minor -X k8s.io/component-base/version.gitTreeState=clean"

# The test node (e2e/harness/node.ts): not part of `make deps`, so `make test` does not wait for it.
if [[ ${1:-} == node ]]; then
  for cmd in kubelet kube-controller-manager kube-scheduler kube-proxy; do
    build "$here/kube" "k8s.io/kubernetes/cmd/$cmd" "$cmd" "$kube" "$kv"
  done
  coredns=$(version_of "$here/coredns" github.com/coredns/coredns)
  build "$here/coredns" . coredns "$coredns-$(cat "$here/coredns/go.mod" "$here/coredns/go.sum" "$here/coredns/main.go" | sha256sum | cut -c1-12)"
  build "$here/pause" . pause "src-$(cat "$here/pause/go.mod" "$here/pause/main.go" | sha256sum | cut -c1-12)"
  exit 0
fi

# cert-manager (tools/cert-manager/go.mod pins the version): its controller, webhook and
# cainjector built from the module zip, and its Helm chart put together from the zip as its
# release does (cert_manager_chart). The test node's cert-manager (e2e/node/cert-manager.ts); not
# part of `make deps`.
cm=$(version_of "$here/cert-manager" github.com/cert-manager/cert-manager)
cm_src() { (cd "$here/cert-manager" && go mod download -json "github.com/cert-manager/cert-manager@$cm" | awk -F'"' '$2=="Dir" {print $4}'); }

# cert_manager_chart SRC: deploy/charts/cert-manager with its Chart.yaml stamped with the version
# and deploy/crds/ concatenated into templates/crds.yaml behind installCRDs, as cert-manager's
# Bazel rules of that version package it (deploy/charts/cert-manager/BUILD.bazel, build/files.bzl).
cert_manager_chart() {
  local src=$1 chart="$out/cert-manager-chart-$cm"
  [[ -d $chart ]] && { ln -sfn "cert-manager-chart-$cm" "$out/cert-manager-chart"; return 0; }
  rm -rf "$chart.tmp" && cp -r "$src/deploy/charts/cert-manager" "$chart.tmp" && chmod -R u+w "$chart.tmp"
  rm -f "$chart.tmp"/BUILD.bazel "$chart.tmp"/templates/BUILD.bazel "$chart.tmp"/OWNERS
  sed -e "s/^version: .*/version: $cm/" -e "s/^appVersion: .*/appVersion: $cm/" -e 's/{{IS_PRERELEASE}}/false/' \
    "$chart.tmp/Chart.template.yaml" >"$chart.tmp/Chart.yaml"
  rm "$chart.tmp/Chart.template.yaml"
  {
    echo '{{- if .Values.installCRDs }}'
    for crd in certificaterequests certificates challenges clusterissuers issuers orders; do
      cat "$src/deploy/crds/crd-$crd.yaml" && echo '---'
    done
    echo '{{- end }}'
  } >"$chart.tmp/templates/crds.yaml"
  mv "$chart.tmp" "$chart"
  ln -sfn "cert-manager-chart-$cm" "$out/cert-manager-chart"
}

if [[ ${1:-} == cert-manager ]]; then
  src=$(cm_src)
  [[ -d $src/cmd/controller ]] || { echo "tools/build.sh: no cmd/controller in $src" >&2; exit 1; }
  # Built inside a writable copy of the module: its go.mod has replace directives (and v1.8 keeps
  # the three commands in the root module), which a wrapper module requiring it would drop.
  work=""
  for cmd in controller webhook cainjector; do
    if [[ ! -x $out/cert-manager-$cmd-$cm ]]; then
      [[ -n $work ]] || { work=$(mktemp -d) && cp -r "$src/." "$work" && chmod -R u+w "$work"; }
    fi
    build "${work:-$src}" "./cmd/$cmd" "cert-manager-$cmd" "$cm" "-X github.com/cert-manager/cert-manager/pkg/util.AppVersion=$cm"
  done
  [[ -z $work ]] || rm -rf "$work"
  cert_manager_chart "$src"
  exit 0
fi

# loadgen is versioned by its source: a change to it builds a new binary.
loadgen=src-$(cat "$here/loadgen/go.mod" "$here/loadgen/main.go" | sha256sum | cut -c1-12)
build "$here/loadgen" . loadgen "$loadgen"
[[ ${1:-} == loadgen ]] && exit 0

# Bento and kfake are versioned by their module version and the wrapper's source (the component
# packages main.go imports): a change to the wrapper builds a new binary.
src_of() { cat "$1/go.mod" "$1/go.sum" "$1/main.go" | sha256sum | cut -c1-12; }
build "$here/bento" . bento "$(version_of "$here/bento" github.com/warpstreamlabs/bento)-$(src_of "$here/bento")"
build "$here/kfake" . kfake "$(src_of "$here/kfake")"
[[ ${1:-} == streams ]] && exit 0

etcd=$(version_of "$here/etcd" go.etcd.io/etcd/server/v3)

build "$here/etcd" go.etcd.io/etcd/server/v3 etcd "$etcd"
build "$here/kube" k8s.io/kubernetes/cmd/kube-apiserver kube-apiserver "$kube" "$kv"
build "$here/kube" k8s.io/kubernetes/cmd/kubectl kubectl "$kube" "$kv"

helm=$(version_of "$here/helm" helm.sh/helm/v3)
build "$here/helm" helm.sh/helm/v3/cmd/helm helm "$helm" "-X helm.sh/helm/v3/internal/version.version=$helm"

# cert-manager's CRDs, for server-side dry-runs of the chart's Issuer and Certificate: rendered
# from its chart (templates/crds.yaml, the version the test node runs), as plain manifests.
crds="$out/cert-manager-crds-$cm"
if [[ -d $crds ]]; then
  echo "tools: cert-manager CRDs $cm (cached)"
else
  echo "tools: rendering cert-manager CRDs $cm"
  cert_manager_chart "$(cm_src)"
  rm -rf "$crds.tmp" && mkdir -p "$crds.tmp"
  "$out/helm" template cert-manager "$out/cert-manager-chart-$cm" --namespace cert-manager \
    --set installCRDs=true --show-only templates/crds.yaml >"$crds.tmp/crds.yaml"
  mv "$crds.tmp" "$crds"
fi
ln -sfn "cert-manager-crds-$cm" "$out/cert-manager-crds"
exit
}
