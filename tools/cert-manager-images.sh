#!/usr/bin/env bash
# cert-manager's images for the test node, made here without a Docker engine or an image registry:
# its controller, webhook and cainjector (static binaries, `tools/build.sh cert-manager`), each
# alone in an image built `from scratch` with buildah, with the CA bundle of the Debian base that
# tools/images.sh makes (for issuers reached over HTTPS, as the distroless base of cert-manager's
# own images gives them), running as uid 1000 as cert-manager's images do.
#
#   localhost/svc/cert-manager-<controller|webhook|cainjector>:<version>-<hash>
#
# The hash is of the binary and the CA bundle: an image is cached as an OCI archive under
# $SVC_IMAGES_DIR (default ~/.cache/svc-images) and rebuilt only when either changes.
#
#   tools/cert-manager-images.sh                build the three; prints name, reference, size of
#                                               the binary, size of the archive (tab-separated)
#   tools/cert-manager-images.sh import SOCKET  build, then import them into the containerd at
#                                               SOCKET (namespace k8s.io)
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
cache=${SVC_IMAGES_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/svc-images}
export PATH=$PATH:/usr/local/go/bin
mkdir -p "$cache"

case ${1:-} in
  '' | import) ;;
  *) echo "usage: tools/cert-manager-images.sh [import SOCKET]" >&2; exit 2 ;;
esac

env -u SVC_KUBE_VERSION "$here/build.sh" cert-manager >&2
bin=$(env -u SVC_KUBE_VERSION "$here/build.sh" --print)
version=$(readlink "$bin/cert-manager-controller")
version=${version#cert-manager-controller-}

# The Debian base (built once, cached by tools/images.sh) lends its CA bundle.
debian=$("$here/images.sh" bases | awk -F'\t' '$1=="debian" {print $2}')
[[ -n $debian ]] || { echo "cert-manager-images: no Debian base from tools/images.sh bases" >&2; exit 1; }
cabundle=$cache/cert-manager-ca-certificates.crt
c=$(buildah from "$debian")
trap 'buildah rm "$c" >/dev/null 2>&1 || true' EXIT
mnt=$(buildah mount "$c")
cp "$mnt/etc/ssl/certs/ca-certificates.crt" "$cabundle.tmp" && mv "$cabundle.tmp" "$cabundle"
buildah umount "$c" >/dev/null

: >"$cache/cert-manager-built.tsv"
for name in controller webhook cainjector; do
  binary=$(readlink -f "$bin/cert-manager-$name")
  key=$(cat "$binary" "$cabundle" | sha256sum | cut -c1-12)
  ref=localhost/svc/cert-manager-$name:$version-$key
  archive=$cache/cert-manager-$name-$version-$key.oci.tar
  if [[ -f $archive ]]; then
    echo "images: cert-manager-$name $ref (cached)" >&2
  else
    start=$(date +%s)
    w=$(buildah from scratch)
    buildah copy --chmod 0755 "$w" "$binary" "/app/cmd/$name" >/dev/null
    buildah copy --chmod 0644 "$w" "$cabundle" /etc/ssl/certs/ca-certificates.crt >/dev/null
    buildah config --user 1000:1000 --entrypoint "[\"/app/cmd/$name\"]" \
      --label "org.opencontainers.image.version=$version" \
      --label "org.opencontainers.image.source=https://github.com/cert-manager/cert-manager" "$w"
    buildah commit --quiet --rm "$w" "oci-archive:$archive.tmp:$ref" >/dev/null
    mv "$archive.tmp" "$archive"
    echo "images: built cert-manager-$name in $(($(date +%s) - start))s" >&2
  fi
  printf '%s\t%s\t%s\t%s\n' "cert-manager-$name" "$ref" "$(du -h "$binary" | cut -f1)" "$(du -h "$archive" | cut -f1)" |
    tee -a "$cache/cert-manager-built.tsv"
done

if [[ ${1:-} == import ]]; then
  socket=${2:?cert-manager-images.sh import SOCKET}
  while IFS=$'\t' read -r name ref _; do
    ctr -a "$socket" -n k8s.io images import --all-platforms "$cache/$name-${ref##*:}.oci.tar" >/dev/null
    echo "images: imported $ref" >&2
  done <"$cache/cert-manager-built.tsv"
fi
