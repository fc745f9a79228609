#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# Runs the test suites and ends with one line: "N passed, N failed".
#
#   tests/run.sh           every suite (`make test`; root: BPF, XDP, network
#                          namespaces): the check part below first, then the
#                          BPF tests, the daemon suites and the e2e suites
#   tests/run.sh --check   the check part only (`make check`; no root, no
#                          network, no apt-get): lint, the unit tests and
#                          their ASan/UBSan builds
#   tests/run.sh --tools   only say which tool or library `make check` needs
#                          and does not find (naming its Debian package)
#
# A suite is any executable that prints TAP result lines ("ok N - name" /
# "not ok N - name"), as cmocka does with CMOCKA_MESSAGE_OUTPUT=TAP and as the
# shell suites do through tests/lib.sh. A suite that exits non-zero without
# reporting a failure, or that reports nothing at all, counts as one failure:
# a crash or an empty suite must never look like a pass.
set -u
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
export BUILD CMOCKA_MESSAGE_OUTPUT=TAP
passed=0
failed=0
failed_names=()

# ---- suites, one at a time or several at once ----
# A suite runs with its output in $RUN_DIR/<n>.out and its exit code in
# <n>.rc; tally_suite then prints it (indented, under "== NAME (SECONDS s)")
# and counts it. Suites started with start_suite run in the background, at
# most $TEST_JOBS at once; each one's block is printed whole when it ends, so
# two suites' lines never interleave.
RUN_DIR=$(mktemp -d /tmp/chlb-run.XXXXXX)
trap 'rm -rf "$RUN_DIR"' EXIT
# Three, on the 2-CPU machine this is written on: two kept the CPUs 68% busy
# (the suites mostly wait on TCP, timers and daemons) and took 10.5 min;
# three took 8 (docs/testing.md).
TEST_JOBS=${TEST_JOBS:-3}
declare -A job_name=() job_start=() job_file=()
n_started=0

tally_suite() { # NAME FILE RC SECONDS
	local name=$1 file=$2 rc=$3 secs=$4 ok notok
	echo "== $name ($secs s)"
	sed 's/^/   /' "$file"
	ok=$(grep -cE '^ok [0-9]+' "$file")
	notok=$(grep -cE '^not ok [0-9]+' "$file")
	passed=$((passed + ok))
	failed=$((failed + notok))
	if [ "$notok" -gt 0 ]; then
		failed_names+=("$name")
	elif [ "$rc" -ne 0 ] || [ "$ok" -eq 0 ]; then
		failed=$((failed + 1))
		failed_names+=("$name (exit $rc, $ok results)")
	fi
}

seconds_since() { # EPOCHREALTIME at the start -> "12.3"
	local now=${EPOCHREALTIME/./} then=${1/./}
	local ds=$(((now - then) / 100000))
	echo "$((ds / 10)).$((ds % 10))"
}

# run_suite NAME CMD...: run it now, in the foreground.
run_suite() {
	local name=$1 t0=$EPOCHREALTIME file=$RUN_DIR/fg.out rc
	shift
	"$@" >"$file" 2>&1 </dev/null
	rc=$?
	tally_suite "$name" "$file" "$rc" "$(seconds_since "$t0")"
}

# start_suite NAME CMD...: start it in the background once fewer than
# $TEST_JOBS run; finished ones are tallied meanwhile.
start_suite() {
	local name=$1 file
	shift
	while [ ${#job_name[@]} -ge "$TEST_JOBS" ]; do reap_one; done
	n_started=$((n_started + 1))
	file=$RUN_DIR/$n_started.out
	("$@" >"$file" 2>&1 </dev/null) &
	job_name[$!]=$name
	job_start[$!]=$EPOCHREALTIME
	job_file[$!]=$file
}

# reap_one: wait for one background suite to end and tally it.
reap_one() {
	local pid rc
	wait -n -p pid
	rc=$?
	[ -n "${job_name[$pid]:-}" ] || return 0
	tally_suite "${job_name[$pid]}" "${job_file[$pid]}" "$rc" "$(seconds_since "${job_start[$pid]}")"
	unset "job_name[$pid]" "job_start[$pid]" "job_file[$pid]"
}

reap_all() { while [ ${#job_name[@]} -gt 0 ]; do reap_one; done; }

# finish: the failed suites, the closing line; exit 0 only if nothing failed.
finish() {
	if [ ${#failed_names[@]} -gt 0 ]; then
		echo "failed suites:"
		printf '  %s\n' "${failed_names[@]}"
	fi
	echo "$passed passed, $failed failed"
	[ "$failed" -eq 0 ]
	exit
}

lint_suite() {
	if make --no-print-directory -s lint; then echo "ok 1 - lint"; else echo "not ok 1 - lint"; fi
}

# ---- what the check part needs (tests/run.sh --tools) ----
# need_cmd COMMAND PACKAGE, need_lib PACKAGE FLAGS HEADER...: note in
# $missing what is not there: a command, or headers and flags the compiler
# cannot build and link a program with.
missing=()
need_cmd() { command -v "$1" >/dev/null 2>&1 || missing+=("$1: Debian package $2"); }
need_lib() {
	local pkg=$1 flags=$2 h src="" what
	shift 2
	for h; do src="$src#include <$h>"$'\n'; done
	what="${*: -1}${flags:+ and $flags}"
	printf '%sint main(void) { return 0; }\n' "$src" |
		${CC:-cc} -x c - $flags -o /dev/null >/dev/null 2>&1 || missing+=("$what: Debian package $pkg")
}
check_tools() {
	local cc=${CC:-cc} b=$BUILD
	# A user without root in someone else's tree got the compiler's
	# "cannot create build/...: Permission denied" from the middle of the build.
	while [ ! -e "$b" ] && [ "$b" != . ] && [ "$b" != / ]; do b=$(dirname "$b"); done
	if [ ! -w "$b" ]; then
		echo "make check writes its build to $BUILD, and $(id -un) can't write '$b': run it in a tree of your own (git worktree add DIR; docs/testing.md)" >&2
		return 1
	fi
	need_cmd "$cc" gcc
	need_cmd make make
	need_cmd ar binutils
	need_cmd "${CLANG:-clang}" clang
	need_cmd "${BPFTOOL:-bpftool}" bpftool
	need_cmd clang-format clang-format
	need_cmd cppcheck cppcheck
	if command -v "$cc" >/dev/null 2>&1; then
		need_lib libc6-dev "" stdio.h
		need_lib linux-libc-dev "" linux/bpf.h asm/types.h
		need_lib libbpf-dev -lbpf bpf/libbpf.h
		need_lib libelf-dev -lelf gelf.h
		need_lib zlib1g-dev -lz zlib.h
		need_lib libjson-c-dev -ljson-c json-c/json.h
		need_lib libcmocka-dev -lcmocka stdarg.h stddef.h setjmp.h cmocka.h
		need_lib "libasan8 and libubsan1 (gcc's sanitizer runtimes)" -fsanitize=address,undefined stdio.h
	fi
	[ ${#missing[@]} -eq 0 ] && return 0
	printf 'make check needs %s\n' "${missing[@]}" >&2
	echo "install them (as root: make deps, or apt-get install the packages named), then run make check again" >&2
	return 1
}

# ---- the check part: no root, no network ----
check_part() {
	local t
	start_suite lint lint_suite
	for t in "$BUILD"/tests/unit/test_*; do
		[ -x "$t" ] && start_suite "unit/${t##*/}" "$t"
	done
	for t in "$BUILD"/asan/tests/unit/test_*; do
		[ -x "$t" ] && start_suite "asan/${t##*/}" "$t"
	done
	reap_all
}

case ${1:-} in
--tools)
	check_tools || {
		echo "0 passed, 1 failed"
		exit 1
	}
	exit 0
	;;
--check)
	check_tools || {
		echo "0 passed, 1 failed"
		exit 1
	}
	check_part
	finish
	;;
"") ;;
*)
	echo "usage: tests/run.sh [--check | --tools]" >&2
	exit 2
	;;
esac

if [ "$(id -u)" != 0 ]; then
	echo "tests need root (BPF, XDP, network namespaces): refusing to run a partial suite" >&2
	echo "(make check runs the part that needs no root)" >&2
	echo "0 passed, 1 failed"
	exit 1
fi

check_part
# Then every suite that needs root, $TEST_JOBS at a time: they share
# nothing (each run has its own id, namespaces chlb-<id>-*, pins
# /sys/fs/bpf/chlb-test-<id>-*, scratch directory and binaries; tests/lib/runner.sh),
# and most of their time is spent waiting for TCP, timers and daemons, not
# on a CPU. The longest start first (SLOW_FIRST, by the times in
# docs/testing.md) so that the run does not end on one long suite alone.
# test_fresh_host finds no bpffs whatever the host has (a private mount
# namespace each); every other suite needs one at /sys/fs/bpf, mounted here
# first as chlbd would mount it (tests/lib/topo.sh).
bash -c '. tests/lib.sh && lib_require_bpffs'
SLOW_FIRST="e2e/test_guarantee.sh e2e/test_ecmp_sync.sh e2e/test_churn.sh daemon/test_sync.sh
	e2e/test_ecmp.sh e2e/test_health.sh daemon/test_torture.sh daemon/test_chlbd.sh
	daemon/test_cli.sh daemon/test_fingerprint.sh"
suites=()
slow=" $(echo $SLOW_FIRST) " # one space between names, none at the ends
for t in $SLOW_FIRST; do suites+=("tests/$t"); done
for t in "$BUILD"/tests/bpf/test_* tests/daemon/test_*.sh tests/e2e/test_*.sh; do
	case $slow in *" ${t#tests/} "*) continue ;; esac
	suites+=("$t")
done
for t in "${suites[@]}"; do
	case $t in
	*.sh) [ -f "$t" ] && start_suite "${t#tests/}" bash "$t" ;;
	*) [ -x "$t" ] && start_suite "bpf/$(basename "$t")" "$t" ;;
	esac
done
reap_all
finish
