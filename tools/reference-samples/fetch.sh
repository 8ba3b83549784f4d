#!/bin/sh
# Downloads the reference operator's sample manifests listed in samples.tsv (each at its commit)
# into <dir>, for measure.ts. They are MPL-2.0 and not copied into this repository.
#
#   tools/reference-samples/fetch.sh <dir> && node tools/reference-samples/measure.ts <dir>
#
# REFERENCE_RAW overrides where they come from (default: GitHub's raw file host).
set -eu
dir=${1:?usage: fetch.sh <dir>}
base=${REFERENCE_RAW:-https://raw.githubusercontent.com/TykTechnologies/tyk-operator}
tab=$(printf '\t')
grep -v '^#' "$(dirname "$0")/samples.tsv" | while IFS=$tab read -r file ref; do
  out="$dir/${file#config/samples/}"
  mkdir -p "$(dirname "$out")"
  curl -fsSL "$base/$ref/$file" -o "$out"
done
