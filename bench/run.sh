#!/usr/bin/env bash
# bench/run.sh: pallet's speed and memory benchmark (see bench/README.md).
#
# Generates an Antrea-sized Windows workload (~250 MB) and measures, in one
# run: pallet's cold build, no-op rebuild, one-file change and push to a
# loopback registry; the same work done with crane; with BuildKit when
# BUILDKIT_HOST is set; and pallet's peak RSS building a 1 GiB image.
# Writes bench/RESULTS.md (or $RESULTS).
#
# Environment:
#   REPS=5            repetitions of the quick measurements (median reported)
#   COLD_REPS=3       repetitions of cold builds (pallet, crane, BuildKit)
#   BUILDKIT_HOST     buildkitd address (e.g. tcp://127.0.0.1:1234); unset: BuildKit skipped
#   BUILDKIT_BASE     base image for the BuildKit build (default: Microsoft's host-process base)
#   BUILDCTL          buildctl binary (default: buildctl on PATH; from a BuildKit release)
#   RESULTS           where to write the report (default: bench/RESULTS.md)
#   WAIT_LOAD         wait (up to 5 min) for the 1-minute load average to fall under this first
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
RESULTS=${RESULTS:-$REPO/bench/RESULTS.md}
REPS=${REPS:-5}
COLD_REPS=${COLD_REPS:-3}
CRANE_VERSION=v0.22.1

WORK=$(mktemp -d "${TMPDIR:-/tmp}/pallet-bench.XXXXXX")
SERVE_PID=""
cleanup() {
	if [[ -n $SERVE_PID ]]; then
		kill "$SERVE_PID" 2>/dev/null || true
		wait "$SERVE_PID" 2>/dev/null || true
	fi
	rm -rf "$WORK"
}
trap cleanup EXIT
mkdir -p "$WORK/bin" "$WORK/log" "$WORK/rec"
TIMES=$WORK/times
: >"$TIMES"

say() { printf '[bench %s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }

# measure NAME CMD...: runs CMD (a program, not a function), appends
# "NAME SECONDS PEAK_RSS_KB CPU_SECONDS" to $TIMES. Wall time from
# date +%s.%N around /usr/bin/time -v, whose "Maximum resident set size" is
# the peak RSS (of the largest process of the tree) and whose user + system
# time is the CPU time. Output goes to log/NAME.N.
measure() {
	local name=$1 t0 t1 n
	shift
	n=$(count "$name")
	local log=$WORK/log/$name.$((n + 1))
	sync
	t0=$(date +%s.%N)
	if ! /usr/bin/time -v -o "$WORK/rss" "$@" >"$log" 2>&1; then
		say "FAILED: $name: $*"
		tail -n 30 "$log" >&2
		exit 1
	fi
	t1=$(date +%s.%N)
	local secs rss cpu
	secs=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.3f", b - a }')
	rss=$(awk -F': ' '/Maximum resident set size/ { print $2 }' "$WORK/rss")
	cpu=$(awk -F': ' '/(User|System) time \(seconds\)/ { s += $2 } END { printf "%.2f", s }' "$WORK/rss")
	echo "$name $secs $rss $cpu" >>"$TIMES"
	say "$name: ${secs}s (CPU ${cpu}s), peak RSS $rss KB"
}

# sum_last NAME: records NAME as the sum of the last two measurements
# (wall and CPU time; no RSS).
sum_last() {
	tail -n 2 "$TIMES" | awk -v n="$1" '{ s += $2; c += $4 } END { printf "%s %.3f 0 %.2f\n", n, s, c }' >>"$TIMES"
}

# med NAME: median seconds of NAME; max_rss NAME: largest peak RSS in MB.
med() {
	awk -v n="$1" '$1 == n { print $2 }' "$TIMES" | sort -g |
		awk '{ a[NR] = $1 } END { if (NR == 0) print "-"; else if (NR % 2) printf "%.3f\n", a[(NR + 1) / 2]; else printf "%.3f\n", (a[NR / 2] + a[NR / 2 + 1]) / 2 }'
}
max_rss() { awk -v n="$1" 'BEGIN { m = 0 } $1 == n && $3 > m { m = $3 } END { if (m == 0) print "-"; else printf "%.1f\n", m / 1024 }' "$TIMES"; }
# med_cpu NAME: median CPU seconds of NAME.
med_cpu() {
	awk -v n="$1" '$1 == n { print $4 }' "$TIMES" | sort -g |
		awk '{ a[NR] = $1 } END { if (NR == 0) print "-"; else if (NR % 2) printf "%.2f\n", a[(NR + 1) / 2]; else printf "%.2f\n", (a[NR / 2] + a[NR / 2 + 1]) / 2 }'
}
all() { awk -v n="$1" '$1 == n { printf "%s%s", sep, $2; sep = " " }' "$TIMES"; }
count() { awk -v n="$1" '$1 == n { c++ } END { print c + 0 }' "$TIMES"; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "-" || b == "-" || b == 0) print "-"; else printf "%.2f\n", a / b }'; }
# le A B: "yes" when A <= B.
le() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "-" || b == "-") print "-"; else print (a <= b ? "yes" : "no") }'; }

cd "$WORK"

say "building pallet, the workload helper and crane $CRANE_VERSION"
(cd "$REPO" && go build -o "$WORK/bin/pallet" ./cmd/pallet && (cd bench && go build -o "$WORK/bin/workload" ./workload))
GOBIN=$WORK/bin go install "github.com/google/go-containerregistry/cmd/crane@$CRANE_VERSION"
PALLET=$WORK/bin/pallet
CRANE=$WORK/bin/crane
WL=$WORK/bin/workload

say "generating the Windows workload"
"$WL" gen windows "$WORK/win" | tee "$WORK/log/gen-windows"
WIN=$WORK/win
WORKLOAD_BYTES=$(du -sb "$WIN/agent" "$WIN/dlls" | awk '{ s += $1 } END { print s }')

if [[ -n ${WAIT_LOAD:-} ]]; then
	say "waiting (at most 5 min) for the 1-minute load average to fall under $WAIT_LOAD"
	for _ in $(seq 60); do
		awk -v max="$WAIT_LOAD" '{ exit !($1 < max) }' /proc/loadavg && break
		sleep 5
	done
fi
LOAD_START=$(cut -d' ' -f1-3 /proc/loadavg)

say "starting the loopback registry and file server"
"$WL" serve -files "$WIN/releases" -storage "$WORK/registry" -addrs "$WORK/addrs" >"$WORK/log/serve" 2>&1 &
SERVE_PID=$!
for _ in $(seq 100); do
	[[ -s $WORK/addrs ]] && break
	sleep 0.1
done
[[ -s $WORK/addrs ]] || { say "the helper did not start"; cat "$WORK/log/serve" >&2; exit 1; }
# shellcheck disable=SC1091
source "$WORK/addrs" # REGISTRY=127.0.0.1:PORT, FILES=http://127.0.0.1:PORT

# pb RECORD_NAME OUTPUT: sets PB to the pallet build command line, with
# the bench's cache and its own record file (timed commands are run
# directly, not through a shell function).
pb() {
	PB=("$PALLET" build -f "$WIN/pallet.yaml" --arg "RELEASES=$FILES" --cache-dir "$WORK/cache"
		--record "$WORK/rec/$1.json" -o "$2" --progress plain)
}

# ---------------------------------------------------------------- cold builds
# crane has no recipe: the same work is staged by hand. One directory per
# layer, as pallet lays the image out (archives downloaded, verified and
# unpacked, licences under /LICENSES/), local inputs hard-linked (no copy),
# each tarred with tar --sort=name, then appended by crane onto pallet's
# host-process base (pushed to the loopback registry, since crane reads
# its base from a registry). On a Windows base crane rewrites each tar into
# the Windows layer format (Files/, Hives/) and gzips it, and writes the
# image as a tarball (-o): no push.
stage() { # DIR: the four layer directories under DIR, and their tars
	local s=$1
	rm -rf "$s"
	mkdir -p "$s/dl" "$s/x" "$s/layer1/k/antrea/bin" "$s/layer2/k/antrea" \
		"$s/layer3/k/antrea/cni" "$s/layer3/LICENSES/cni-plugins" "$s/layer4/LICENSES/ovs"
	curl -sSf -o "$s/dl/cni.tgz" "$FILES/containernetworking/plugins/releases/download/v1.4.0/cni-plugins-windows-amd64-v1.4.0.tgz"
	curl -sSf -o "$s/dl/ovs.zip" "$FILES/antrea-io/antrea/releases/download/v2.2.0/ovs-3.0.5-antrea.1-win64.zip"
	(cd "$s/dl" && sha256sum --quiet -c "$WIN/sums.txt")
	ln "$WIN/agent/antrea-agent.exe" "$s/layer1/k/antrea/bin/"
	cp -al "$WIN/dlls" "$s/layer2/k/antrea/lib"
	tar -xzf "$s/dl/cni.tgz" -C "$s/layer3/k/antrea/cni" --strip-components=1
	mv "$s/layer3/k/antrea/cni/LICENSE" "$s/layer3/LICENSES/cni-plugins/"
	unzip -q "$s/dl/ovs.zip" -d "$s/x"
	mv "$s/x/openvswitch" "$s/layer4/openvswitch"
	mv "$s/layer4/openvswitch/LICENSE" "$s/layer4/LICENSES/ovs/"
	if [[ ${2:-} != notar ]]; then
		for l in 1 2 3 4; do
			tar --sort=name --mtime=@0 --owner=0 --group=0 --numeric-owner -cf "$s/layer$l.tar" -C "$s/layer$l" .
		done
	fi
}
CRANE_APPEND=("$CRANE" append --platform windows/amd64 -b "$REGISTRY/bench-base:v1"
	-f "$WORK/stage/layer1.tar" -f "$WORK/stage/layer2.tar" -f "$WORK/stage/layer3.tar" -f "$WORK/stage/layer4.tar"
	-t "$REGISTRY/crane-append:v1" -o "$WORK/stage/image.tar")
"$PALLET" build -f "$WIN/base/pallet.yaml" --cache-dir "$WORK/base-cache" --record "$WORK/rec/base.json" \
	-o "registry:$REGISTRY/bench-base:v1" -q
export -f stage
export FILES WIN

# Cold builds of pallet and crane alternate (and take turns going first),
# so that both see the same machine: other load, page cache, writeback.
crane_cold() {
	rm -rf "$WORK/stage"
	measure crane-stage bash -c 'set -euo pipefail; stage "$0"' "$WORK/stage"
	measure crane-append "${CRANE_APPEND[@]}"
	sum_last crane-cold
}
pallet_cold() {
	rm -rf "$WORK/cache" "$WORK/out"
	pb cold "oci:$WORK/out"
	measure cold "${PB[@]}"
}
say "cold builds: pallet (fresh --cache-dir) and crane, $COLD_REPS each, alternating"
for i in $(seq "$COLD_REPS"); do
	if ((i % 2)); then
		pallet_cold
		crane_cold
	else
		crane_cold
		pallet_cold
	fi
done
CRANE_IMAGE_MB=$(tar -tvf "$WORK/stage/image.tar" | awk '$6 ~ /tar.gz$/ { s += $3 } END { printf "%.1f", s / 1048576 }')
rm -rf "$WORK/stage"

# ---------------------------------------------------------------- rebuilds
# The cache keeps the digests of input files older than 2 s only (a
# younger file could still change within the mtime granularity); sources
# on a real machine are older than that, and so are the archives pallet
# unpacked into its cache once 2 s have passed.
sleep 2.5
say "pallet: no-op rebuilds"
pb noop "oci:$WORK/out"
measure noop-first "${PB[@]}"
for i in $(seq "$REPS"); do
	measure noop "${PB[@]}"
done

say "pallet: one-file changes (a different DLL rewritten each time)"
for i in $(seq "$REPS"); do
	n=$(((i * 37) % 400))
	"$WL" modify "$WIN/$(printf 'dlls/pkg%02d/lib%03d.dll' $((n % 20)) "$n")" "$i"
	pb onefile "oci:$WORK/out"
	measure onefile "${PB[@]}"
done
sleep 2.5
pb noop "oci:$WORK/out"
measure noop "${PB[@]}"
IMAGE_SUMMARY=$("$PALLET" inspect "oci:$WORK/out" | grep -E 'layers, ' | sed 's/^ *//')

# ---------------------------------------------------------------- push
say "push: pallet (build from cache, then push) vs crane push of the same layout"
for i in $(seq "$REPS"); do
	# Alternate who goes first: the registry keeps every blob once, so
	# whoever pushes a blob second only adds a link at commit.
	pb push "registry:$REGISTRY/pallet-$i:v1"
	if ((i % 2)); then
		measure push-pallet "${PB[@]}"
		measure push-crane "$CRANE" push "$WORK/out" "$REGISTRY/crane-$i:v1"
	else
		measure push-crane "$CRANE" push "$WORK/out" "$REGISTRY/crane-$i:v1"
		measure push-pallet "${PB[@]}"
	fi
done
PALLET_DIGEST=$("$CRANE" digest "$REGISTRY/pallet-1:v1")
CRANE_DIGEST=$("$CRANE" digest "$REGISTRY/crane-1:v1")

# ---------------------------------------------------------------- BuildKit
BK_STATUS="skipped: no BUILDKIT_HOST"
BUILDCTL_VERSION="-"
if [[ -n ${BUILDKIT_HOST:-} ]]; then
	# buildctl cannot be go-installed (BuildKit's go.mod has exclude
	# directives): it comes from PATH, or $BUILDCTL.
	BUILDCTL=${BUILDCTL:-$(command -v buildctl || true)}
	if [[ -z $BUILDCTL ]]; then
		BK_STATUS="skipped: BUILDKIT_HOST set but no buildctl on PATH (set BUILDCTL)"
	else
		BUILDCTL_VERSION=$("$BUILDCTL" --version 2>&1 | head -n 1)
		BK_STATUS="measured against $BUILDKIT_HOST"
		BK=("$BUILDCTL" build --frontend dockerfile.v0 --progress plain
			--local "context=$WORK/bkstage" --local "dockerfile=$WIN"
			--opt platform=windows/amd64
			--opt "build-arg:BASE=${BUILDKIT_BASE:-mcr.microsoft.com/oss/kubernetes/windows-host-process-containers-base-image:v1.0.0}"
			--output "type=oci,dest=$WORK/bk-image.tar")
		say "BuildKit: cold builds ($COLD_REPS, --no-cache)"
		# The COPY-only Dockerfile needs the archives unpacked in its
		# context: that staging (as for crane, without the tars) is timed
		# and counted in BuildKit's cold time.
		for i in $(seq "$COLD_REPS"); do
			measure bk-stage bash -c 'set -euo pipefail; stage "$0" notar' "$WORK/bkstage"
			measure bk-build "${BK[@]}" --no-cache
			sum_last bk-cold
		done
		say "BuildKit: no-op and one-file rebuilds"
		for i in $(seq "$REPS"); do
			measure bk-noop "${BK[@]}"
		done
		for i in $(seq "$REPS"); do
			n=$(((i * 53) % 400))
			# The staged DLLs are hard links to the workload's: rewrite a
			# copy, as an editor would, so only the context changes.
			f=$WORK/bkstage/layer2/k/antrea/lib/$(printf 'pkg%02d/lib%03d.dll' $((n % 20)) "$n")
			cp "$f" "$f.new" && mv "$f.new" "$f"
			"$WL" modify "$f" "bk$i"
			measure bk-onefile "${BK[@]}"
		done
		rm -rf "$WORK/bkstage" "$WORK/bk-image.tar"
	fi
fi

# ---------------------------------------------------------------- memory
say "memory: a 1 GiB image (4 x 256 MiB incompressible files, linux/amd64 on scratch)"
"$WL" gen memory "$WORK/mem"
rm -rf "$WORK/cache" "$WORK/out" # free the disk; the memory build gets its own cache
measure mem-build "$PALLET" build -f "$WORK/mem/pallet.yaml" --cache-dir "$WORK/mem-cache" \
	--record "$WORK/rec/mem.json" -o "oci:$WORK/mem-out" --progress plain
MEM_IMAGE=$("$PALLET" inspect "oci:$WORK/mem-out" | grep -E 'layers, ' | sed 's/^ *//')
measure mem-push "$PALLET" build -f "$WORK/mem/pallet.yaml" --cache-dir "$WORK/mem-cache" \
	--record "$WORK/rec/mem-push.json" -o "registry:$REGISTRY/bench-memory:v1" --progress plain

# ---------------------------------------------------------------- report
say "writing $RESULTS"
COLD=$(med cold)
NOOP=$(med noop)
NOOP_FIRST=$(med noop-first)
ONEFILE=$(med onefile)
PUSH_P=$(med push-pallet)
PUSH_C=$(med push-crane)
CRANE_COLD=$(med crane-cold)
BK_COLD=$(med bk-cold)
MEM_RSS=$(max_rss mem-build)
GIT_REV=$(git -C "$REPO" rev-parse --short HEAD)
if [[ -n $(git -C "$REPO" status --porcelain 2>/dev/null) ]]; then
	GIT_REV="$GIT_REV (working tree has uncommitted changes)"
fi
CPU=$(awk -F': ' '/^model name/ { print $2; exit }' /proc/cpuinfo)
MEM_TOTAL=$(awk '/^MemTotal/ { printf "%.1f GiB", $2 / 1048576 }' /proc/meminfo)
steps() { # the step lines pallet printed in the last run of NAME
	local n
	n=$(count "$1")
	grep -vE '^\s*$' "$WORK/log/$1.$n" | sed -e "s|$WORK|\$WORK|g" |
		awk '$NF ~ /^[0-9.]+s$/ { t = $NF; $NF = ""; sub(/ +$/, ""); printf "    %-58s %8s\n", $0, t; next } { print "    " $0 }'
}
target() { # VERDICT: "met", "missed" or "not measured"
	case $1 in yes) echo "**met**" ;; no) echo "**missed**" ;; *) echo "not measured" ;; esac
}
BK_SPEEDUP=$(ratio "$BK_COLD" "$COLD")
T_COLD=$(if [[ $BK_SPEEDUP == - ]]; then echo -; else le 5 "$BK_SPEEDUP"; fi)
PUSH_RATIO=$(ratio "$PUSH_P" "$PUSH_C")
T_PUSH=$(le "$PUSH_RATIO" 1.1)
T_NOOP=$(le "$NOOP" 0.1)
T_MEM=$(awk -v a="$MEM_RSS" 'BEGIN { print (a < 150 ? "yes" : "no") }')

row() { # NAME LABEL
	printf '| %s | %s | %s | %s | %s | %s |\n' "$2" "$(med "$1")" "$(all "$1")" "$(med_cpu "$1")" "$(max_rss "$1")" "$(count "$1")"
}
{
	cat <<EOF
# pallet benchmark results

Generated by \`bash bench/run.sh\` (see [README.md](README.md)); every
number below comes from the same run. Times are wall-clock seconds, the
median of the runs listed; CPU is user + system time of the process tree
(median); RSS is the largest peak resident set size (\`/usr/bin/time -v\`)
over those runs. Load average at start / end of the run: $LOAD_START / $(cut -d' ' -f1-3 /proc/loadavg)
(other work on the machine inflates wall times; CPU times are steadier).

## Machine and versions

| | |
|---|---|
| date | $(date -u '+%Y-%m-%d %H:%M:%S UTC') |
| uname -a | \`$(uname -a)\` |
| CPU | $CPU, $(nproc) CPUs (nproc) |
| memory | $MEM_TOTAL |
| go | $(go version) |
| pallet | $GIT_REV |
| crane | $("$CRANE" version) (go install ...crane@$CRANE_VERSION) |
| buildctl | $BUILDCTL_VERSION |
| registry | distribution/v3 in-process on 127.0.0.1, filesystem storage (bench/workload) |

## Workload

Antrea-sized Windows image (windows/amd64 on \`windows-hostprocess-scratch\`),
generated deterministically by \`bench/workload\`: an 80 MiB PE binary
(local file), 400 PE "DLLs" of 200-500 KiB in 20 directories (local
directory), a CNI-plugins-like .tgz and an OVS-like .zip (url artifacts
served over loopback HTTP, sha256-pinned, unpacked). Contents are
synthetic bytes shaped so that gzip -6 shrinks them and spends time on
them about as much as on real Go binaries (~50%).

- workload: $(head -n 1 "$WORK/log/gen-windows")
- local inputs: $(awk -v b="$WORKLOAD_BYTES" 'BEGIN { printf "%.1f MB", b / 1e6 }')
- pallet's image: $IMAGE_SUMMARY (gzip)
- crane's image: $CRANE_IMAGE_MB MiB of layers (its gzip is BestSpeed, single-threaded)

## Results

| measurement | median s | runs (s) | median CPU s | peak RSS MB | n |
|---|---|---|---|---|---|
EOF
	row cold "pallet cold build (fresh --cache-dir, oci output)"
	row noop-first "pallet first rebuild after cold (hashes the unpacked archives once)"
	row noop "pallet no-op rebuild (oci output)"
	row onefile "pallet one-file change (one DLL rewritten, oci output)"
	row push-pallet "pallet push (\`build -o registry:\`, from cache, new repository)"
	row push-crane "crane push of pallet's OCI layout (new repository)"
	row crane-stage "crane path: download, verify, unpack, hard-link, tar 4 layers"
	row crane-append "crane path: \`crane append\` onto the Windows base, -o tarball"
	row crane-cold "crane cold total (stage + append)"
	if [[ $(count bk-build) -gt 0 ]]; then
		row bk-stage "BuildKit path: download, verify, unpack into the context"
		row bk-build "BuildKit: \`buildctl build --no-cache\`"
		row bk-cold "BuildKit cold total (stage + build)"
		row bk-noop "BuildKit no-op rebuild"
		row bk-onefile "BuildKit one-file change"
	fi
	row mem-build "pallet cold build of the 1 GiB image (linux/amd64)"
	row mem-push "pallet push of the 1 GiB image"
	cat <<EOF

BuildKit: $BK_STATUS.

## Ratios

| ratio | value |
|---|---|
| no-op / cold | $(ratio "$NOOP" "$COLD") |
| one-file / cold | $(ratio "$ONEFILE" "$COLD") |
| push: pallet / crane | $PUSH_RATIO |
| cold: crane / pallet (pallet is this many times faster) | $(ratio "$CRANE_COLD" "$COLD") |
| cold CPU time: crane / pallet | $(ratio "$(med_cpu crane-cold)" "$(med_cpu cold)") |
| push CPU time (client): pallet / crane | $(ratio "$(med_cpu push-pallet)" "$(med_cpu push-crane)") |
| cold: BuildKit / pallet | $BK_SPEEDUP |
| no-op: BuildKit / pallet | $(ratio "$(med bk-noop)" "$NOOP") |
| one-file: BuildKit / pallet | $(ratio "$(med bk-onefile)" "$ONEFILE") |

The pushed images are identical: pallet $PALLET_DIGEST, crane $CRANE_DIGEST.

## Targets

| target | measured | verdict |
|---|---|---|
| cold ≥ 5× faster than BuildKit (Windows workload) | $(if [[ $BK_SPEEDUP == - ]]; then echo "BuildKit $BK_STATUS"; else echo "${BK_SPEEDUP}×"; fi) | $(target "$T_COLD") |
| push ≤ 1.1× crane's time | ${PUSH_RATIO}× (${PUSH_P} s vs ${PUSH_C} s) | $(target "$T_PUSH") |
| no-op ≤ 0.1 s | ${NOOP} s (median; first rebuild after cold ${NOOP_FIRST} s) | $(target "$T_NOOP") |
| peak RSS < 150 MB building a 1 GiB image | ${MEM_RSS} MB (\`/usr/bin/time -v\` "Maximum resident set size"; push of it: $(max_rss mem-push) MB) | $(target "$T_MEM") |

The 1 GiB image: $MEM_IMAGE.

## Where the time goes (pallet's own step timings, last run of each)

Cold build:

$(steps cold)

One-file change:

$(steps onefile)

No-op rebuild:

$(steps noop)

Push:

$(steps push-pallet)

1 GiB image, cold:

$(steps mem-build)
EOF
} >"$RESULTS"
say "done: $RESULTS"
