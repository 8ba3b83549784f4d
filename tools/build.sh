#!/usr/bin/env bash
# Builds the test binaries (etcd, kube-apiserver, kubectl, helm) from their Go modules
# with the machine's Go, and renders cert-manager's CRD manifests from its module zip.
# Nothing is downloaded except through the Go module proxy. Also builds the benchmark's load
# generator (tools/loadgen, our own code, standard library only), the Bento stream processor the
# gateway runs for streams (tools/bento), a Kafka wire-protocol broker for tests (tools/kfake) and
# a gRPC plugin server for the gateway's tests of gRPC plugins (tools/grpcplugin).
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
#
# Another Kubernetes version (the oldest minor the charts claim, docs/e2e-cluster.md): with
# SVC_KUBE_VERSION=v1.28.15 (a k8s.io/kubernetes tag) the commands above build only the
# Kubernetes binaries, at that version, into a folder of their own beside the default one
# (~/.cache/svc-tools/k8s-v1.28.15/bin); the default binaries are left as they are. Its wrapper
# module is written there too (k8s.io/kubernetes at that tag, its staging modules replaced by their
# v0 tags, the go line of its own go.mod); built with the tag providerless (no in-tree cloud
# providers, which 1.31 and later no longer have).
#   SVC_KUBE_VERSION=v1.28.15 tools/build.sh          kube-apiserver
#   SVC_KUBE_VERSION=v1.28.15 tools/build.sh node     kubelet, kube-controller-manager,
#                                                     kube-scheduler, kube-proxy
#   SVC_KUBE_VERSION=v1.28.15 tools/build.sh --print  the folder (the harness reads the same
#                                                     variable: e2e/harness/control-plane.ts)
set -euo pipefail
# The whole script is one block, parsed before it runs: an edit to this file (a shared working
# tree) does not change a run already started.
{

here=$(cd "$(dirname "$0")" && pwd)
out=${SVC_TOOLS_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/svc-tools/bin}
kube_version=${SVC_KUBE_VERSION:-}
if [[ -n $kube_version ]]; then
  [[ $kube_version =~ ^v1\.[0-9]+\.[0-9]+$ ]] || { echo "tools/build.sh: SVC_KUBE_VERSION=$kube_version is not a k8s.io/kubernetes tag like v1.28.15" >&2; exit 1; }
  out=$(dirname "$out")/k8s-$kube_version/bin
fi

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
    (cd "$dir" && CGO_ENABLED=0 go build -trimpath ${kube_tags:+-tags "$kube_tags"} -ldflags "-s -w $ldflags" -o "$target.tmp" "$pkg")
    mv "$target.tmp" "$target"
  fi
  ln -sf "$name-$version" "$out/$name"
}

# kube_module VERSION DIR: writes DIR/go.mod, a wrapper module of k8s.io/kubernetes at VERSION
# as tools/kube is of the default one: its staging modules (replaced by ./staging/... in its own
# go.mod) replaced by their published v0 tags, its own go line (so the GODEBUG defaults its
# release was built with); go.sum is filled by the first build (-mod=mod). Kept once written.
kube_module() {
  local version=$1 dir=$2 gomod
  [[ -f $dir/go.mod ]] && return 0
  mkdir -p "$dir"
  gomod=$(cd "$dir" && go mod download -json "k8s.io/kubernetes@$version" | awk -F'"' '$2=="GoMod" {print $4}')
  [[ -f $gomod ]] || { echo "tools/build.sh: the Go module proxy has no k8s.io/kubernetes $version" >&2; exit 1; }
  {
    echo "// Written by tools/build.sh (SVC_KUBE_VERSION=$version): k8s.io/kubernetes $version, its"
    echo "// staging modules replaced by their tags, as tools/kube/go.mod does for the default version."
    echo "module svc.io/tools/kube"
    echo
    awk '$1=="go" {print; exit}' "$gomod"
    echo
    echo "require k8s.io/kubernetes $version"
    echo
    echo "replace ("
    awk -v v="v0.${version#v1.}" '$2=="=>" && $3 ~ /^\.\/staging\// {printf "\t%s => %s %s\n", $1, $1, v}' "$gomod"
    echo ")"
  } >"$dir/go.mod.tmp"
  mv "$dir/go.mod.tmp" "$dir/go.mod"
}

kube=$(version_of "$here/kube" k8s.io/kubernetes)
kube_dir=$here/kube
kube_tags=""
if [[ -n $kube_version ]]; then
  kube=$kube_version
  kube_dir=$(dirname "$out")/module
  kube_module "$kube" "$kube_dir"
  export GOFLAGS="${GOFLAGS:+$GOFLAGS }-mod=mod"
  # Without the in-tree cloud providers (removed from 1.31 on, the default version has none): before
  # that they are most of the build (the Azure, GCE and vSphere SDKs), and no test uses them.
  kube_tags=providerless
fi
minor=${kube#v1.}; minor=${minor%%.*}
kv="-X k8s.io/component-base/version.gitVersion=$kube -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$minor -X k8s.io/component-base/version.gitTreeState=clean"

# The test node (e2e/harness/node.ts): not part of `make deps`, so `make test` does not wait for it.
if [[ ${1:-} == node ]]; then
  for cmd in kubelet kube-controller-manager kube-scheduler kube-proxy; do
    build "$kube_dir" "k8s.io/kubernetes/cmd/$cmd" "$cmd" "$kube" "$kv"
  done
  [[ -n $kube_version ]] && exit 0
  coredns=$(version_of "$here/coredns" github.com/coredns/coredns)
  build "$here/coredns" . coredns "$coredns-$(cat "$here/coredns/go.mod" "$here/coredns/go.sum" "$here/coredns/main.go" | sha256sum | cut -c1-12)"
  build "$here/pause" . pause "src-$(cat "$here/pause/go.mod" "$here/pause/main.go" | sha256sum | cut -c1-12)"
  exit 0
fi

# Another Kubernetes version: its kube-apiserver, nothing else (kubectl, etcd and the rest stay the
# default's: the version is the cluster's, not the client's).
if [[ -n $kube_version ]]; then
  [[ -z ${1:-} ]] || { echo "tools/build.sh: with SVC_KUBE_VERSION, only no argument, node or --print" >&2; exit 1; }
  build "$kube_dir" k8s.io/kubernetes/cmd/kube-apiserver kube-apiserver "$kube" "$kv"
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

# A gRPC plugin server built with grpc-go (tools/grpcplugin, our own code): the gateway's tests of
# gRPC plugins run it (gateway/middleware/plugins/grpc-go.test.ts). Versioned by its source.
build "$here/grpcplugin" . grpcplugin "$(src_of "$here/grpcplugin")"

etcd=$(version_of "$here/etcd" go.etcd.io/etcd/server/v3)

build "$here/etcd" go.etcd.io/etcd/server/v3 etcd "$etcd"
build "$here/kube" k8s.io/kubernetes/cmd/kube-apiserver kube-apiserver "$kube" "$kv"
build "$here/kube" k8s.io/kubernetes/cmd/kubectl kubectl "$kube" "$kv"

# Helm's Makefile stamps the Kubernetes version `helm template` and `helm lint` assume without a
# cluster (1.<client-go's minor>.0); unstamped it is v1.20.0, and a chart's kubeVersion above
# that fails to render. The binary's name carries it.
helm=$(version_of "$here/helm" helm.sh/helm/v3)
helm_k8s=$(version_of "$here/helm" k8s.io/client-go); helm_k8s=${helm_k8s#v0.}; helm_k8s=${helm_k8s%%.*}
helm_kv=""
for pkg in chartutil lint/rules; do
  helm_kv+=" -X helm.sh/helm/v3/pkg/$pkg.k8sVersionMajor=1 -X helm.sh/helm/v3/pkg/$pkg.k8sVersionMinor=$helm_k8s"
done
build "$here/helm" helm.sh/helm/v3/cmd/helm helm "$helm-k8s1.$helm_k8s" "-X helm.sh/helm/v3/internal/version.version=$helm$helm_kv"

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
