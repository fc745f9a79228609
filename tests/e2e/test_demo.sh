#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# `make demo` stays true: run tests/e2e/demo.sh, which checks every claim it
# prints and exits 0 only if all held, and require it to finish in a minute.
. "$(dirname "$0")/../lib.sh"

lib_require_root

test_demo_exits_0_within_a_minute() {
	local out=$LIB_DIR/demo.out rc
	timeout 60 bash "$LIB_ROOT/tests/e2e/demo.sh" >"$out" 2>&1
	rc=$?
	grep -E '\[!!\]|Bail out' "$out" | sed 's/^/# /'
	check "demo exit status 0 (got $rc)" [ $rc = 0 ] &&
		check "demo says everything it showed was true" \
			grep -q '^Everything shown above was checked and is true' "$out"
}

lib_run
