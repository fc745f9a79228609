#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# `make demo` stays true: run tests/e2e/demo.sh, which checks every claim it
# prints and exits 0 only if all held, and require it to finish in a minute.
. "$(dirname "$0")/../lib.sh"

lib_require_root

# leftovers ID: what a run with that id left: namespaces, scratch directory.
leftovers() {
	ip netns list 2>/dev/null | awk -v p="chlb-$1-" 'index($1, p) == 1 { print $1 }'
	ls -d /tmp/chlb-test-"$1".* 2>/dev/null
}

# run_procs ID: processes running a binary of that run's copy (chlbd, servers).
run_procs() {
	local p
	for p in /proc/[0-9]*; do
		case $(readlink "$p/exe" 2>/dev/null) in
		/tmp/chlb-test-"$1".*/bin/*) echo "${p#/proc/}" ;;
		esac
	done
}

# A demo killed with SIGKILL midway (held connections open) leaves its
# namespaces, chlbd and servers; the next demo (the test after this one)
# must remove them. The killed one runs in a private mount namespace, as
# on a fresh host (make demo under unshare -m): its namespaces' mounts are
# not seen from here, its processes must be found all the same.
# KILLED_ID: the killed run's id.
KILLED_ID=
test_demo_killed_leaves_what_the_next_removes() {
	local out=$LIB_DIR/killed.out pid
	unshare -m --propagation private bash "$LIB_ROOT/tests/e2e/demo.sh" >"$out" 2>&1 &
	pid=$!
	lib_wait_for 30 grep -q '^6\. ' "$out"
	kill -KILL "$pid"
	wait "$pid" 2>/dev/null
	KILLED_ID=$(grep -o 'names chlb-[0-9a-f]*' "$out" | cut -d- -f2)
	diag "killed demo run $KILLED_ID: $(leftovers "$KILLED_ID" | wc -l) namespaces and directories, $(run_procs "$KILLED_ID" | wc -l) processes left"
	check "the demo reached step 6 before it was killed" grep -q '^6\. ' "$out" &&
		check "the killed demo left its namespaces behind (nothing to remove otherwise)" \
			[ -n "$(leftovers "$KILLED_ID")" ] &&
		check "and its chlbd and servers running" [ -n "$(run_procs "$KILLED_ID")" ]
}

test_demo_exits_0_within_a_minute() {
	local out=$LIB_DIR/demo.out rc
	timeout 60 bash "$LIB_ROOT/tests/e2e/demo.sh" >"$out" 2>&1
	rc=$?
	grep -E '\[!!\]|Bail out|^# removed' "$out" | sed 's/^/# /'
	check "demo exit status 0 (got $rc)" [ $rc = 0 ] &&
		check "demo says everything it showed was true" \
			grep -q '^Everything shown above was checked and is true' "$out" || return 1
	[ -n "$KILLED_ID" ] || return 0
	no_procs() { [ -z "$(run_procs "$KILLED_ID")" ]; }
	lib_wait_for 2 no_procs # killed: gone once reaped
	check "the demo said it removed what run $KILLED_ID left" \
		grep -q "^# removed what run $KILLED_ID left" "$out" &&
		check "nothing of run $KILLED_ID is left: $(leftovers "$KILLED_ID" | tr '\n' ' ')" \
			[ -z "$(leftovers "$KILLED_ID")" ] &&
		check "no process of run $KILLED_ID is left: $(run_procs "$KILLED_ID" | tr '\n' ' ')" no_procs
}

# Without root, make demo stops before building anything and says why.
test_demo_as_non_root_says_it_needs_root() {
	local out rc dir
	# the Makefile alone (it decides before anything is built), in a directory
	# nobody can read: a checkout (a CI clone, /root) often is not
	dir=$(mktemp -d /tmp/chlb-nonroot.XXXXXX) && cp "$LIB_ROOT/Makefile" "$dir/" &&
		chmod 755 "$dir" && chmod 644 "$dir/Makefile" || return 1
	out=$(cd "$dir" && setpriv --reuid=nobody --regid=nogroup --clear-groups make demo 2>&1)
	rc=$?
	rm -rf "$dir"
	printf '%s\n' "$out" | sed 's/^/# /'
	check "make demo as nobody fails (got $rc)" [ $rc != 0 ] &&
		check "and says make demo needs root" grep -q '^make demo needs root' <<<"$out"
}

lib_run
