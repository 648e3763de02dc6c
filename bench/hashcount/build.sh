#!/bin/bash
# build.sh OUT: pallet with SHA-256 bytes counted per call site (written to
# $PALLET_SHA_COUNT at exit) and a CPU profile (to $PALLET_CPUPROFILE).
# sha256.go.txt is go1.26.8's crypto/sha256/sha256.go with a counting New;
# main.go.txt is cmd/pallet/main.go with the report written before os.Exit:
# refresh it from main.go when that changes.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../.." && pwd)
cat >"$here/overlay.json" <<JSON
{"Replace":{"$(go env GOROOT)/src/crypto/sha256/sha256.go":"$here/sha256.go.txt","$repo/cmd/pallet/main.go":"$here/main.go.txt"}}
JSON
(cd "$repo" && go build -overlay "$here/overlay.json" -o "$1" ./cmd/pallet)
rm "$here/overlay.json"
