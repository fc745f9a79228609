#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# Everything the shell suites share (tests/daemon, tests/e2e, the demo, the
# control-plane bench), split by concern under tests/lib/:
#
#   runner.sh   run id, scratch dir, TAP (lib_run), checks, background
#               processes, the cleanup registry and its EXIT/INT/TERM trap
#   topo.sh     network namespaces, veths, addresses: the e2e topology
#               (topo_build) and the daemon suites' (topo_daemon); root, bpffs
#   daemon.sh   pin directories, the suite's chlbd (chlbd_start/chlbd_stop),
#               chlbctl (ctl), the daemon suites' fixture (daemon_fixture)
#   traffic.sh  echo servers, chlb-client (once, hold, churn), chlb-probe,
#               chlb-flood, chlb-conn; spreads against `chlbctl sim`
#
# A suite sources this file, sets up what it needs, defines test_*
# functions and calls lib_run:
#
#   . "$(dirname "$0")/../lib.sh"
#   lib_require_e2e; topo_build 3; chlbd_start xdp   # an e2e suite, or:
#   daemon_fixture                                    # a daemon suite
#   test_something() { ...; check "what" [ "$a" = "$b" ] || return 1; }
#   lib_run            # every test_* in file order, or: lib_run test_a test_b
#                      # (ONLY="test_a" in the environment overrides both)
#
# Output is TAP ("1..N", "ok N - name", "not ok N - name") plus a closing
# "N passed, N failed" line; the exit status is 0 only if every test passed.
# Everything a run creates is named with one 4-hex-digit run id ($LIB_ID),
# registered, and removed on exit, also when a test fails or the suite is
# interrupted.
for _lib in runner topo daemon traffic; do
	# shellcheck source=/dev/null
	. "$(dirname "${BASH_SOURCE[0]}")/lib/$_lib.sh"
done
unset _lib
