#!/usr/bin/env bash
# bench/buildkit.sh: BuildKit for bench/run.sh, built from source at a
# pinned version and run on this machine. By hand only, never in CI: it
# needs root (buildkitd's runc worker), about 1 GB of Go modules and a few
# minutes of compiling.
#
#   bash bench/buildkit.sh build    fetch github.com/moby/buildkit@$BUILDKIT_VERSION from the Go module
#                                   proxy, build buildkitd and buildctl; install runc from Debian if missing
#   bash bench/buildkit.sh start    start buildkitd (runc worker, loopback registry allowed over http)
#                                   and print the environment run.sh needs
#   bash bench/buildkit.sh env      print that environment again
#   bash bench/buildkit.sh stop     stop the buildkitd started here
#
# Then, in the same shell:
#   eval "$(bash bench/buildkit.sh env)" && bash bench/run.sh
#
# Why not `go install github.com/moby/buildkit/cmd/buildkitd@v0.29.0`:
# BuildKit's go.mod has exclude directives, which `go install pkg@version`
# refuses. Why not `go build -mod=vendor`: module zips leave vendored
# packages out (only vendor/modules.txt is kept). So the module is
# downloaded, copied to a writable directory and built there as the main
# module, with -mod=mod: its go.mod and go.sum pin every dependency (and
# its exclude directives apply), which come from the module proxy.
#
# Environment:
#   BUILDKIT_VERSION     default v0.29.0
#   BUILDKIT_DIR         where sources, binaries and state go (default ~/.cache/pallet-bench/buildkit-VERSION)
#   BENCH_REGISTRY_PORT  the loopback registry's port, which buildkitd may reach over http (default 5055;
#                        run.sh starts its registry there when this is set)
set -euo pipefail

BUILDKIT_VERSION=${BUILDKIT_VERSION:-v0.29.0}
DIR=${BUILDKIT_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/pallet-bench/buildkit-$BUILDKIT_VERSION}
PORT=${BENCH_REGISTRY_PORT:-5055}
SOCK=$DIR/run/buildkitd.sock
PIDFILE=$DIR/run/buildkitd.pid

say() { printf '[buildkit.sh] %s\n' "$*" >&2; }

build() {
	mkdir -p "$DIR/bin"
	say "downloading github.com/moby/buildkit@$BUILDKIT_VERSION from the module proxy"
	local src
	src=$(cd "$DIR" && GOFLAGS=-mod=mod go mod download -json "github.com/moby/buildkit@$BUILDKIT_VERSION" |
		sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
	[[ -n $src && -f $src/go.mod ]] || { say "no module directory for buildkit@$BUILDKIT_VERSION"; exit 1; }
	rm -rf "$DIR/src"
	cp -r "$src" "$DIR/src"
	chmod -R u+w "$DIR/src"
	say "building buildkitd and buildctl (go build -mod=mod; dependencies from the proxy)"
	(cd "$DIR/src" && CGO_ENABLED=0 GOFLAGS=-mod=mod go build -trimpath \
		-ldflags "-X github.com/moby/buildkit/version.Version=$BUILDKIT_VERSION" \
		-o "$DIR/bin/" ./cmd/buildkitd ./cmd/buildctl)
	"$DIR/bin/buildctl" --version
	if ! command -v runc >/dev/null; then
		say "installing runc from Debian"
		if [[ $(id -u) -eq 0 ]]; then
			apt-get install -y runc
		else
			sudo apt-get install -y runc
		fi
	fi
	runc --version | head -n 1
}

config() {
	mkdir -p "$DIR/run" "$DIR/root"
	cat >"$DIR/buildkitd.toml" <<EOF
# Written by bench/buildkit.sh.
root = "$DIR/root"

[worker.oci]
  enabled = true

[worker.containerd]
  enabled = false

# bench/run.sh's registry (bench/workload serve) speaks plain http.
[registry."127.0.0.1:$PORT"]
  http = true
  insecure = true
EOF
}

env_lines() {
	[[ -s $PIDFILE ]] || { say "buildkitd is not started (bash bench/buildkit.sh start)"; exit 1; }
	echo "export BUILDKIT_HOST=unix://$SOCK"
	echo "export BUILDCTL=$DIR/bin/buildctl"
	echo "export BUILDKITD_PID=$(cat "$PIDFILE")"
	echo "export BENCH_REGISTRY_PORT=$PORT"
}

start() {
	[[ -x $DIR/bin/buildkitd ]] || { say "not built yet: bash bench/buildkit.sh build"; exit 1; }
	[[ $(id -u) -eq 0 ]] || { say "buildkitd's runc worker needs root"; exit 1; }
	if [[ -s $PIDFILE ]] && kill -0 "$(cat "$PIDFILE")" 2>/dev/null; then
		say "buildkitd is running already (pid $(cat "$PIDFILE"))"
		env_lines
		return
	fi
	config
	say "starting buildkitd (log: $DIR/run/buildkitd.log)"
	"$DIR/bin/buildkitd" --config "$DIR/buildkitd.toml" --addr "unix://$SOCK" >"$DIR/run/buildkitd.log" 2>&1 &
	echo $! >"$PIDFILE"
	for _ in $(seq 100); do
		"$DIR/bin/buildctl" --addr "unix://$SOCK" debug workers >/dev/null 2>&1 && break
		sleep 0.2
	done
	"$DIR/bin/buildctl" --addr "unix://$SOCK" debug workers >&2 || {
		say "buildkitd did not come up"
		tail -n 30 "$DIR/run/buildkitd.log" >&2
		exit 1
	}
	env_lines
}

stop() {
	if [[ -s $PIDFILE ]]; then
		kill "$(cat "$PIDFILE")" 2>/dev/null || true
		rm -f "$PIDFILE"
		say "buildkitd stopped"
	fi
}

case ${1:-} in
build) build ;;
start) start ;;
env) env_lines ;;
stop) stop ;;
*)
	sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d' | sed 's/^# \{0,1\}//' >&2
	exit 2
	;;
esac
