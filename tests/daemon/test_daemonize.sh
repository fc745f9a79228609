#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# chlbd WITHOUT -f, as an operator starts it: `chlbd` returns once the daemon
# serves (or fails, saying why, with no pins left), the daemon answers
# SIGTERM within 1 s and SIGHUP by re-reading -c, its --pid-file names it,
# it logs to syslog, and `chlbctl shutdown` returns only once it has exited.
# (It once ignored TERM and HUP for good: its signalfd was registered with
# epoll before the fork, so the signals woke the parent's queue.)
#
# The daemon runs in a private mount namespace whose /dev is a fresh tmpfs
# holding null/zero/random/urandom and /dev/log, a syslog socket this suite
# reads: the host may have no syslog daemon, and must not get our lines if
# it has one. The namespace is a copy of the host's, so the bpffs and the
# pins are the host's, as in the other daemon suites.
. "$(dirname "$0")/../lib.sh"
daemon_fixture

SYSLOG=$LIB_DIR/syslog
PIDFILE=$LIB_DIR/chlbd.pid
CONF=$LIB_DIR/chlb.conf
DAEMON=
lib_veth "$D_NS" v2 v3 || die "veth"

# One datagram, one line (socat would run them together).
SYSLOG_RX='import os, socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind("/dev/log")
os.chmod("/dev/log", 0o666)
with open(sys.argv[1], "ab", buffering=0) as f:
    while True:
        f.write(s.recv(65536).rstrip(b"\n") + b"\n")'
DEV_SETUP='mount -t tmpfs -o mode=0755 chlb-dev /dev &&
	mknod -m 666 /dev/null c 1 3 && mknod -m 666 /dev/zero c 1 5 &&
	mknod -m 666 /dev/random c 1 8 && mknod -m 666 /dev/urandom c 1 9 &&
	{ python3 -c "$1" "$2" </dev/null >/dev/null 2>&1 & echo $! >"$3"; } &&
	for _ in $(seq 100); do [ -S /dev/log ] && break; sleep 0.05; done && shift 3 && exec "$@"'

# daemon [CHLBD ARGS]: start chlbd without -f (10 s at most) in its own mount
# namespace (above); its exit status, its output in OUT. DAEMON: the pid its
# pid file names. (Not in $(...): the pids must be registered in this shell.)
daemon() {
	local rx=$LIB_DIR/syslog-rx.$((CHLBD_STARTS + 1)).pid rc
	CHLBD_STARTS=$((CHLBD_STARTS + 1))
	timeout 10 unshare -m --propagation private sh -c "$DEV_SETUP" _ "$SYSLOG_RX" "$SYSLOG" \
		"$rx" "$CHLBD" --netns "$D_NS" -m xdp-generic -s "$CHLBD_SOCK" --pin-dir "$CHLBD_PIN" \
		--state "$CHLBD_STATE" --pid-file "$PIDFILE" "$@" >"$LIB_DIR/daemon.out" 2>&1
	rc=$?
	OUT=$(cat "$LIB_DIR/daemon.out")
	[ -s "$rx" ] && LIB_PIDS+=("$(cat "$rx")")
	DAEMON=$(cat "$PIDFILE" 2>/dev/null)
	[ -n "$DAEMON" ] && LIB_PIDS+=("$DAEMON")
	return $rc
}

# exited PID: gone, or a zombie (nobody here reaps a daemon: it is pid 1's).
exited() { [ ! -e "/proc/$1" ] || [ "$(awk '{ print $3 }' "/proc/$1/stat" 2>/dev/null)" = Z ]; }
running() { ! exited "$1"; }
# ms_until_exited PID: poll every 10 ms (5 s at most), print the wait in ms.
ms_until_exited() {
	local t0
	t0=$(date +%s%N)
	for _ in $(seq 500); do
		exited "$1" && break
		sleep 0.01
	done
	echo $((($(date +%s%N) - t0) / 1000000))
}
svc_list() { ctl -j service list | jq -r '.services[].service' | sort | tr '\n' ' '; }
logged() { grep -qF "chlbd[$DAEMON]: $1" "$SYSLOG"; }
# said RC NEEDLE: a start failed with exit status 1 and OUT says NEEDLE.
said() { [ "$1" = 1 ] && grep -qF -- "$2" <<<"$OUT"; }
pinned() { [ -e "$CHLBD_PIN/vips" ] && [ -e "$CHLBD_PIN/link_$D_IFINDEX" ]; }
unpinned() { [ ! -e "$CHLBD_PIN/vips" ]; }

test_starts_in_the_background() {
	local rc
	printf 'service add 10.0.0.20:80/tcp\nbackend add 10.0.0.20:80/tcp 10.1.0.2\n' >"$CONF"
	# -c relative to where chlbd starts: the daemon, in /, must still find it on SIGHUP
	cd "$LIB_DIR" || return 1
	daemon -i v0 -c "$(basename "$CONF")"
	rc=$?
	cd - >/dev/null || return 1
	check "chlbd returned 0 ($rc): $OUT" [ "$rc" = 0 ] || return 1
	check "quiet on success: '$OUT'" [ -z "$OUT" ] || return 1
	check "pid file written" [ -n "$DAEMON" ] || return 1
	check "pid file names a running chlbd" [ "$(readlink "/proc/$DAEMON/exe")" = "$CHLBD" ] ||
		return 1
	check "it leads its own session" [ "$(ps -o sid= -p "$DAEMON" | tr -d ' ')" = "$DAEMON" ] ||
		return 1
	check "stdio on /dev/null" [ "$(readlink "/proc/$DAEMON/fd/2")" = /dev/null ] || return 1
	# no wait: chlbd returns only once its socket answers
	check "answers at once, config applied" [ "$(svc_list)" = "10.0.0.20:80/tcp " ] || return 1
	check "logs to syslog: $(tail -3 "$SYSLOG")" lib_wait_for 1 logged "ready: 1 services" ||
		return 1
	check "no signal stuck pending" grep -q "^ShdPnd:[[:space:]]*0*$" "/proc/$DAEMON/status"
}

test_sighup_reloads() {
	running "$DAEMON" || return 1
	# keeps 10.0.0.20 (a reload that deletes every service is refused) and adds one
	printf 'service add 10.0.0.20:80/tcp\nservice add 10.0.0.21:80/tcp\nbackend add 10.0.0.21:80/tcp 10.1.0.3\n' >"$CONF"
	kill -HUP "$DAEMON"
	check "SIGHUP applied the changed config: $(svc_list)" \
		lib_wait_for 2 eval '[ "$(svc_list)" = "10.0.0.20:80/tcp 10.0.0.21:80/tcp " ]' || return 1
	check "SIGHUP logged" lib_wait_for 1 logged "SIGHUP: converged to $CONF" || return 1
	check "still running" running "$DAEMON"
}

test_sigterm_stops_within_1s() {
	local ms
	running "$DAEMON" || return 1
	kill -TERM "$DAEMON"
	ms=$(ms_until_exited "$DAEMON")
	check "exited ${ms} ms after SIGTERM" [ "$ms" -le 1000 ] || return 1
	check "pid file removed" [ ! -e "$PIDFILE" ] || return 1
	check "socket removed" [ ! -e "$CHLBD_SOCK" ] || return 1
	check "stop logged" lib_wait_for 1 logged "signal 15: stopping" || return 1
	check "pins stay (the program keeps forwarding)" pinned
}

test_shutdown_returns_after_exit() {
	daemon -i v0 -c "$CONF" || return 1
	check "adopted the pins" [ "$(svc_list)" = "10.0.0.20:80/tcp 10.0.0.21:80/tcp " ] || return 1
	ctl shutdown >/dev/null || return 1
	# no polling: the daemon must be gone when chlbctl returns
	check "exited when chlbctl shutdown returned" exited "$DAEMON" || return 1
	check "pid file removed" [ ! -e "$PIDFILE" ] || return 1
	# the same in the foreground
	chlbd_start xdp-generic || return 1
	ctl shutdown >/dev/null || return 1
	check "foreground chlbd exited too" exited "$CHLBD_PID" || return 1
	chlbd_stop
}

test_failed_start_says_why() {
	local rc pin=$CHLBD_PIN bad=/sys/fs/bpf/chlb-test-$LIB_ID-bad t0
	LIB_PINS+=("$bad")
	t0=$(date +%s%N)
	CHLBD_PIN=$bad
	daemon -i v2 -i lo -m xdp
	rc=$?
	CHLBD_PIN=$pin
	check "exit $rc, the error on the caller's stderr: $OUT" said "$rc" "XDP program on 'lo'" ||
		return 1
	# a parent left waiting for a child that failed is killed by daemon()'s
	# timeout (124): a functional bound, not a latency one (5.2 s on a loaded VM)
	check "returned by itself, not killed by the 10 s timeout ($rc, $((($(date +%s%N) - t0) / 1000000)) ms)" \
		[ "$rc" != 124 ] || return 1
	check "no pid file" [ ! -e "$PIDFILE" ] || return 1
	check "no pins left" [ ! -e "$bad" ] || return 1
	check "no program left on v2" [ -z "$(ip -n "$D_NS" link show v2 | grep xdp)" ]
}

test_second_daemon_refused() {
	local rc first
	daemon -i v0 || return 1
	first=$DAEMON
	daemon -i v0
	rc=$?
	check "second start refused ($rc): $OUT" said "$rc" "in use by another chlbd" || return 1
	check "the pid file still names the first" [ "$(cat "$PIDFILE" 2>/dev/null)" = "$first" ] ||
		return 1
	DAEMON=$first
	ctl shutdown --detach >/dev/null || return 1
	check "gone when shutdown --detach returned" exited "$first" || return 1
	check "unpinned" unpinned
}

# no syslog daemon (a container, a minimal VM): the start says the log goes
# nowhere, on the caller's terminal - it once went silent
test_no_syslog_warned() {
	local out
	out=$(timeout 10 unshare -m --propagation private sh -c 'mount -t tmpfs -o mode=0755 chlb-dev /dev &&
		mknod -m 666 /dev/null c 1 3 && mknod -m 666 /dev/urandom c 1 9 && exec "$@"' _ \
		"$CHLBD" --netns "$D_NS" -i v0 -m xdp-generic -s "$CHLBD_SOCK" --pin-dir "$CHLBD_PIN" \
		--state "$CHLBD_STATE" --pid-file "$PIDFILE" 2>&1)
	check "started: exit $?" [ $? = 0 ] || return 1
	DAEMON=$(cat "$PIDFILE") && LIB_PIDS+=("$DAEMON")
	check "warned on the terminal: $out" grep -qF "no syslog daemon listens on /dev/log" <<<"$out" || return 1
	ctl shutdown >/dev/null
}

lib_run
