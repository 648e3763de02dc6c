#!/bin/bash
# build.sh OUT: pallet with SHA-256 bytes counted per call site (written to
# $PALLET_SHA_COUNT at exit), a CPU profile (to $PALLET_CPUPROFILE) and an
# allocation profile (to $PALLET_MEMPROFILE).
# sha256.go.txt is go1.26.8's crypto/sha256/sha256.go with a counting New;
# profile.go.txt is added to cmd/pallet; main.go gets a call to atExit
# before its os.Exit, made here from the current main.go so that no copy
# of it is kept.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
sed 's/^\tos\.Exit(code)$/\tatExit()\n&/' "$repo/cmd/pallet/main.go" >"$tmp/main.go"
grep -q '^	atExit()$' "$tmp/main.go" || { echo "build.sh: main.go no longer ends main with os.Exit(code); update the sed" >&2; exit 1; }
cat >"$tmp/overlay.json" <<JSON
{"Replace":{
 "$(go env GOROOT)/src/crypto/sha256/sha256.go":"$here/sha256.go.txt",
 "$repo/cmd/pallet/main.go":"$tmp/main.go",
 "$repo/cmd/pallet/zz_profile.go":"$here/profile.go.txt"}}
JSON
(cd "$repo" && go build -overlay "$tmp/overlay.json" -o "$1" ./cmd/pallet)
