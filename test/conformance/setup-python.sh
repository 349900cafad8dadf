#!/usr/bin/env bash
# Installs Debian's Python gRPC stack (if missing) and compiles OUR .proto files
# for the independent conformance/benchmark clients in this directory.
#
#   usage: test/conformance/setup-python.sh OUT_DIR
#
# Needs root for apt-get (only when something is missing). Idempotent: it skips
# apt-get when the modules import, and regenerates OUT_DIR/<group>_<version>/
# every time (cheap). Silent on success; on failure prints the error and exits
# non-zero.
#
# Per group/version it writes, into OUT_DIR/<group>_<version>/:
#   api.desc          FileDescriptorSet of proto/<group>/<version>/api.proto
#                     (what call_all.py / bench.py load, each into its own
#                     private descriptor pool)
#   api_pb2.py, api_pb2_grpc.py
#                     classic generated stubs, for ad-hoc use of ONE
#                     group/version per process (every file is named
#                     "api.proto", so two of them cannot be imported into the
#                     default descriptor pool of the same process).
set -euo pipefail

PY=/usr/bin/python3   # Debian's interpreter; the pyenv python3 on PATH has no grpc
PKGS=(python3-grpcio python3-protobuf python3-grpc-tools)

if [ $# -ne 1 ] || [ -z "$1" ]; then
  echo "usage: $0 OUT_DIR" >&2
  exit 2
fi
OUT=$1

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
PROTO_ROOT=$ROOT/proto

have_modules() {
  [ -x "$PY" ] && "$PY" -c 'import grpc, grpc.aio, grpc_tools.protoc, google.protobuf.json_format' >/dev/null 2>&1
}

if ! have_modules; then
  if [ "$(id -u)" != 0 ]; then
    echo "setup-python.sh: ${PKGS[*]} missing and not root; run: apt-get install -y ${PKGS[*]}" >&2
    exit 1
  fi
  log=$(mktemp)
  export DEBIAN_FRONTEND=noninteractive
  echo "setup-python.sh: installing ${PKGS[*]} with apt-get ..." >&2
  if ! apt-get install -y -q "${PKGS[@]}" >"$log" 2>&1; then
    # package lists absent or stale: refresh once, then retry
    if ! { apt-get update -q && apt-get install -y -q "${PKGS[@]}"; } >"$log" 2>&1; then
      cat "$log" >&2
      rm -f "$log"
      echo "setup-python.sh: apt-get install ${PKGS[*]} failed" >&2
      exit 1
    fi
  fi
  rm -f "$log"
  if ! have_modules; then
    echo "setup-python.sh: installed ${PKGS[*]} but $PY still cannot import grpc/grpc_tools" >&2
    exit 1
  fi
fi

mkdir -p "$OUT"
# drop output of group/versions whose proto no longer exists
for d in "$OUT"/*_*/; do
  [ -f "$d/api.desc" ] || continue
  name=$(basename "$d")
  [ -f "$PROTO_ROOT/${name%%_*}/${name#*_}/api.proto" ] || rm -rf "$d"
done
count=0
for proto in "$PROTO_ROOT"/*/*/api.proto; do
  [ -e "$proto" ] || continue
  dir=$(dirname "$proto")
  version=$(basename "$dir")
  group=$(basename "$(dirname "$dir")")
  dest=$OUT/${group}_${version}
  rm -rf "$dest"
  mkdir -p "$dest"
  # -I is the proto's own directory, so each file is compiled on its own and
  # the same-named packages (v1, v1alpha1, ...) of different groups never meet.
  if ! "$PY" -m grpc_tools.protoc -I "$dir" \
      --include_imports --descriptor_set_out="$dest/api.desc" \
      --python_out="$dest" --grpc_python_out="$dest" \
      "$proto"; then
    echo "setup-python.sh: protoc failed for $proto" >&2
    exit 1
  fi
  count=$((count + 1))
done

if [ "$count" -eq 0 ]; then
  echo "setup-python.sh: no proto files under $PROTO_ROOT/<group>/<version>/api.proto" >&2
  exit 1
fi
