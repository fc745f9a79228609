#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# Shared runner and topology builders for the shell suites (tests/daemon,
# tests/e2e, the demo). Source it, define test_* functions, call lib_run.
#
#   . "$(dirname "$0")/../lib.sh"
#   test_something() { ...; check "what" [ "$a" = "$b" ] || return 1; }
#   lib_run            # every test_* in file order, or: lib_run test_a test_b
#                      # (ONLY="test_a" in the environment overrides both)
#
# Output is TAP ("1..N", "ok N - name", "not ok N - name") plus a closing
# "N passed, N failed" line; the exit status is 0 only if every test passed.
# Everything a run creates is named with one 4-hex-digit run id ($LIB_ID) and
# registered here; the EXIT/INT/TERM trap removes all of it (processes,
# network namespaces, pin directories under /sys/fs/bpf, the scratch dir),
# also when a test fails or the suite is interrupted.
set -u
LIB_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=${BUILD:-build}
case $BUILD in /*) ;; *) BUILD=$LIB_ROOT/$BUILD ;; esac
LIB_ID=$(printf '%04x' $(((RANDOM << 1 ^ $$) & 0xffff)))
LIB_DIR=$(mktemp -d "/tmp/chlb-test-$LIB_ID.XXXX")
LIB_NS=()   # network namespaces we created
LIB_PINS=() # bpffs directories we created
LIB_PIDS=() # background processes we started
LIB_QUIET=${LIB_QUIET:-0}

CHLBD=$BUILD/chlbd
CHLBCTL=$BUILD/chlbctl
ECHO_BIN=$BUILD/tests/tools/chlb-echo
CLIENT_BIN=$BUILD/tests/tools/chlb-client
XDP_PASS_OBJ=$BUILD/xdp_pass.bpf.o

# ---- messages ----
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

# ---- cleanup ----
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
trap 'lib_cleanup' EXIT
trap 'lib_cleanup; exit 130' INT
trap 'lib_cleanup; exit 143' TERM

# lib_bg NAME CMD...: start CMD in the background, output in $LIB_DIR/NAME.log;
# the pid is registered for cleanup and left in $LIB_LASTPID.
lib_bg() {
	local name=$1
	shift
	"$@" >"$LIB_DIR/$name.log" 2>&1 &
	LIB_LASTPID=$!
	LIB_PIDS+=("$LIB_LASTPID")
}

# lib_stop PID [SIGNAL]: signal a process started by lib_bg (TERM by default),
# give it 5 s to exit, then KILL it, and reap it.
lib_stop() {
	kill "-${2:-TERM}" "$1" 2>/dev/null
	for _ in $(seq 50); do
		kill -0 "$1" 2>/dev/null || break
		sleep 0.1
	done
	kill -KILL "$1" 2>/dev/null
	wait "$1" 2>/dev/null
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

# lib_pindir SUFFIX: a fresh pin directory in the host's bpffs, removed at
# exit; its path in $LIB_PINDIR. (Not for $(...): the registration must
# happen in this shell.)
lib_pindir() {
	lib_require_bpffs
	LIB_PINDIR=/sys/fs/bpf/chlb-test-$LIB_ID-$1
	mkdir -p "$LIB_PINDIR" || die "couldn't create $LIB_PINDIR"
	LIB_PINS+=("$LIB_PINDIR")
}

# ---- preconditions ----
lib_require_root() {
	[ "$(id -u)" = 0 ] || die "needs root (BPF, XDP, network namespaces)"
	ip netns add "chlb-$LIB_ID-probe" 2>/dev/null || die "can't create network namespaces"
	ip netns del "chlb-$LIB_ID-probe"
}

# lib_require_bpffs: a bpffs on /sys/fs/bpf, for pins that must outlive the
# suite's processes. A fresh host (no systemd) has none: mount it as chlbd
# does (user/chlbd/bpffs.c: same options, same flock on the directory, so
# suites and chlbds starting together never stack two mounts).
lib_bpffs_here() { [ "$(stat -f -c %T /sys/fs/bpf 2>/dev/null)" = bpf_fs ]; }
lib_require_bpffs() {
	lib_bpffs_here && return 0
	flock /sys/fs/bpf sh -c '[ "$(stat -f -c %T /sys/fs/bpf)" = bpf_fs ] ||
		mount -t bpf -o mode=0700 bpf /sys/fs/bpf' || die "couldn't mount a bpffs on /sys/fs/bpf"
	diag "/sys/fs/bpf had no bpffs: mounted one (mount -t bpf -o mode=0700 bpf /sys/fs/bpf), as chlbd does"
}

# lib_require_e2e: root, a bpffs, and the binaries the namespace topology and chlbd use.
lib_require_e2e() {
	lib_require_root
	lib_require_bpffs
	lib_require_bins "$CHLBD" "$CHLBCTL" "$ECHO_BIN" "$CLIENT_BIN" "$XDP_PASS_OBJ"
}

# lib_require_bins PATH...: every path must exist (built by `make all`).
# The run then uses private copies, so a rebuild while it runs (parallel
# development) cannot swap a binary under it.
lib_require_bins() {
	local f v
	for f in "$@"; do
		[ -x "$f" ] || [ -f "$f" ] || die "missing $f (run make all)"
	done
	mkdir -p "$LIB_DIR/bin"
	for v in CHLBD CHLBCTL ECHO_BIN CLIENT_BIN XDP_PASS_OBJ; do
		f=${!v}
		[ -f "$f" ] || continue
		cp "$f" "$LIB_DIR/bin/" || die "couldn't copy $f"
		printf -v "$v" '%s' "$LIB_DIR/bin/$(basename "$f")"
	done
}

# ---- runner ----
LIB_PASSED=0
LIB_FAILED=0
lib_run() {
	local tests=("$@") t n=0 t0 rc
	if [ ${#tests[@]} -eq 0 ]; then
		mapfile -t tests < <(grep -oE '^test_[A-Za-z0-9_]+ *\(\)' "$0" | sed 's/ *()//')
	fi
	# ONLY="test_a test_b": run just those (while developing a suite).
	if [ -n "${ONLY:-}" ]; then
		read -r -a tests <<<"$ONLY"
	fi
	echo "1..${#tests[@]}"
	for t in "${tests[@]}"; do
		n=$((n + 1))
		t0=$(date +%s.%N)
		"$t"
		rc=$?
		if [ $rc -eq 0 ]; then
			echo "ok $n - $t # $(lib_elapsed "$t0")s"
			LIB_PASSED=$((LIB_PASSED + 1))
		else
			echo "not ok $n - $t # $(lib_elapsed "$t0")s"
			LIB_FAILED=$((LIB_FAILED + 1))
		fi
	done
	echo "# $LIB_PASSED passed, $LIB_FAILED failed"
	[ $LIB_FAILED -eq 0 ]
}

lib_elapsed() {
	awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }'
}

# lib_wait_for SECONDS CMD...: poll CMD every 0.1 s until it succeeds.
lib_wait_for() {
	local deadline=$(($(date +%s%N) + $1 * 1000000000))
	shift
	until "$@" 2>/dev/null; do
		[ "$(date +%s%N)" -lt "$deadline" ] || return 1
		sleep 0.1
	done
}

# tcp_probe NS ADDR PORT: a TCP connection from NS succeeds within 2 s.
tcp_probe() {
	ip netns exec "$1" timeout 2 bash -c "exec 3<>/dev/tcp/$2/$3" 2>/dev/null
}

# ---- topology ----
# One topology serves both forwarding modes:
#
#   client ns            LB ns                    switch ns          backend ns (xN)
#   eth0 10.0.1.2 ---- eth0 10.0.1.1               br0
#                        eth1 10.0.2.1 ------- lbport  |
#                                                 b1 ---------------- eth0 10.0.2.11
#                                                 b2 ---------------- eth0 10.0.2.12 ...
#
# IPv6: fd00:1::/64 in front, fd00:2::/64 behind the LB. The LB routes
# (forwarding on, as bpf_fib_lookup needs) and is the backends' gateway: the
# client reaches the VIP through the LB, the backends answer it directly via
# their default route (DSR, the LB's kernel only forwards the replies).
# l2dsr: the backends share the LB's back L2 segment, hold the VIP on lo with
# arp_ignore=1/arp_announce=2. ipip: the same, plus chlb's decap program on
# each backend's eth0 (the kernel here has no ipip module); the back segment
# has MTU 1600 so an encapsulated 1500-byte packet still fits.
#
# Native XDP on the LB sends frames out through veths whose peers must run
# an XDP program of their own, else the frames are dropped: the switch port
# "lbport" (receives redirected frames) and the client's eth0 (receives XDP_TX'ed
# replies such as ICMP too-big) get xdp_pass. The client's eth0 has TX
# checksum offload off: a frame XDP forwards keeps no checksum metadata.
VIP4=10.0.0.10
VIP6=fd00::10
CLIENT4=10.0.1.2
CLIENT6=fd00:1::2
LB_BACK4=10.0.2.1

# Namespace names: chlb-<id>-c (client), -lb, -sw, -b1..-bN.
NS_C=chlb-$LIB_ID-c
NS_LB=chlb-$LIB_ID-lb
NS_SW=chlb-$LIB_ID-sw
ns_b() { echo "chlb-$LIB_ID-b$1"; }
be_addr4() { echo "10.0.2.$((10 + $1))"; }
be_addr6() { echo "fd00:2::$((10 + $1))"; }

# lib_ns_add NAME: a network namespace (lo up, no rp_filter), removed at exit.
lib_ns_add() {
	ip netns add "$1" || die "couldn't create netns $1"
	LIB_NS+=("$1")
	ip -n "$1" link set lo up
	ip netns exec "$1" sysctl -qw net.ipv4.conf.all.rp_filter=0 net.ipv4.conf.default.rp_filter=0
}

# lib_veth NS A B: a veth pair A-B inside NS, both ends up.
lib_veth() {
	ip -n "$1" link add "$2" type veth peer name "$3" && ip -n "$1" link set "$2" up &&
		ip -n "$1" link set "$3" up
}

# topo_build NBACKENDS: the namespaces above, with NBACKENDS backends.
topo_build() {
	local n=$1 i
	TOPO_N=0
	lib_ns_add "$NS_C"
	lib_ns_add "$NS_LB"
	lib_ns_add "$NS_SW"
	# client <-> LB
	ip -n "$NS_C" link add eth0 type veth peer name eth0 netns "$NS_LB" || die "veth client"
	ip -n "$NS_C" addr add $CLIENT4/24 dev eth0
	ip -n "$NS_C" addr add $CLIENT6/64 dev eth0 nodad
	ip -n "$NS_C" link set eth0 up
	ip -n "$NS_C" route add default via 10.0.1.1
	ip -n "$NS_C" -6 route add default via fd00:1::1
	ip netns exec "$NS_C" ethtool -K eth0 tx off >/dev/null
	ip netns exec "$NS_C" sysctl -qw net.ipv4.ip_local_port_range="10000 65000" \
		net.ipv4.tcp_tw_reuse=1
	ip -n "$NS_LB" addr add 10.0.1.1/24 dev eth0
	ip -n "$NS_LB" addr add fd00:1::1/64 dev eth0 nodad
	ip -n "$NS_LB" link set eth0 up
	# LB <-> switch
	ip -n "$NS_SW" link add br0 type bridge || die "bridge"
	ip -n "$NS_SW" link set br0 mtu 1600 up
	ip -n "$NS_LB" link add eth1 type veth peer name lbport netns "$NS_SW" || die "veth lb"
	ip -n "$NS_LB" link set eth1 mtu 1600
	ip -n "$NS_LB" addr add $LB_BACK4/24 dev eth1
	ip -n "$NS_LB" addr add fd00:2::1/64 dev eth1 nodad
	ip -n "$NS_LB" link set eth1 up
	ip -n "$NS_SW" link set dev lbport mtu 1600 master br0 up
	ip netns exec "$NS_LB" sysctl -qw net.ipv4.ip_forward=1 net.ipv6.conf.all.forwarding=1
	for i in $(seq 1 "$n"); do
		topo_add_backend "$i"
	done
	# Frames the LB's native XDP sends out land on these peers.
	ip -n "$NS_SW" link set dev lbport xdpdrv obj "$XDP_PASS_OBJ" sec xdp ||
		die "couldn't attach xdp_pass on the switch port"
	ip -n "$NS_C" link set dev eth0 xdpdrv obj "$XDP_PASS_OBJ" sec xdp ||
		die "couldn't attach xdp_pass on the client"
	# Plain routing works before chlb is involved: client -> LB -> backend 1,
	# IPv4 and IPv6 (a first matrix case once found no IPv6 answer at all
	# within its 1.5 s timeouts: neighbours still being resolved).
	[ "$n" -lt 1 ] || client once -t "$(be_addr4 1)" -n 1 -q | grep -q '^backend b1 1' ||
		die "client can't reach backend 1 through the LB's kernel routing"
	[ "$n" -lt 1 ] || client once -t "$(be_addr6 1)" -n 1 -q | grep -q '^backend b1 1' ||
		die "client can't reach backend 1 over IPv6 through the LB's kernel routing"
}

# topo_backend_napi NS: xdp_pass on NS's eth0, so the veth receives through
# one NAPI queue, one CPU at a time, as a NIC queue does. Without it a
# backend's veth hands each frame to the backlog of whichever CPU forwarded
# it, and frames chlb redirects from both CPUs reach the backend's TCP on two
# CPUs at once: the request segment then raced the handshake ACK that was
# turning the request socket into the connection, found neither, and the
# listener reset the connection (1 in 1-4M churn connections, each
# traced to the same backend that held the connection; README, Limits).
topo_backend_napi() {
	ip -n "$1" link set dev eth0 xdpdrv obj "$XDP_PASS_OBJ" sec xdp ||
		die "couldn't attach xdp_pass on $1's eth0"
}

# topo_add_backend I: backend namespace I on the switch, VIPs on lo, chlb-echo
# named bI on port 80 (TCP and UDP), decap attached when DECAP=1 (default).
topo_add_backend() {
	local i=$1 ns a4 a6 mac
	ns=$(ns_b "$i")
	a4=$(be_addr4 "$i")
	a6=$(be_addr6 "$i")
	lib_ns_add "$ns"
	ip -n "$ns" link add eth0 type veth peer name "b$i" netns "$NS_SW" || die "veth b$i"
	ip -n "$ns" link set eth0 mtu 1600
	ip -n "$ns" addr add "$a4/24" dev eth0
	ip -n "$ns" addr add "$a6/64" dev eth0 nodad
	ip -n "$ns" link set eth0 up
	ip -n "$ns" route add default via $LB_BACK4
	ip -n "$ns" -6 route add default via fd00:2::1
	ip -n "$NS_SW" link set "b$i" mtu 1600 master br0 up
	# DSR: the VIP lives on lo; never answer or announce it on the wire.
	ip -n "$ns" addr add $VIP4/32 dev lo
	ip -n "$ns" addr add $VIP6/128 dev lo nodad
	ip netns exec "$ns" sysctl -qw net.ipv4.conf.all.arp_ignore=1 \
		net.ipv4.conf.all.arp_announce=2 net.ipv4.conf.eth0.arp_ignore=1 \
		net.ipv4.conf.eth0.arp_announce=2 net.core.somaxconn=4096 \
		net.ipv4.tcp_max_syn_backlog=4096
	if [ "${DECAP:-1}" = 1 ]; then
		topo_decap attach "$i" || die "couldn't attach decap on backend $i"
	fi
	topo_backend_napi "$ns"
	# The LB resolves each backend's MAC from its neighbour table: make it
	# permanent so no test depends on ARP/ND timing.
	mac=$(ip -n "$ns" -br link show eth0 | awk '{ print $3 }')
	ip -n "$NS_LB" neigh replace "$a4" lladdr "$mac" dev eth1 nud permanent
	ip -n "$NS_LB" neigh replace "$a6" lladdr "$mac" dev eth1 nud permanent
	lib_bg "echo-b$i" ip netns exec "$ns" "$ECHO_BIN" -n "b$i" -p 80
	eval "ECHO_PID_$i=$LIB_LASTPID"
	lib_wait_for 5 tcp_probe "$NS_LB" "$a4" 80 || die "LB can't reach backend $i"
	# and over IPv6, which also has the backend resolve the LB's address (its
	# default router, the DSR reply path) before any test counts on it
	lib_wait_for 5 tcp_probe "$NS_LB" "$a6" 80 || die "LB can't reach backend $i over IPv6"
	TOPO_N=$((TOPO_N > i ? TOPO_N : i))
}

# topo_add_routed_backend I: backend I one IP hop further, for ipip: behind a
# router (namespace -rt, 10.0.2.254 / fd00:2::fe on the switch) on its own
# segment 10.0.3.0/24 / fd00:3::/64, at 10.0.3.1I / fd00:3::1I. The LB reaches
# it through the router (the FIB gives the router's MAC); l2dsr cannot.
NS_RT=chlb-$LIB_ID-rt
be_raddr4() { echo "10.0.3.$((10 + $1))"; }
be_raddr6() { echo "fd00:3::$((10 + $1))"; }
topo_add_routed_backend() {
	local i=$1 ns mac
	ns=$(ns_b "$i")
	if [ -z "${TOPO_RT:-}" ]; then
		lib_ns_add "$NS_RT"
		ip -n "$NS_RT" link add eth0 type veth peer name rt netns "$NS_SW" || die "veth rt"
		ip -n "$NS_RT" link set eth0 mtu 1600
		ip -n "$NS_RT" addr add 10.0.2.254/24 dev eth0
		ip -n "$NS_RT" addr add fd00:2::fe/64 dev eth0 nodad
		ip -n "$NS_RT" link set eth0 up
		ip -n "$NS_SW" link set dev rt mtu 1600 master br0 up
		ip -n "$NS_RT" link add br1 type bridge
		ip -n "$NS_RT" addr add 10.0.3.254/24 dev br1
		ip -n "$NS_RT" addr add fd00:3::fe/64 dev br1 nodad
		ip -n "$NS_RT" link set br1 mtu 1600 up
		ip -n "$NS_RT" route add default via $LB_BACK4
		ip -n "$NS_RT" -6 route add default via fd00:2::1
		ip netns exec "$NS_RT" sysctl -qw net.ipv4.ip_forward=1 \
			net.ipv6.conf.all.forwarding=1
		ip -n "$NS_LB" route add 10.0.3.0/24 via 10.0.2.254
		ip -n "$NS_LB" -6 route add fd00:3::/64 via fd00:2::fe
		mac=$(ip -n "$NS_RT" -br link show eth0 | awk '{ print $3 }')
		ip -n "$NS_LB" neigh replace 10.0.2.254 lladdr "$mac" dev eth1 nud permanent
		ip -n "$NS_LB" neigh replace fd00:2::fe lladdr "$mac" dev eth1 nud permanent
		TOPO_RT=1
	fi
	lib_ns_add "$ns"
	ip -n "$ns" link add eth0 type veth peer name "b$i" netns "$NS_RT" || die "veth b$i"
	ip -n "$ns" link set eth0 mtu 1600
	ip -n "$ns" addr add "$(be_raddr4 "$i")/24" dev eth0
	ip -n "$ns" addr add "$(be_raddr6 "$i")/64" dev eth0 nodad
	ip -n "$ns" link set eth0 up
	ip -n "$ns" route add default via 10.0.3.254
	ip -n "$ns" -6 route add default via fd00:3::fe
	ip -n "$NS_RT" link set "b$i" mtu 1600 master br1 up
	ip -n "$ns" addr add $VIP4/32 dev lo
	ip -n "$ns" addr add $VIP6/128 dev lo nodad
	ip netns exec "$ns" sysctl -qw net.core.somaxconn=4096
	topo_decap attach "$i" || die "couldn't attach decap on backend $i"
	topo_backend_napi "$ns"
	lib_bg "echo-b$i" ip netns exec "$ns" "$ECHO_BIN" -n "b$i" -p 80
	lib_wait_for 5 tcp_probe "$NS_LB" "$(be_raddr4 "$i")" 80 ||
		die "LB can't reach routed backend $i"
	lib_wait_for 5 tcp_probe "$NS_LB" "$(be_raddr6 "$i")" 80 ||
		die "LB can't reach routed backend $i over IPv6"
}

# topo_decap attach|detach I: chlb's decap on backend I's eth0, through
# `chlbctl decap` (the same command an operator runs on a real backend).
topo_decap() {
	ip netns exec "$(ns_b "$2")" "$CHLBCTL" decap "$1" eth0 >/dev/null
}

# ---- chlbd ----
# chlbd_start MODE [EXTRA ARGS]: chlbd on the LB's eth0, joining only the
# LB's netns (pins stay in the host bpffs: DESIGN.md, test-environment notes).
# The pin dir, state file and socket stay the same across restarts.
CHLBD_PIN=
CHLBD_SOCK=$LIB_DIR/chlbd.sock
CHLBD_STATE=$LIB_DIR/chlbd.state
CHLBD_PID=
CHLBD_MODE=
chlbd_start() {
	local mode=$1
	shift
	if [ -z "$CHLBD_PIN" ]; then
		lib_pindir lb
		CHLBD_PIN=$LIB_PINDIR
	fi
	CHLBD_MODE=$mode
	CHLBD_STARTS=$((${CHLBD_STARTS:-0} + 1))
	lib_bg "chlbd.$CHLBD_STARTS" "$CHLBD" -i eth0 --netns "$NS_LB" -m "$mode" -s "$CHLBD_SOCK" \
		--pin-dir "$CHLBD_PIN" --state "$CHLBD_STATE" -f "$@"
	CHLBD_PID=$LIB_LASTPID
	lib_wait_up "chlbd.$CHLBD_STARTS" ctl_quiet stats
}

# chlbd_stop [SIGNAL]: stop chlbd (TERM by default) and wait for it to exit.
chlbd_stop() {
	[ -n "$CHLBD_PID" ] || return 0
	lib_stop "$CHLBD_PID" "${1:-TERM}"
	CHLBD_PID=
}

# ctl ARGS...: chlbctl against our chlbd; output on stdout, errors shown.
ctl() { "$CHLBCTL" -s "$CHLBD_SOCK" "$@"; }
ctl_quiet() { "$CHLBCTL" -s "$CHLBD_SOCK" "$@" >/dev/null 2>&1; }

# ---- traffic ----
# client MODE ARGS...: chlb-client in the client namespace.
client() { ip netns exec "$NS_C" "$CLIENT_BIN" "$@"; }

# backend_counts FILE: "NAME COUNT" lines of the last summary in FILE.
backend_counts() { awk '/^backend /{ print $2, $3 }' "$1"; }

# summary_field FILE FIELD: a field of the last summary line (ok, fail, moved, total).
summary_field() {
	awk -v f="$2" '/^summary /{ for (i = 2; i < NF; i++) if ($i == f) v = $(i + 1) } END { print v + 0 }' "$1"
}

# ---- services (e2e) ----
# be_name ADDR: the echo name (bI) of a backend address (10.0.2.1I / fd00:2::1I).
be_name() {
	local a=${1#[}
	a=${a%]}
	case $a in
	10.0.[23].*) echo "b$((${a##*.} - 10))" ;;
	fd00:[23]::*) echo "b$((${a##*:} - 10))" ;;
	*) echo "?$a" ;;
	esac
}

# vip_spec FAMILY [PORT] [PROTO]: "10.0.0.10:80/tcp" or "[fd00::10]:80/tcp".
vip_spec() {
	local port=${2:-80} proto=${3:-tcp}
	if [ "$1" = 6 ]; then echo "[$VIP6]:$port/$proto"; else echo "$VIP4:$port/$proto"; fi
}
vip_addr() { if [ "$1" = 6 ]; then echo "$VIP6"; else echo "$VIP4"; fi; }
# be_addr FAMILY I: backend I's address; I = rN: routed backend N.
be_addr() {
	case $2 in
	r*) if [ "$1" = 6 ]; then be_raddr6 "${2#r}"; else be_raddr4 "${2#r}"; fi ;;
	*) if [ "$1" = 6 ]; then be_addr6 "$2"; else be_addr4 "$2"; fi ;;
	esac
}

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

# sim_shares ALGO FAMILY "I J K" -> "MIN MAX": lowest and highest keyspace
# share of one backend (fractions of all flows), as `chlbctl sim` computes
# them for exactly these backends' names (addresses, see be_addr).
sim_shares() {
	local algo=$1 names="" n out i
	for i in $3; do names="$names,$(be_addr "$2" "$i")"; done
	names=${names#,}
	n=$(echo $3 | wc -w)
	out=$("$CHLBCTL" sim --algo "$algo" --backends "$n" --names "$names" --flows 10000 --samples 1000 --json) ||
		return 1
	printf '%s\n' "$out" | awk -v n="$n" '{
		match($0, /"balance_max": *[0-9.]+/); mx = substr($0, RSTART, RLENGTH); sub(/.*: */, "", mx)
		match($0, /"balance_min": *[0-9.]+/); mn = substr($0, RSTART, RLENGTH); sub(/.*: */, "", mn)
		printf "%.6f %.6f\n", mn / n, mx / n }'
}

# within_share COUNT TOTAL MIN MAX: COUNT of TOTAL independent flows is
# consistent with a share in [MIN, MAX]: binomial, 4 standard deviations
# (a false alarm once in ~15,000 checks).
within_share() {
	awk -v c="$1" -v n="$2" -v lo="$3" -v hi="$4" 'BEGIN {
		p = (lo + hi) / 2; sd = sqrt(n * p * (1 - p))
		ok = c >= n * lo - 4 * sd && c <= n * hi + 4 * sd
		if (!ok) printf "# %d of %d outside [%.1f, %.1f] (shares %.4f..%.4f, sd %.1f)\n", c, n, n * lo - 4 * sd, n * hi + 4 * sd, lo, hi, sd
		exit !ok }'
}

# spread_ok FILE ALGO "I J K" FAMILY: every backend's count in FILE is within
# what sim predicts for that backend set.
spread_ok() {
	local file=$1 algo=$2 list=$3 fam=$4 i total shares c rc=0
	shares=$(sim_shares "$algo" "$fam" "$list") || return 1
	list=${list//r/}
	total=$(summary_field "$file" ok)
	for i in $list; do
		c=$(awk -v b="b$i" '$1 == "backend" && $2 == b { print $3 }' "$file")
		# shellcheck disable=SC2086
		within_share "${c:-0}" "$total" $shares || {
			diag "b$i: ${c:-0} of $total flows"
			rc=1
		}
	done
	return $rc
}

# nstat_get NS COUNTER: absolute value of a kernel SNMP counter in NS.
nstat_get() {
	ip netns exec "$1" nstat -asz "$2" 2>/dev/null | awk -v k="$2" '$1 == k { print $2 }'
}

# ---- long-lived connections (chlb-client hold) ----
# hold_start NAME FAMILY N [CLIENT ARGS]: N connections kept open; round 0 done
# when this returns. Its "conn IDX SPORT BACKEND" lines are in $LIB_DIR/NAME.r0.
hold_start() {
	local name=$1 fam=$2 n=$3 fifo fd
	shift 3
	fifo=$LIB_DIR/$name.fifo
	mkfifo "$fifo"
	lib_bg "$name" bash -c "exec \"\$@\" <\"$fifo\"" _ ip netns exec "$NS_C" "$CLIENT_BIN" hold \
		-t "$(vip_addr "$fam")" -n "$n" "$@"
	exec {fd}>"$fifo"
	eval "HOLD_FD_$name=$fd HOLD_ROUND_$name=0"
	hold_wait "$name" 0
}

# hold_wait NAME R: wait (30 s at most) until round R is reported, then put
# its lines in $LIB_DIR/NAME.rR.
hold_wait() {
	local log=$LIB_DIR/$1.log
	lib_wait_for 30 grep -q "^summary round $2 " "$log" || {
		diag "hold $1: round $2 never finished"
		return 1
	}
	awk -v r="$2" 'BEGIN { cur = 0 } { if (cur == r) print } /^summary round /{ cur = $3 + 1 }' \
		"$log" >"$LIB_DIR/$1.r$2"
}

# hold_round NAME: one more exchange on every connection; the round's lines
# (moved/fail/backend/summary) end up in $LIB_DIR/NAME.rR, R in $HOLD_LAST.
hold_round() {
	local fd r
	eval "fd=\$HOLD_FD_$1 r=\$((HOLD_ROUND_$1 + 1))"
	echo >&"$fd"
	eval "HOLD_ROUND_$1=$r"
	HOLD_LAST=$LIB_DIR/$1.r$r
	hold_wait "$1" "$r"
}

# round_intact N: the last hold round ($HOLD_LAST) answered all N connections
# and none moved to another backend.
round_intact() {
	[ "$(summary_field "$HOLD_LAST" ok)" = "$1" ] && [ "$(summary_field "$HOLD_LAST" moved)" = 0 ]
}

# hold_stop NAME: close the connections (EOF on the client's stdin).
hold_stop() {
	local fd
	eval "fd=\${HOLD_FD_$1:-}"
	[ -n "$fd" ] && exec {fd}>&-
	eval "HOLD_FD_$1="
}
