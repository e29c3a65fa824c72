#!/usr/bin/env bash
# Build the secondbrain images (and, with --test, the Caddy, PostgreSQL and Prometheus images
# the compose test runs) with podman, from Debian packages alone: no container registry needed.
#
#   docker/images.sh            base + secondbrain-node + secondbrain-center
#   docker/images.sh --test     … and the three test images of tests/deploy/containers/images/
#
# The base is a Debian bookworm root file system made by mmdebstrap from the host's apt
# sources, cached as a tarball under .cache/images/ (delete it to rebuild). pip inside the
# build reaches the package index as the host does: the host's CA bundle is handed to the
# build as a secret, so it never lands in an image layer. Prints each image's size.
set -euo pipefail
cd "$(dirname "$0")/.."

cache=.cache/images
mkdir -p "$cache"
export CONTAINERS_CONF="${CONTAINERS_CONF:-$PWD/tests/deploy/containers/containers.conf}"
base=localhost/secondbrain-base:bookworm
tag="${SECONDBRAIN_IMAGE_TAG:-test}"
started=$SECONDS

if [ ! -s "$cache/base-bookworm.tar" ]; then
  # No docs, manual pages or translations: a runtime image reads none of them.
  mmdebstrap --format=tar --variant=apt --include=python3,python3-venv,ca-certificates \
    --dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-exclude=/usr/share/man/*' \
    --dpkgopt='path-exclude=/usr/share/locale/*' --dpkgopt='path-exclude=/usr/share/info/*' \
    bookworm "$cache/base-bookworm.tar.part" >"$cache/mmdebstrap.log" 2>&1 \
    || { tail -n 20 "$cache/mmdebstrap.log" >&2; exit 1; }
  mv "$cache/base-bookworm.tar.part" "$cache/base-bookworm.tar"
fi
if ! podman image exists "$base" \
  || [ "$(podman image inspect --format '{{index .Labels "tarball"}}' "$base" 2>/dev/null)" \
       != "$(stat -c %Y "$cache/base-bookworm.tar")" ]; then
  podman import --quiet --change "LABEL tarball=$(stat -c %Y "$cache/base-bookworm.tar")" \
    "$cache/base-bookworm.tar" "$base" >/dev/null
fi

secrets=()
ca="${SECONDBRAIN_BUILD_CA:-${PIP_CERT:-/etc/ssl/certs/ca-certificates.crt}}"
[ -s "$ca" ] && secrets+=(--secret "id=pip_ca,src=$ca")

build() {  # build TARGET-OR-DIR IMAGE
  local what=$1 image=$2
  if [ -d "$what" ]; then
    podman build --quiet --format docker --network host --build-arg "BASE=$base" \
      -t "$image" "$what" >/dev/null
  else
    podman build --quiet --format docker --network host "${secrets[@]}" \
      --build-arg "PYTHON_IMAGE=$base" --build-arg "COMMIT=$(git rev-parse --short HEAD 2>/dev/null || true)" \
      -f docker/Dockerfile --target "$what" -t "$image" . >/dev/null
  fi
  printf '%-44s %s\n' "$image" "$(podman image inspect --format '{{.Size}}' "$image" \
    | awk '{printf "%.0f MB", $1 / 1000000}')"
}

build node "localhost/secondbrain-node:$tag"
build center "localhost/secondbrain-center:$tag"
if [ "${1:-}" = "--test" ]; then
  for name in caddy postgres prometheus; do
    build "tests/deploy/containers/images/$name" "localhost/secondbrain-test-$name:latest"
  done
fi
echo "images built in $((SECONDS - started)) s"
