#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# The shell suites' runner: run id and scratch directory, TAP output, the
# registry of everything a run creates and its removal (on exit, on failure,
# on Ctrl-C), background processes, polling. Sourced first by tests/lib.sh;
# needs nothing else, and knows nothing of chlb but the names topo.sh and
# daemon.sh give namespaces and pins (lib_reap_stale).
#
# Output is TAP ("1..N", "ok N - name # 1.2s", "not ok N - name # 1.2s")
# plus a closing "# N passed, N failed" line; lib_run's status is 0 only if
# every test passed. Everything a run creates is named with one 4-hex-digit
# run id ($LIB_ID) and registered here (LIB_PIDS, LIB_NS, LIB_PINS, LIB_DIR);
# the EXIT/INT/TERM trap removes all of it, also when a test fails or the
# suite is interrupted.
set -u
LIB_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BUILD=${BUILD:-build}
case $BUILD in /*) ;; *) BUILD=$LIB_ROOT/$BUILD ;; esac
# The id is unique among the runs on this host (tests/run.sh runs suites in
# parallel): one that another run's scratch directory or namespaces have
# is drawn again. The directory is made first and then looked for, so of
# two runs drawing the same id at once neither keeps it.
while :; do
	printf -v LIB_ID '%04x' $(((RANDOM << 1 ^ $$) & 0xffff))
	LIB_DIR=$(mktemp -d "/tmp/chlb-test-$LIB_ID.XXXX")
	_ids=(/tmp/chlb-test-"$LIB_ID".*)
	[ ${#_ids[@]} = 1 ] && ! ip netns list 2>/dev/null | grep -q "^chlb-$LIB_ID-" && break
	rmdir "$LIB_DIR"
done
unset _ids
LIB_NS=()   # network namespaces we created (topo.sh: lib_ns_add)
LIB_PINS=() # bpffs directories we created (daemon.sh: lib_pindir)
LIB_PIDS=() # background processes we started (lib_bg)
# The run's owner: its shell's pid and start time (/proc/PID/stat field 22),
# so that lib_reap_stale tells a run killed by SIGKILL (no trap ran) from
# one still running, also after the pid is reused.
lib_proc_start() { sed 's/.*) //' "/proc/$1/stat" 2>/dev/null | cut -d' ' -f20; }
echo "$$ $(lib_proc_start $$)" >"$LIB_DIR/owner"
LIB_BIN_VARS=() # variables naming binaries lib_require_bins copies (each module adds its own)

# ---- messages and checks ----
diag() { printf '# %s\n' "$*"; }
die() {
	echo "Bail out! $*"
	exit 1
}

# check DESCRIPTION CMD...: run CMD; on failure say what was expected.
check() {
	local what=$1
	shift
	if "$@"; then return 0; fi
	diag "check failed: $what"
	return 1
}

# nogrep ARGS...: grep finds nothing.
nogrep() { ! grep "$@"; }

# ---- cleanup ----
# Processes first (TERM, 0.2 s, KILL, reaped), with every process still in
# a namespace of ours; then the namespaces, the pin directories (only ever
# below /sys/fs/bpf) and the scratch directory.
lib_cleanup() {
	local pid ns d
	# Ignore INT/TERM from here on: a second Ctrl-C must not cut the cleanup short.
	trap "" INT TERM
	trap - EXIT
	for pid in "${LIB_PIDS[@]}"; do
		kill -TERM "$pid" 2>/dev/null
	done
	for ns in "${LIB_NS[@]}"; do
		for pid in $(ip netns pids "$ns" 2>/dev/null); do
			kill -TERM "$pid" 2>/dev/null
		done
	done
	sleep 0.2
	for pid in "${LIB_PIDS[@]}"; do
		kill -KILL "$pid" 2>/dev/null
		wait "$pid" 2>/dev/null
	done
	for ns in "${LIB_NS[@]}"; do
		for pid in $(ip netns pids "$ns" 2>/dev/null); do
			kill -KILL "$pid" 2>/dev/null
		done
		ip netns del "$ns" 2>/dev/null
	done
	for d in "${LIB_PINS[@]}"; do
		case $d in /sys/fs/bpf/?*) rm -rf "$d" ;; esac
	done
	rm -rf "$LIB_DIR"
}

# lib_reap_stale: remove what earlier runs killed by SIGKILL left behind:
# their scratch directory (/tmp/chlb-test-<id>.*) whose owner is gone, the
# processes running its binaries or in their namespaces (chlb-<id>-*), the
# namespaces, their pin directories (/sys/fs/bpf/chlb-test-<id>-*). A run still running, or one
# without an owner file, is left alone. One diag line per run removed.
lib_reap_stale() {
	local d id pid start ns p n_ns
	local -A gone # pids killed: one may be listed twice
	for d in /tmp/chlb-test-????.*; do
		[ -f "$d/owner" ] && [ "$d" != "$LIB_DIR" ] || continue
		read -r pid start <"$d/owner" || continue
		if [ -n "$start" ]; then
			[ "$(lib_proc_start "$pid")" = "$start" ] && continue
		else
			kill -0 "$pid" 2>/dev/null && continue
		fi
		id=${d#/tmp/chlb-test-}
		id=${id%%.*}
		[[ $id =~ ^[0-9a-f]{4}$ ]] || continue
		n_ns=0
		gone=()
		# Its processes run the binaries it copied (lib_require_bins): found
		# so even when its namespaces were made in a private mount
		# namespace (a fresh host), where ip netns pids here sees none.
		for p in /proc/[0-9]*; do
			case $(readlink "$p/exe" 2>/dev/null) in
			"$d"/bin/*) kill -KILL "${p#/proc/}" 2>/dev/null && gone[${p#/proc/}]=1 ;;
			esac
		done
		for ns in $(ip netns list 2>/dev/null | awk -v p="chlb-$id-" 'index($1, p) == 1 { print $1 }'); do
			for p in $(ip netns pids "$ns" 2>/dev/null); do
				kill -KILL "$p" 2>/dev/null && gone[$p]=1
			done
			ip netns del "$ns" 2>/dev/null && n_ns=$((n_ns + 1))
		done
		rm -rf /sys/fs/bpf/chlb-test-"$id"-* "$d"
		diag "removed what run $id left when it was killed (pid $pid gone): $n_ns network namespaces, ${#gone[@]} processes"
	done
}

trap 'lib_cleanup' EXIT
trap 'lib_cleanup; exit 130' INT
trap 'lib_cleanup; exit 143' TERM

# ---- processes ----
# lib_bg NAME CMD...: start CMD in the background, output in $LIB_DIR/NAME.log;
# the pid is registered for cleanup and left in $LIB_LASTPID.
lib_bg() {
	local name=$1
	shift
	"$@" >"$LIB_DIR/$name.log" 2>&1 &
	LIB_LASTPID=$!
	LIB_PIDS+=("$LIB_LASTPID")
}

# lib_sleep SECONDS: sleep without starting a process: a read that times
# out on a FIFO nobody writes to. The polls below run every 0.1 s, and a
# process costs 5-12 ms of CPU on the 2-CPU test VM, taken from the suites
# running beside this one (tests/run.sh). Without the FIFO (removed at
# exit) it is sleep(1).
LIB_SLEEP_FIFO=$LIB_DIR/sleep.fifo
mkfifo "$LIB_SLEEP_FIFO"
lib_sleep() {
	if [ -p "$LIB_SLEEP_FIFO" ]; then
		read -r -t "$1" <>"$LIB_SLEEP_FIFO" || :
	else
		sleep "$1"
	fi
}

# lib_running PID: PID is a process that has not exited (a zombie, exited
# and not yet reaped, has: nothing in lib_stop's loop makes this shell reap)
lib_running() {
	local st
	read -r st 2>/dev/null <"/proc/$1/stat" || return 1
	st=${st##*) }
	[ "${st%% *}" != Z ]
}

# lib_stop PID [SIGNAL]: signal a process started by lib_bg (TERM by default),
# give it 5 s to exit, then KILL it, and reap it.
lib_stop() {
	local i
	kill "-${2:-TERM}" "$1" 2>/dev/null
	for ((i = 0; i < 50; i++)); do
		lib_running "$1" || break
		lib_sleep 0.1
	done
	kill -KILL "$1" 2>/dev/null
	wait "$1" 2>/dev/null
}

# lib_wait_for SECONDS CMD...: poll CMD every 0.1 s until it succeeds.
lib_wait_for() {
	local deadline=$((${EPOCHREALTIME/[.,]/} + $1 * 1000000))
	shift
	until "$@" 2>/dev/null; do
		[ "${EPOCHREALTIME/[.,]/}" -lt "$deadline" ] || return 1
		lib_sleep 0.1
	done
}

# lib_wait_up NAME CMD...: wait (10 s at most) until CMD succeeds, e.g. a
# daemon started by `lib_bg NAME` answers; if it never does, show the tail of
# NAME's log and fail.
lib_wait_up() {
	local name=$1
	shift
	lib_wait_for 10 "$@" && return 0
	diag "$name did not come up; its log:"
	sed 's/^/#   /' "$LIB_DIR/$name.log" | tail -20
	return 1
}

# ---- preconditions ----
# lib_require_bins PATH...: every path must exist (built by `make all`).
# The run then uses private copies of every binary a module registered in
# LIB_BIN_VARS (those that exist), so a rebuild while it runs (parallel
# development) cannot swap a binary under it. Calling it again copies
# nothing twice.
lib_require_bins() {
	local f v
	for f in "$@"; do
		[ -x "$f" ] || [ -f "$f" ] || die "missing $f (run make all)"
	done
	mkdir -p "$LIB_DIR/bin"
	for v in "${LIB_BIN_VARS[@]}"; do
		f=${!v}
		[ -f "$f" ] || continue
		case $f in "$LIB_DIR/bin/"*) continue ;; esac
		cp "$f" "$LIB_DIR/bin/" || die "couldn't copy $f"
		printf -v "$v" '%s' "$LIB_DIR/bin/$(basename "$f")"
	done
}

# ---- runner ----
LIB_PASSED=0
LIB_FAILED=0

# lib_run [TEST...]: the plan, then every test_* function of the suite in
# file order (or the TESTS given; ONLY="test_a test_b" in the environment
# overrides both, while developing a suite), then the summary line.
lib_run() {
	local tests=("$@") t n=0
	if [ ${#tests[@]} -eq 0 ]; then
		mapfile -t tests < <(grep -oE '^test_[A-Za-z0-9_]+ *\(\)' "$0" | sed 's/ *()//')
	fi
	if [ -n "${ONLY:-}" ]; then
		read -r -a tests <<<"$ONLY"
	fi
	echo "1..${#tests[@]}"
	for t in "${tests[@]}"; do
		n=$((n + 1))
		lib_run_test "$n" "$t"
	done
	echo "# $LIB_PASSED passed, $LIB_FAILED failed"
	[ $LIB_FAILED -eq 0 ]
}

# lib_run_test N TEST: run the function TEST in this shell (what it
# registers is cleaned up at exit), report "ok N" or "not ok N" with its time.
lib_run_test() {
	local t0 rc
	t0=$(date +%s.%N)
	"$2"
	rc=$?
	if [ $rc -eq 0 ]; then
		echo "ok $1 - $2 # $(lib_elapsed "$t0")s"
		LIB_PASSED=$((LIB_PASSED + 1))
	else
		echo "not ok $1 - $2 # $(lib_elapsed "$t0")s"
		LIB_FAILED=$((LIB_FAILED + 1))
	fi
}

# lib_elapsed T0: seconds since T0 (date +%s.%N), one decimal.
lib_elapsed() {
	awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }'
}
