#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# Runs every test suite and ends with one line: "N passed, N failed".
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

run_suite() {
	local name=$1
	shift
	local out rc ok notok
	echo "== $name"
	out=$("$@" 2>&1)
	rc=$?
	printf '%s\n' "$out" | sed 's/^/   /'
	ok=$(printf '%s\n' "$out" | grep -cE '^ok [0-9]+')
	notok=$(printf '%s\n' "$out" | grep -cE '^not ok [0-9]+')
	passed=$((passed + ok))
	failed=$((failed + notok))
	if [ "$notok" -gt 0 ]; then
		failed_names+=("$name")
	elif [ "$rc" -ne 0 ] || [ "$ok" -eq 0 ]; then
		failed=$((failed + 1))
		failed_names+=("$name (exit $rc, $ok results)")
	fi
}

lint_suite() {
	if make --no-print-directory -s lint; then echo "ok 1 - lint"; else echo "not ok 1 - lint"; fi
}

if [ "$(id -u)" != 0 ]; then
	echo "tests need root (BPF, XDP, network namespaces): refusing to run a partial suite" >&2
	echo "0 passed, 1 failed"
	exit 1
fi

run_suite lint lint_suite
# First chlbd on a fresh host (no bpffs at /sys/fs/bpf), in private mount
# namespaces; then a bpffs for the suites that pin into the host's, mounted
# as chlbd would mount it (tests/lib.sh).
run_suite daemon/test_fresh_host.sh bash tests/daemon/test_fresh_host.sh
bash -c '. tests/lib.sh && lib_require_bpffs'
for t in "$BUILD"/tests/unit/test_*; do
	[ -x "$t" ] && run_suite "unit/$(basename "$t")" "$t"
done
for t in "$BUILD"/asan/tests/unit/test_*; do
	[ -x "$t" ] && run_suite "asan/$(basename "$t")" "$t"
done
for t in "$BUILD"/tests/bpf/test_*; do
	[ -x "$t" ] && run_suite "bpf/$(basename "$t")" "$t"
done
for t in tests/daemon/test_*.sh tests/e2e/test_*.sh; do
	[ "$t" = tests/daemon/test_fresh_host.sh ] && continue
	[ -f "$t" ] && run_suite "${t#tests/}" bash "$t"
done

if [ ${#failed_names[@]} -gt 0 ]; then
	echo "failed suites:"
	printf '  %s\n' "${failed_names[@]}"
fi
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
