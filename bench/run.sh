#!/usr/bin/env bash
# bench/run.sh: pallet's speed and memory benchmark (see bench/README.md).
#
# Measures, in one run, on generated workloads:
#   - an Antrea-sized Windows image (~250 MB): cold build, no-op rebuild,
#     one-file change, push; the same work with crane; with BuildKit, in
#     interleaved pairs (pallet, BuildKit, pallet, BuildKit, ...);
#   - the physical limit on this machine: the compressor alone and one
#     sha256 pass over the same bytes;
#   - many small files (10k and 100k): cold and no-op, against BuildKit;
#   - a 1 GiB image in 1, 4, 16 and 64 layers: peak RSS;
#   - a Go-only image, against ko (Go build cache warm), in pairs.
# Writes bench/RESULTS.md (or $RESULTS).
#
# Environment:
#   REPS=5            repetitions of the quick measurements (median reported)
#   COLD_REPS=3       repetitions of cold builds
#   BUILDKIT_HOST     buildkitd address; unset: BuildKit skipped (bench/buildkit.sh sets it up)
#   BUILDCTL          buildctl binary (default: buildctl on PATH)
#   BUILDKITD_PID     buildkitd's pid, to count its CPU time and peak RSS (bench/buildkit.sh sets it)
#   BUILDKIT_BASE     base of BuildKit's Windows build (default: pallet's host-process base in the loopback registry)
#   BENCH_REGISTRY_PORT  port of the loopback registry (default: any free one; buildkitd must be allowed
#                        to reach it over http, which bench/buildkit.sh configures)
#   SKIP_KO=1         do not go install ko
#   RESULTS           where to write the report (default: bench/RESULTS.md)
#   WAIT_LOAD         wait (up to 5 min) for the 1-minute load average to fall under this first
#   BENCH_SMALL=1     a smoke test of the script: 1,000 and 2,000 files instead of 10k and 100k, a
#                     16 MiB "1 GiB" image; its numbers mean nothing
set -euo pipefail

REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
RESULTS=${RESULTS:-$REPO/bench/RESULTS.md}
REPS=${REPS:-5}
COLD_REPS=${COLD_REPS:-3}
CRANE_VERSION=v0.22.1
KO_VERSION=v0.19.1
NPROC=$(nproc)
FILE_COUNTS="10000 100000"
MEM_PART=$((16 << 20))
if [[ -n ${BENCH_SMALL:-} ]]; then
	FILE_COUNTS="1000 2000"
	MEM_PART=$((256 << 10))
fi
BIG_FILES=$((${FILE_COUNTS##* } / 1000))k # the larger many-file workload, as named below
CLK_TCK=$(getconf CLK_TCK)

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
TIMES=$WORK/times # NAME SECONDS PEAK_RSS_KB CPU_SECONDS, one line per run
PAIRS=$WORK/pairs # WORKLOAD LOAD1 PALLET_SECONDS OTHER_SECONDS, one line per interleaved pair
: >"$TIMES"
: >"$PAIRS"

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
	bkd_settle
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

# buildkitd's CPU seconds so far (its own and its waited-for children's,
# runc), and its peak RSS in KB since reset_bkd_peak; 0 when unknown.
bkd_cpu() {
	[[ -n $BKPID && -r /proc/$BKPID/stat ]] || { echo 0; return; }
	awk -v t="$CLK_TCK" '{ sub(/^.*\) /, ""); printf "%.2f\n", ($12 + $13 + $14 + $15) / t }' "/proc/$BKPID/stat"
}
# bkd_settle: waits (at most 30 s) until buildkitd has used no CPU for
# half a second: whatever the daemon still does after buildctl has
# returned is not the next measurement's work, whoever's it is. measure
# calls it first.
bkd_settle() {
	[[ -n $BKPID ]] || return 0
	local a b
	a=$(bkd_cpu)
	for _ in $(seq 60); do
		sleep 0.5
		b=$(bkd_cpu)
		[[ $a == "$b" ]] && return 0
		a=$b
	done
}
reset_bkd_peak() { [[ -z $BKPID ]] || echo 5 >"/proc/$BKPID/clear_refs" 2>/dev/null || true; }
bkd_peak() { [[ -n $BKPID ]] && awk '/^VmHWM/ { print $2 }' "/proc/$BKPID/status" 2>/dev/null || echo 0; }

# measure_bk NAME CMD...: measure a buildctl command and count the
# daemon's CPU time and peak RSS with it (the work is done there).
measure_bk() {
	local c0 c1 peak last name secs rss cpu
	c0=$(bkd_cpu)
	reset_bkd_peak
	measure "$@"
	c1=$(bkd_cpu)
	peak=$(bkd_peak)
	last=$(tail -n 1 "$TIMES")
	sed -i '$d' "$TIMES"
	read -r name secs rss cpu <<<"$last"
	awk -v n="$name" -v s="$secs" -v r="$rss" -v p="$peak" -v c="$cpu" -v d0="$c0" -v d1="$c1" \
		'BEGIN { printf "%s %s %d %.2f\n", n, s, (p > r ? p : r), c + d1 - d0 }' >>"$TIMES"
}

# sum_last NAME: records NAME as the sum of the last two measurements
# (wall and CPU time; the larger peak RSS).
sum_last() {
	local lines
	lines=$(tail -n 2 "$TIMES")
	awk -v n="$1" '{ s += $2; c += $4; if ($3 > r) r = $3 } END { printf "%s %.3f %d %.2f\n", n, s, r, c }' <<<"$lines" >>"$TIMES"
}

# pair WORKLOAD A B LOAD: records the last runs of A (pallet) and B (the
# other tool) as one interleaved pair, with the load average before it.
last() { awk -v n="$1" '$1 == n { v = $2 } END { print v }' "$TIMES"; }
pair() { echo "$1 $4 $(last "$2") $(last "$3")" >>"$PAIRS"; }
load1() { cut -d' ' -f1 /proc/loadavg; }

median() { sort -g | awk '{ a[NR] = $1 } END { if (NR == 0) print "-"; else if (NR % 2) printf "%.3f\n", a[(NR + 1) / 2]; else printf "%.3f\n", (a[NR / 2] + a[NR / 2 + 1]) / 2 }'; }
# med NAME: median seconds of NAME; med_cpu NAME: median CPU seconds;
# max_rss NAME: largest peak RSS in MB.
med() { awk -v n="$1" '$1 == n { print $2 }' "$TIMES" | median; }
med_cpu() { awk -v n="$1" '$1 == n { print $4 }' "$TIMES" | median; }
max_rss() { awk -v n="$1" 'BEGIN { m = 0 } $1 == n && $3 > m { m = $3 } END { if (m == 0) print "-"; else printf "%.1f\n", m / 1024 }' "$TIMES"; }
all() { awk -v n="$1" '$1 == n { printf "%s%s", sep, $2; sep = " " }' "$TIMES"; }
count() { awk -v n="$1" '$1 == n { c++ } END { print c + 0 }' "$TIMES"; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "-" || b == "-" || a == "" || b == "" || b == 0) print "-"; else printf "%.2f\n", a / b }'; }
# pair_median WORKLOAD: median of OTHER / PALLET over the pairs.
pair_median() { awk -v w="$1" '$1 == w && $3 > 0 { print $4 / $3 }' "$PAIRS" | median | awk '{ print ($1 == "-" ? "-" : sprintf("%.2f", $1)) }'; }
# le A B: "yes" when A <= B; ge A B: when A >= B.
le() { awk -v a="$1" -v b="$2" 'BEGIN { if (a == "-" || b == "-") print "-"; else print (a <= b ? "yes" : "no") }'; }
ge() { le "$2" "$1"; }

cd "$WORK"

say "building pallet, the workload helper and crane $CRANE_VERSION"
# pallet, crane and ko are built as their releases are: cgo off, so
# statically linked. With cgo on (the go command's default where a C
# compiler is), net and os/user link libc dynamically, and the dynamic
# loader costs every command some 5 ms of start-up (a sixth of
# `pallet version`'s CPU), which a release binary does not pay.
(cd "$REPO" && CGO_ENABLED=0 go build -o "$WORK/bin/pallet" ./cmd/pallet && (cd bench && go build -o "$WORK/bin/workload" ./workload))
CGO_ENABLED=0 GOBIN=$WORK/bin go install "github.com/google/go-containerregistry/cmd/crane@$CRANE_VERSION"
PALLET=$WORK/bin/pallet
CRANE=$WORK/bin/crane
WL=$WORK/bin/workload
KO=""
KO_STATUS="skipped: SKIP_KO set"
if [[ -z ${SKIP_KO:-} ]]; then
	if CGO_ENABLED=0 GOBIN=$WORK/bin go install "github.com/google/ko@$KO_VERSION" >"$WORK/log/ko-install" 2>&1; then
		KO=$WORK/bin/ko
		KO_STATUS="ko $("$KO" version 2>/dev/null || echo "$KO_VERSION") (go install github.com/google/ko@$KO_VERSION)"
	else
		KO_STATUS="skipped: go install github.com/google/ko@$KO_VERSION failed: $(tail -n 1 "$WORK/log/ko-install")"
	fi
fi

BK_ON=""
BKPID=${BUILDKITD_PID:-}
BUILDCTL_VERSION="-"
BK_STATUS="skipped: BUILDKIT_HOST is not set (bench/buildkit.sh builds and starts BuildKit)"
if [[ -n ${BUILDKIT_HOST:-} ]]; then
	BUILDCTL=${BUILDCTL:-$(command -v buildctl || true)}
	if [[ -z $BUILDCTL ]]; then
		BK_STATUS="skipped: BUILDKIT_HOST is set but there is no buildctl (set BUILDCTL)"
	elif ! "$BUILDCTL" debug workers >"$WORK/log/bk-workers" 2>&1; then
		BK_STATUS="skipped: buildkitd at $BUILDKIT_HOST does not answer ($(tail -n 1 "$WORK/log/bk-workers"))"
	else
		BK_ON=1
		BUILDCTL_VERSION=$("$BUILDCTL" --version 2>&1 | head -n 1)
		BK_STATUS="measured against buildkitd at $BUILDKIT_HOST"
		if [[ -z $BKPID ]]; then
			BK_STATUS="$BK_STATUS (BUILDKITD_PID unset: its CPU time and RSS are not counted, only buildctl's)"
		fi
	fi
fi
say "BuildKit: $BK_STATUS; ko: $KO_STATUS"

say "generating the workloads"
"$WL" gen windows "$WORK/win" | tee "$WORK/log/gen-windows"
WIN=$WORK/win
WORKLOAD_BYTES=$(du -sb "$WIN/agent" "$WIN/dlls" | awk '{ s += $1 } END { print s }')
for n in $FILE_COUNTS; do
	"$WL" gen files "$WORK/files-$n" "$n"
done
"$WL" gen memory "$WORK/mem" "$MEM_PART"
"$WL" gen linux-base "$WORK/linux-base"

if [[ -n ${WAIT_LOAD:-} ]]; then
	say "waiting (at most 5 min) for the 1-minute load average to fall under $WAIT_LOAD"
	for _ in $(seq 60); do
		awk -v max="$WAIT_LOAD" '{ exit !($1 < max) }' /proc/loadavg && break
		sleep 5
	done
fi
LOAD_START=$(cut -d' ' -f1-3 /proc/loadavg)

say "starting the loopback registry and file server"
"$WL" serve -files "$WIN/releases" -storage "$WORK/registry" -addrs "$WORK/addrs" \
	-registry-addr "127.0.0.1:${BENCH_REGISTRY_PORT:-0}" >"$WORK/log/serve" 2>&1 &
SERVE_PID=$!
for _ in $(seq 100); do
	[[ -s $WORK/addrs ]] && break
	sleep 0.1
done
[[ -s $WORK/addrs ]] || { say "the helper did not start"; cat "$WORK/log/serve" >&2; exit 1; }
# shellcheck disable=SC1091
source "$WORK/addrs" # REGISTRY=127.0.0.1:PORT, FILES=http://127.0.0.1:PORT

# pb RECORD_NAME OUTPUT: sets PB to the pallet build command line of the
# Windows workload, with the bench's cache and its own record file (timed
# commands are run directly, not through a shell function).
pb() {
	PB=("$PALLET" build -f "$WIN/pallet.yaml" --arg "RELEASES=$FILES" --cache-dir "$WORK/cache"
		--record "$WORK/rec/$1.json" -o "$2" --progress plain)
}

# ---------------------------------------------------------------- Windows: cold builds
# crane has no recipe: the same work is staged by hand. One directory per
# layer, as pallet lays the image out (archives downloaded, verified and
# unpacked, licences under /LICENSES/), local inputs hard-linked (no copy),
# each tarred with tar --sort=name, then appended by crane onto pallet's
# host-process base (pushed to the loopback registry, since crane reads
# its base from a registry). On a Windows base crane rewrites each tar into
# the Windows layer format (Files/, Hives/) and gzips it, and writes the
# image as a tarball (-o): no push. BuildKit gets the same staging, without
# the tars, as its context.
stage() { # DIR [notar]: the four layer directories under DIR, and their tars
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

if [[ -n $BK_ON ]]; then
	# The context is sent anew for every cold build (a new staging
	# directory, after pruning everything buildkitd kept); no-op and
	# one-file rebuilds export into the OCI directory of the run before,
	# as pallet's do.
	BKW=("$BUILDCTL" build --frontend dockerfile.v0 --progress plain
		--local "context=$WORK/bkstage" --local "dockerfile=$WIN"
		--opt platform=windows/amd64
		--opt "build-arg:BASE=${BUILDKIT_BASE:-$REGISTRY/bench-base:v1}"
		--output "type=oci,dest=$WORK/bk-out,tar=false")
fi
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
bk_cold() {
	"$BUILDCTL" prune --all >/dev/null
	rm -rf "$WORK/bkstage" "$WORK/bk-out"
	measure bk-stage bash -c 'set -euo pipefail; stage "$0" notar' "$WORK/bkstage"
	measure_bk bk-build "${BKW[@]}" --no-cache
	sum_last bk-cold
}
say "Windows cold builds: pallet (fresh --cache-dir), BuildKit (pruned, fresh context) and crane, $COLD_REPS each"
for i in $(seq "$COLD_REPS"); do
	# crane takes turns going first; pallet and BuildKit run back to back.
	if ((i % 2 == 0)); then
		crane_cold
	fi
	l=$(load1)
	pallet_cold
	if [[ -n $BK_ON ]]; then
		bk_cold
		pair win-cold cold bk-cold "$l"
	fi
	if ((i % 2 == 1)); then
		crane_cold
	fi
done
CRANE_IMAGE_MB=$(tar -tvf "$WORK/stage/image.tar" | awk '$6 ~ /tar.gz$/ { s += $3 } END { printf "%.1f", s / 1048576 }')
rm -rf "$WORK/stage"

# Staging for crane and BuildKit hard-links the workload's inputs, and
# removing a stage unlinks them: both change the inputs' ctime, which
# pallet's stamps include. The last timed cold build's note and memo then
# no longer match the inputs, and its next build would hash every input
# again (rightly: pallet cannot tell a changed link count from a changed
# file). The rebuilds below start from a cold build made once the inputs
# have settled, as a developer's next build would.
sleep 2.5
rm -rf "$WORK/cache" "$WORK/out"
pb cold "oci:$WORK/out"
"${PB[@]}" >"$WORK/log/cold-settled" 2>&1

say "the physical limit: the compressor alone and one sha256 pass over the Windows image's layers"
"$WL" limit -jobs "$NPROC" "$WORK/out" | tee "$WORK/log/limit-win"

# ---------------------------------------------------------------- Windows: rebuilds
# The cache keeps the digests of input files older than 2 s only (a
# younger file could still change within the mtime granularity), and a
# build leaves a note that answers the next one only when every input is
# that old; sources on a real machine are older than that, and so are the
# archives pallet unpacked into its cache once 2 s have passed.
sleep 2.5
say "Windows no-op rebuilds"
pb noop "oci:$WORK/out"
measure noop-first "${PB[@]}"
[[ -z $BK_ON ]] || measure_bk bk-noop-first "${BKW[@]}"
for i in $(seq "$REPS"); do
	l=$(load1)
	measure noop "${PB[@]}"
	if [[ -n $BK_ON ]]; then
		measure_bk bk-noop "${BKW[@]}"
		pair win-noop noop bk-noop "$l"
	fi
done
# What the harness itself costs a process, on this machine: true, and an
# empty Go program (a Go runtime starting and exiting); and what pallet's
# start-up alone costs (pallet version: its binary loaded, every linked
# package's initializers run, nothing read). A no-op build that is
# answered from a note is mostly these; the rest is its own work.
mkdir -p "$WORK/empty"
printf 'package main\n\nfunc main() {}\n' >"$WORK/empty/main.go"
(cd "$WORK/empty" && CGO_ENABLED=0 GO111MODULE=off go build -o "$WORK/bin/empty" main.go)
for i in $(seq "$REPS"); do
	measure floor-true true
	measure floor-go "$WORK/bin/empty"
	measure floor-pallet "$PALLET" version
done
# The same no-op without the note the last build left in the cache
# (internal/uptodate): every input looked up in the digest memo, the
# artifacts and layers taken from the cache, the layout compared.
for i in $(seq "$REPS"); do
	rm -rf "$WORK/cache/uptodate"
	measure noop-full "${PB[@]}"
done

say "Windows one-file changes (a different DLL rewritten each time)"
for i in $(seq "$REPS"); do
	n=$(((i * 37) % 400))
	rel=$(printf 'pkg%02d/lib%03d.dll' $((n % 20)) "$n")
	"$WL" modify "$WIN/dlls/$rel" "$i"
	if [[ -n $BK_ON ]]; then
		# The staged DLLs are hard links to the workload's, changed with
		# it already; copy it over, as an editor would, so that its
		# status changes in the context as well.
		f=$WORK/bkstage/layer2/k/antrea/lib/$rel
		cp "$f" "$f.new" && mv "$f.new" "$f"
	fi
	l=$(load1)
	pb onefile "oci:$WORK/out"
	measure onefile "${PB[@]}"
	if [[ -n $BK_ON ]]; then
		measure_bk bk-onefile "${BKW[@]}"
		pair win-onefile onefile bk-onefile "$l"
	fi
done
sleep 2.5
pb noop "oci:$WORK/out"
measure noop "${PB[@]}"
IMAGE_SUMMARY=$("$PALLET" inspect "oci:$WORK/out" | grep -E 'layers, ' | sed 's/^ *//')
rm -rf "$WORK/bkstage" "$WORK/bk-out"
# Removing BuildKit's stage changed the inputs' ctime (see the rebuilds),
# so the next build hashes every input again: one untimed build takes
# their new stamps in, 2 s later, before the pushes.
sleep 2.5
"${PB[@]}" >"$WORK/log/noop-settled" 2>&1

# ---------------------------------------------------------------- push
say "push: pallet (build from cache, then push) vs crane push of the same layout"
# pallet remembers in its cache where it pushed each blob and mounts it
# from there into a new repository of the same registry (as docker push
# does; crane does not): push-pallet is that repeat push. push-pallet-first
# forgets those sources first, so it uploads every blob like crane: the
# like-for-like row.
push_pallet_first() {
	rm -rf "$WORK/cache/sources"
	pb push "registry:$REGISTRY/pallet-first-$i:v1"
	measure push-pallet-first "${PB[@]}"
}
for i in $(seq "$REPS"); do
	# Alternate who goes first: the registry keeps every blob once, so
	# whoever pushes a blob second only adds a link at commit.
	if ((i % 2)); then
		push_pallet_first
		measure push-crane "$CRANE" push "$WORK/out" "$REGISTRY/crane-$i:v1"
	else
		measure push-crane "$CRANE" push "$WORK/out" "$REGISTRY/crane-$i:v1"
		push_pallet_first
	fi
	pb push "registry:$REGISTRY/pallet-$i:v1"
	measure push-pallet "${PB[@]}"
done
PALLET_DIGEST=$("$CRANE" digest "$REGISTRY/pallet-1:v1")
CRANE_DIGEST=$("$CRANE" digest "$REGISTRY/crane-1:v1")
rm -rf "$WORK/cache" "$WORK/out"

# ---------------------------------------------------------------- many files
for n in $FILE_COUNTS; do
	k=$((n / 1000))k
	d=$WORK/files-$n
	say "many files ($k): cold builds and no-op rebuilds"
	PF=("$PALLET" build -f "$d/pallet.yaml" --cache-dir "$WORK/fcache" --record "$WORK/rec/files.json"
		-o "oci:$WORK/fout" --progress plain)
	if [[ -n $BK_ON ]]; then
		BKF=("$BUILDCTL" build --frontend dockerfile.v0 --progress plain --local "context=$d" --local "dockerfile=$d"
			--opt platform=linux/amd64 --output "type=oci,dest=$WORK/bkf-out,tar=false")
	fi
	for i in $(seq "$COLD_REPS"); do
		l=$(load1)
		rm -rf "$WORK/fcache" "$WORK/fout"
		measure "files$k-cold" "${PF[@]}"
		if [[ -n $BK_ON ]]; then
			"$BUILDCTL" prune --all >/dev/null
			rm -rf "$WORK/bkf-out"
			measure_bk "bk-files$k-cold" "${BKF[@]}" --no-cache
			pair "files$k-cold" "files$k-cold" "bk-files$k-cold" "$l"
		fi
	done
	sleep 2.5
	measure "files$k-noop-first" "${PF[@]}"
	[[ -z $BK_ON ]] || measure_bk "bk-files$k-noop-first" "${BKF[@]}"
	for i in $(seq "$REPS"); do
		l=$(load1)
		measure "files$k-noop" "${PF[@]}"
		if [[ -n $BK_ON ]]; then
			measure_bk "bk-files$k-noop" "${BKF[@]}"
			pair "files$k-noop" "files$k-noop" "bk-files$k-noop" "$l"
		fi
	done
	for i in $(seq "$REPS"); do
		rm -rf "$WORK/fcache/uptodate"
		measure "files$k-noop-full" "${PF[@]}"
	done
	rm -rf "$WORK/fcache" "$WORK/fout" "$WORK/bkf-out"
done

# ---------------------------------------------------------------- memory
say "memory: a 1 GiB image (64 x 16 MiB incompressible files, linux/amd64 on scratch) in 1, 4, 16 and 64 layers"
for n in 1 4 16 64; do
	rm -rf "$WORK/mem-cache" "$WORK/mem-out"
	measure "mem-$n" "$PALLET" build -f "$WORK/mem/pallet-$n.yaml" --cache-dir "$WORK/mem-cache" \
		--record "$WORK/rec/mem-$n.json" -o "oci:$WORK/mem-out" --progress plain
	if [[ $n == 4 ]]; then
		MEM_IMAGE=$("$PALLET" inspect "oci:$WORK/mem-out" | grep -E 'layers, ' | sed 's/^ *//')
		"$WL" limit -jobs "$NPROC" "$WORK/mem-out" | tee "$WORK/log/limit-mem"
		measure mem-push "$PALLET" build -f "$WORK/mem/pallet-4.yaml" --cache-dir "$WORK/mem-cache" \
			--record "$WORK/rec/mem-push.json" -o "registry:$REGISTRY/bench-memory:v1" --progress plain
	fi
done
rm -rf "$WORK/mem-cache" "$WORK/mem-out"

# ---------------------------------------------------------------- Go image vs ko
say "Go-only image: pallet vs ko, Go build cache warm"
"$PALLET" build -f "$WORK/linux-base/pallet.yaml" --cache-dir "$WORK/base-cache" --record "$WORK/rec/linux-base.json" \
	-o "registry:$REGISTRY/bench-linux-base:v1" -q
"$WL" gen go "$WORK/go" "$REGISTRY/bench-linux-base:v1"
PG=("$PALLET" build -f "$WORK/go/pallet.yaml" --cache-dir "$WORK/go-cache" --record "$WORK/rec/go.json"
	-o "oci:$WORK/go-out" --progress plain)
if [[ -n $KO ]]; then
	# ko names what it saved PATH@DIGEST, which must parse as a repository:
	# the layout goes to a lowercase path relative to the module, removed
	# after each run.
	KOB=(env -C "$WORK/go/app" "KO_DOCKER_REPO=$REGISTRY/ko" "KO_CONFIG_PATH=$WORK/go/app"
		"$KO" build --push=false --oci-layout-path ko-out --platform linux/amd64 --bare .)
fi
# Both build with -trimpath and cgo off: one untimed build of each first,
# so that the Go build cache is warm for both.
"${PG[@]}" >"$WORK/log/go-warm" 2>&1
if [[ -n $KO ]]; then
	"${KOB[@]}" >"$WORK/log/ko-warm" 2>&1
	rm -rf "$WORK/go/app/ko-out"
fi
# The Go workload's physical limit: the go build both tools run, alone,
# with the flags both pass (cgo off, -trimpath; pallet adds
# -buildvcs=false). Its link is most of either tool's time, and it is
# not cached, so no tool that runs it can be faster than it.
GB=(env -C "$WORK/go/app" CGO_ENABLED=0 GOOS=linux GOARCH=amd64
	go build -buildvcs=false -trimpath -o "$WORK/go-bare/benchapp" .)
"${GB[@]}" >"$WORK/log/go-bare-warm" 2>&1
for i in $(seq "$COLD_REPS"); do
	l=$(load1)
	rm -rf "$WORK/go-cache" "$WORK/go-out" "$WORK/go-bare"
	measure go-cold "${PG[@]}"
	if [[ -n $KO ]]; then
		measure ko-cold "${KOB[@]}"
		rm -rf "$WORK/go/app/ko-out"
		pair go-cold go-cold ko-cold "$l"
		l=$(load1)
		measure go-bare "${GB[@]}"
		measure ko-cold "${KOB[@]}"
		rm -rf "$WORK/go/app/ko-out"
		pair go-bare go-bare ko-cold "$l"
	else
		measure go-bare "${GB[@]}"
	fi
done

# ---------------------------------------------------------------- report
say "writing $RESULTS"
COLD=$(med cold)
NOOP=$(med noop)
NOOP_FIRST=$(med noop-first)
PUSH_P=$(med push-pallet-first)
PUSH_M=$(med push-pallet)
PUSH_C=$(med push-crane)
CRANE_COLD=$(med crane-cold)
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
# field NAME FILE: a NAME=VALUE of workload limit's output.
field() { tr ' ' '\n' <"$2" | awk -F= -v n="$1" '$1 == n { print $2 }'; }
# limit_row LABEL FILE PALLET_NAME: the physical limit and pallet's share of it.
# The limit is the compressor's own wall time, or the CPU time of
# compressing and hashing once spread over every core if that is longer.
limit_row() {
	local f=$2 lim
	lim=$(awk -v cw="$(field compress_s "$f")" -v cc="$(field compress_cpu_s "$f")" -v hc="$(field sha256_cpu_s "$f")" -v n="$NPROC" \
		'BEGIN { l = (cc + hc) / n; if (cw > l) l = cw; printf "%.3f", l }')
	printf '| %s | %.1f | %s / %s | %s / %s | %s | %s | %s | %s |\n' "$1" \
		"$(awk -v b="$(field bytes "$f")" 'BEGIN { print b / 1048576 }')" \
		"$(field compress_s "$f")" "$(field compress_cpu_s "$f")" "$(field sha256_s "$f")" "$(field sha256_cpu_s "$f")" \
		"$lim" "$(med "$3")" "$(ratio "$lim" "$(med "$3")")" "$(ratio "$(field compress_s "$f")" "$(med "$3")")"
}
row() { # NAME LABEL
	[[ $(count "$1") -gt 0 ]] || return 0
	printf '| %s | %s | %s | %s | %s | %s |\n' "$2" "$(med "$1")" "$(all "$1")" "$(med_cpu "$1")" "$(max_rss "$1")" "$(count "$1")"
}
pairs_table() { # WORKLOAD OTHER_TOOL
	awk -v w="$1" '$1 == w { i++; printf "| %d | %s | %.3f | %.3f | %.2f |\n", i, $2, $3, $4, ($3 > 0 ? $4 / $3 : 0) }' "$PAIRS"
}
BK_COLD_X=$(pair_median win-cold)
BK_NOOP_X=$(pair_median win-noop)
BK_ONEFILE_X=$(pair_median win-onefile)
BK_F100_X=$(pair_median "files$BIG_FILES-noop")
KO_X=$(pair_median go-cold)
KO_BARE_X=$(pair_median go-bare)
PUSH_RATIO=$(ratio "$PUSH_P" "$PUSH_C")
PUSH_M_RATIO=$(ratio "$PUSH_M" "$PUSH_C")
COMPRESS_SHARE=$(ratio "$(field compress_s "$WORK/log/limit-win")" "$COLD")
MEM_MAX=$(for n in 1 4 16 64; do max_rss "mem-$n"; done | sort -g | tail -n 1)
F100_RSS=$(for r in "files$BIG_FILES-cold" "files$BIG_FILES-noop"; do max_rss "$r"; done | sort -g | tail -n 1)

{
	cat <<EOF
# pallet benchmark results

Generated by \`bash bench/run.sh\` (see [README.md](README.md)); every
number below comes from the same run. Times are wall-clock seconds, the
median of the runs listed; CPU is user + system time of the process tree
(median; for BuildKit, buildctl's and buildkitd's); RSS is the largest peak
resident set size over those runs (\`/usr/bin/time -v\`; for BuildKit,
buildkitd's VmHWM). Load average at start / end of the run: $LOAD_START / $(cut -d' ' -f1-3 /proc/loadavg)
(other work on the machine inflates wall times; CPU times are steadier,
and each pallet / BuildKit pair below carries its own load).

## Machine and versions

| | |
|---|---|
| date | $(date -u '+%Y-%m-%d %H:%M:%S UTC') |
| uname -a | \`$(uname -a)\` |
| CPU | $CPU, $NPROC CPUs (nproc) |
| memory | $MEM_TOTAL |
| go | $(go version) |
| pallet | $GIT_REV |
| crane | $("$CRANE" version) (go install ...crane@$CRANE_VERSION) |
| ko | $KO_STATUS |
| BuildKit | $BUILDCTL_VERSION; $BK_STATUS |
| registry | distribution/v3 in-process on 127.0.0.1, filesystem storage (bench/workload) |

## Workloads

- Windows, Antrea-sized (windows/amd64 on \`windows-hostprocess-scratch\`): $(head -n 1 "$WORK/log/gen-windows");
  local inputs $(awk -v b="$WORKLOAD_BYTES" 'BEGIN { printf "%.1f MB", b / 1e6 }'); pallet's image: $IMAGE_SUMMARY (gzip);
  crane's: $CRANE_IMAGE_MB MiB of layers (its gzip is BestSpeed, single-threaded)
- many files: ${FILE_COUNTS// / and } files of 100-2100 bytes in directories of 100, one layer on scratch
- memory: 64 × $((MEM_PART >> 10)) KiB of random bytes on scratch, in 1, 4, 16 and 64 layers (the 4-layer image: $MEM_IMAGE)
- Go: a small standard-library HTTP server, built by pallet's \`go\` artifact and by ko, on the same
  minimal base in the loopback registry (ko cannot start from scratch); the Go build cache is warm

## Results

| measurement | median s | runs (s) | median CPU s | peak RSS MB | n |
|---|---|---|---|---|---|
EOF
	row cold "Windows: pallet cold build (fresh --cache-dir, oci output)"
	row noop-first "Windows: pallet first rebuild after cold"
	row noop "Windows: pallet no-op rebuild (oci output; answered from the last build's note)"
	row noop-full "Windows: pallet no-op rebuild without the note (the full path, from the cache)"
	row floor-true "harness floor: \`true\` measured as every command here is (fork, exec, /usr/bin/time)"
	row floor-go "harness floor: an empty Go program (the Go runtime starting and exiting)"
	row floor-pallet "harness floor: \`pallet version\` (pallet starting and exiting: its binary loaded, its packages' initializers run)"
	row onefile "Windows: pallet one-file change (one DLL rewritten, oci output)"
	row bk-stage "Windows: BuildKit staging (download, verify, unpack into the context)"
	row bk-build "Windows: BuildKit \`buildctl build --no-cache\` after \`prune --all\`"
	row bk-cold "Windows: BuildKit cold total (stage + build)"
	row bk-noop-first "Windows: BuildKit first rebuild after cold"
	row bk-noop "Windows: BuildKit no-op rebuild (into the existing OCI directory)"
	row bk-onefile "Windows: BuildKit one-file change"
	row push-pallet-first "Windows: pallet push (\`build -o registry:\`, from cache, new repository, no remembered sources: every blob uploaded)"
	row push-pallet "Windows: pallet push (as above, remembering the previous push: blobs mounted from it)"
	row push-crane "Windows: crane push of pallet's OCI layout (new repository)"
	row crane-stage "Windows: crane path: download, verify, unpack, hard-link, tar 4 layers"
	row crane-append "Windows: crane path: \`crane append\` onto the Windows base, -o tarball"
	row crane-cold "Windows: crane cold total (stage + append)"
	for n in $FILE_COUNTS; do
		k=$((n / 1000))k
		row "files$k-cold" "$k files: pallet cold build"
		row "files$k-noop-first" "$k files: pallet first rebuild after cold"
		row "files$k-noop" "$k files: pallet no-op rebuild (answered from the last build's note)"
		row "files$k-noop-full" "$k files: pallet no-op rebuild without the note (the full path)"
		row "bk-files$k-cold" "$k files: BuildKit cold build (after \`prune --all\`)"
		row "bk-files$k-noop-first" "$k files: BuildKit first rebuild after cold"
		row "bk-files$k-noop" "$k files: BuildKit no-op rebuild"
	done
	for n in 1 4 16 64; do
		row "mem-$n" "1 GiB image in $n layer(s): pallet cold build"
	done
	row mem-push "1 GiB image (4 layers): pallet push"
	row go-cold "Go image: pallet cold build (fresh --cache-dir)"
	row ko-cold "Go image: \`ko build --push=false --oci-layout-path\`"
	row go-bare "Go image's limit: the \`go build\` alone (same package and flags, warm cache, no image)"
	cat <<EOF

## Interleaved pairs

Each pair is pallet, then the other tool right after, on the same machine
state; the ratio is the other tool's time over pallet's (above 1: pallet is
faster). BuildKit: $BK_STATUS. ko: $KO_STATUS.

| workload | median ratio |
|---|---|
| Windows cold (BuildKit / pallet) | $BK_COLD_X |
| Windows no-op (BuildKit / pallet) | $BK_NOOP_X |
| Windows one-file (BuildKit / pallet) | $BK_ONEFILE_X |
EOF
	for n in $FILE_COUNTS; do
		k=$((n / 1000))k
		echo "| $k files cold (BuildKit / pallet) | $(pair_median "files$k-cold") |"
		echo "| $k files no-op (BuildKit / pallet) | $(pair_median "files$k-noop") |"
	done
	echo "| Go image cold (ko / pallet) | $KO_X |"
	echo "| Go limit (ko / a bare go build, the most any tool running it could reach) | $KO_BARE_X |"
	echo
	for w in win-cold win-noop win-onefile $(for n in $FILE_COUNTS; do echo "files$((n / 1000))k-cold files$((n / 1000))k-noop"; done) go-cold; do
		if awk -v w="$w" '$1 == w { f = 1 } END { exit !f }' "$PAIRS"; then
			printf '%s:\n\n| pair | load (1 min) | pallet s | other s | ratio |\n|---|---|---|---|---|\n' "$w"
			pairs_table "$w"
			echo
		fi
	done
	cat <<EOF
## Physical limit

What no layer writer can beat here, over the same bytes: the layers pallet
wrote, uncompressed (\`workload limit\`: read from the page cache), put
through pallet's own compressor alone (its level, $NPROC blocks at
once, into nothing), and one sha256 pass. The limit is the compressor's wall
time, or the CPU time of both spread over the $NPROC cores if longer; the
share is the limit over pallet's cold build (1.00: pallet is at the limit;
its cold build also downloads, unpacks and writes the layout).

| image | MiB (tar) | compressor s / CPU s | sha256 s / CPU s | limit s | pallet cold s | share of the limit | compressor s / pallet s |
|---|---|---|---|---|---|---|---|
EOF
	limit_row "Windows (Antrea-sized)" "$WORK/log/limit-win" cold
	limit_row "1 GiB, 4 layers" "$WORK/log/limit-mem" mem-4
	cat <<EOF

## Targets

From the issue "Performance: hash once, flat memory at any layer count,
many-file trees, and an honest bench" (ratios are medians of the pairs).

| target | measured | verdict |
|---|---|---|
| Windows cold ≥ 5× faster than BuildKit | ${BK_COLD_X}× | $(target "$(ge "$BK_COLD_X" 5)") |
| Windows cold ≥ 95 % of the compressor's own speed on the same bytes | $COMPRESS_SHARE | $(target "$(ge "$COMPRESS_SHARE" 0.95)") |
| no-op ≥ 20× faster than BuildKit exporting into an existing OCI directory | ${BK_NOOP_X}× (pallet ${NOOP} s; through the same harness an empty Go program $(med floor-go) s, \`pallet version\` $(med floor-pallet) s) | $(target "$(ge "$BK_NOOP_X" 20)") |
| one-file change ≥ 5× faster than BuildKit | ${BK_ONEFILE_X}× | $(target "$(ge "$BK_ONEFILE_X" 5)") |
| push ≤ 1.0× crane's time, every blob uploaded | ${PUSH_RATIO}× (${PUSH_P} s vs ${PUSH_C} s) | $(target "$(le "$PUSH_RATIO" 1.0)") |
| push ≤ 1.0× crane's time, repeat push to a new repository (pallet mounts) | ${PUSH_M_RATIO}× (${PUSH_M} s vs ${PUSH_C} s) | $(target "$(le "$PUSH_M_RATIO" 1.0)") |
| peak RSS ≤ 100 MB, 1 GiB image in 1 / 4 / 16 / 64 layers | $(for n in 1 4 16 64; do printf '%s ' "$(max_rss "mem-$n")"; done)MB | $(target "$(le "$MEM_MAX" 100)") |
| $BIG_FILES files no-op ≥ 5× faster than BuildKit | ${BK_F100_X}× | $(target "$(ge "$BK_F100_X" 5)") |
| $BIG_FILES files ≤ 100 MB peak RSS (cold and no-op) | ${F100_RSS} MB | $(target "$(le "$F100_RSS" 100)") |
| cold Go image ≥ 2× faster than ko | ${KO_X}× (a bare \`go build\` of the same package: ${KO_BARE_X}× faster than ko) | $(target "$(ge "$KO_X" 2)") |
| Windows no-op ≤ 0.1 s | ${NOOP} s (median; first rebuild after cold ${NOOP_FIRST} s) | $(target "$(le "$NOOP" 0.1)") |

Also: cold, crane / pallet: $(ratio "$CRANE_COLD" "$COLD"); CPU time, crane / pallet: $(ratio "$(med_cpu crane-cold)" "$(med_cpu cold)").
The pushed images are identical: pallet $PALLET_DIGEST, crane $CRANE_DIGEST.

## Where the time goes (pallet's own step timings, last run of each)

Windows cold build:

$(steps cold)

Windows one-file change:

$(steps onefile)

Windows no-op rebuild:

$(steps noop)

$BIG_FILES files, no-op rebuild:

$(steps "files$BIG_FILES-noop")

1 GiB image in 64 layers, cold:

$(steps mem-64)
EOF
} >"$RESULTS"
say "done: $RESULTS"
