#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# chlbd and chlbctl in the suites: pin directories, starting and stopping
# the suite's chlbd, chlbctl against it, and the daemon suites' fixture.
# Sourced by tests/lib.sh after runner.sh and topo.sh.
#
# One chlbd at a time is "the suite's chlbd": chlbd -f on $CHLBD_IF in the
# network namespace $CHLBD_NETNS (it joins only that one: the pins stay in
# the host's bpffs), with the pin directory, state file and socket below,
# the same across restarts. The e2e suites use the defaults (the LB's eth0,
# pins in /sys/fs/bpf/chlb-test-<id>-lb); daemon_fixture points them at the
# daemon suites' v0.

CHLBD=$BUILD/chlbd
CHLBCTL=$BUILD/chlbctl
LIB_BIN_VARS+=(CHLBD CHLBCTL)

# lib_pindir SUFFIX: a fresh pin directory in the host's bpffs, removed at
# exit; its path in $LIB_PINDIR. (Not for $(...): the registration must
# happen in this shell.)
lib_pindir() {
	lib_require_bpffs
	LIB_PINDIR=/sys/fs/bpf/chlb-test-$LIB_ID-$1
	mkdir -p "$LIB_PINDIR" || die "couldn't create $LIB_PINDIR"
	LIB_PINS+=("$LIB_PINDIR")
}

CHLBD_IF=eth0
CHLBD_NETNS=$NS_LB
CHLBD_PIN=        # made by the first chlbd_start (lib_pindir lb) unless set
CHLBD_SOCK=$LIB_DIR/chlbd.sock
CHLBD_STATE=$LIB_DIR/chlbd.state
CHLBD_PID=
CHLBD_MODE=
CHLBD_STARTS=0
CHLBD_LOG=        # the log of the last start: $LIB_DIR/chlbd-N.log
CHLBD_WRAP=()     # words before chlbd's path, e.g. nsenter into a mount namespace

# chlbd_start MODE [ARGS]: the suite's chlbd in the background, attached in
# MODE (xdp, xdp-generic, tc), with ARGS after the usual options (a later
# -m or --state wins); waits until it answers, else shows its log and fails.
chlbd_start() {
	local mode=$1
	shift
	if [ -z "$CHLBD_PIN" ]; then
		lib_pindir lb
		CHLBD_PIN=$LIB_PINDIR
	fi
	CHLBD_MODE=$mode
	CHLBD_STARTS=$((CHLBD_STARTS + 1))
	CHLBD_LOG=$LIB_DIR/chlbd-$CHLBD_STARTS.log
	lib_bg "chlbd-$CHLBD_STARTS" ${CHLBD_WRAP[@]+"${CHLBD_WRAP[@]}"} "$CHLBD" -i "$CHLBD_IF" \
		--netns "$CHLBD_NETNS" -m "$mode" -s "$CHLBD_SOCK" --pin-dir "$CHLBD_PIN" \
		--state "$CHLBD_STATE" -f "$@"
	CHLBD_PID=$LIB_LASTPID
	lib_wait_up "chlbd-$CHLBD_STARTS" ctl_quiet service list
}

# chlbd_stop [SIGNAL]: stop chlbd (TERM by default) and wait for it to exit.
chlbd_stop() {
	[ -n "$CHLBD_PID" ] || return 0
	lib_stop "$CHLBD_PID" "${1:-TERM}"
	CHLBD_PID=
}

# ctl ARGS...: chlbctl against the suite's chlbd; output on stdout, errors shown.
ctl() { "$CHLBCTL" -s "$CHLBD_SOCK" "$@"; }
ctl_quiet() { "$CHLBCTL" -s "$CHLBD_SOCK" "$@" >/dev/null 2>&1; }

# saved: the state (`chlbctl save`) without comments.
saved() { ctl save | grep -v '^#'; }

# daemon_fixture: what the daemon suites (tests/daemon/test_*.sh) share:
# root, a bpffs, chlbd, chlbctl and chlb-probe; the topo_daemon network; the
# suite's chlbd on its v0, with its pin directory made now
# (/sys/fs/bpf/chlb-test-<id>-d: some suites hand it to chlbds of their own).
daemon_fixture() {
	lib_require_root
	lib_require_bpffs
	lib_require_bins "$CHLBD" "$CHLBCTL" "$PROBE_BIN"
	topo_daemon
	CHLBD_IF=v0
	CHLBD_NETNS=$D_NS
	lib_pindir d
	CHLBD_PIN=$LIB_PINDIR
}

# ---- services (e2e topology) ----
# svc_setup FAMILY ALGO FWD "I J K" [PROTO]: (re)create the service with backends I J K.
svc_setup() {
	local fam=$1 algo=$2 fwd=$3 list=$4 proto=${5:-tcp} vip i
	vip=$(vip_spec "$fam" 80 "$proto")
	ctl_quiet service del "$vip"
	ctl service add "$vip" algo "$algo" fwd "$fwd" >/dev/null || return 1
	for i in $list; do
		ctl backend add "$vip" "$(be_addr "$fam" "$i")" weight 100 >/dev/null || return 1
	done
}

# which_backend FAMILY SPORT [PROTO]: the backend chlbctl which names as
# serving ("established:") the client's flow from SPORT to the VIP.
which_backend() {
	local fam=$1 sport=$2 proto=${3:-tcp} src dst out
	if [ "$fam" = 6 ]; then
		src="[$CLIENT6]:$sport"
		dst="[$VIP6]:80"
	else
		src="$CLIENT4:$sport"
		dst="$VIP4:80"
	fi
	out=$(ctl which "$src" "$dst" "$proto") || return 1
	be_name "$(printf '%s\n' "$out" | grep '^established:' |
		grep -oE '10\.0\.[23]\.[0-9]+|fd00:[23]::[0-9a-f]+' | head -1)"
}

# stats_latencies SOCK N INTERVAL: N `stats` requests to the chlbd at SOCK,
# INTERVAL s apart, from one client process that stays up (what chlbctl
# sends: the statement, one line; one JSON reply), so each time is chlbd's
# answer, not a process start on a busy 2-core VM (chlbctl's own 10-80 ms
# there). A line per request: milliseconds, and whether the reply had the
# table's entries.
stats_latencies() {
	python3 - "$1" "$2" "$3" <<'EOF'
import json, socket, sys, time
for _ in range(int(sys.argv[2])):
    t = time.monotonic()
    s = socket.socket(socket.AF_UNIX)
    s.settimeout(30)
    s.connect(sys.argv[1])
    s.sendall(b"stats\n")
    s.shutdown(socket.SHUT_WR)
    reply = b""
    while True:
        d = s.recv(1 << 16)
        if not d:
            break
        reply += d
    s.close()
    ms = (time.monotonic() - t) * 1000
    print("%.1f %s" % (ms, "ct_entries" in json.loads(reply)), flush=True)
    time.sleep(float(sys.argv[3]))
EOF
}
