#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# Network namespaces, veths and addresses: the e2e topology (topo_build) and
# the daemon suites' one-namespace network (topo_daemon), the root and
# bpffs preconditions. Sourced by tests/lib.sh after runner.sh (every
# namespace is registered in LIB_NS for cleanup); topo_build and
# topo_add_*backend call daemon.sh (topo_decap: chlbctl) and traffic.sh
# (client, tcp_probe, echo_start) when they run.

XDP_PASS_OBJ=$BUILD/xdp_pass.bpf.o
LIB_BIN_VARS+=(XDP_PASS_OBJ)

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

# ---- building blocks ----
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

# ---- the daemon suites' network ----
# topo_daemon: one namespace (D_NS) with a veth pair v0-v1; v0 holds
# 10.1.0.1/24 and 2001:db8::1/64, and backends 10.1.0.2-60 are on-link with
# permanent neighbour entries, so next hops resolve without traffic. v0's
# ifindex in D_IFINDEX.
D_NS=chlb-$LIB_ID-d
topo_daemon() {
	local i
	lib_ns_add "$D_NS"
	lib_veth "$D_NS" v0 v1 || die "veth"
	ip -n "$D_NS" addr add 10.1.0.1/24 dev v0
	ip -n "$D_NS" addr add 2001:db8::1/64 dev v0 nodad
	for i in $(seq 2 60); do
		ip -n "$D_NS" neigh replace "10.1.0.$i" lladdr "02:00:00:00:01:$(printf %02x "$i")" \
			dev v0 nud permanent
	done
	D_IFINDEX=$(ip -n "$D_NS" -o link show v0 | cut -d: -f1)
}

# ---- the e2e topology ----
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

# Namespace names: chlb-<id>-c (client), -lb, -sw, -b1..-bN, -rt.
NS_C=chlb-$LIB_ID-c
NS_LB=chlb-$LIB_ID-lb
NS_SW=chlb-$LIB_ID-sw
NS_RT=chlb-$LIB_ID-rt
ns_b() { echo "chlb-$LIB_ID-b$1"; }
be_addr4() { echo "10.0.2.$((10 + $1))"; }
be_addr6() { echo "fd00:2::$((10 + $1))"; }
be_raddr4() { echo "10.0.3.$((10 + $1))"; }
be_raddr6() { echo "fd00:3::$((10 + $1))"; }

# be_addr FAMILY I: backend I's address; I = rN: routed backend N.
be_addr() {
	case $2 in
	r*) if [ "$1" = 6 ]; then be_raddr6 "${2#r}"; else be_raddr4 "${2#r}"; fi ;;
	*) if [ "$1" = 6 ]; then be_addr6 "$2"; else be_addr4 "$2"; fi ;;
	esac
}

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

# topo_client_link NS: the client's eth0 (10.0.1.2, fd00:1::2) and its
# first hop NS's eth0 (10.0.1.1, fd00:1::1): the LB here, the router in
# tests/lib/ecmp.sh.
topo_client_link() {
	local peer=$1
	ip -n "$NS_C" link add eth0 type veth peer name eth0 netns "$peer" || die "veth client"
	ip -n "$NS_C" addr add $CLIENT4/24 dev eth0
	ip -n "$NS_C" addr add $CLIENT6/64 dev eth0 nodad
	ip -n "$NS_C" link set eth0 up
	ip -n "$NS_C" route add default via 10.0.1.1
	ip -n "$NS_C" -6 route add default via fd00:1::1
	# frames an LB's XDP forwards carry no checksum metadata: compute it here
	ip netns exec "$NS_C" ethtool -K eth0 tx off >/dev/null
	ip netns exec "$NS_C" sysctl -qw net.ipv4.ip_local_port_range="10000 65000" \
		net.ipv4.tcp_tw_reuse=1
	ip -n "$peer" addr add 10.0.1.1/24 dev eth0
	ip -n "$peer" addr add fd00:1::1/64 dev eth0 nodad
	ip -n "$peer" link set eth0 up
}

# topo_build NBACKENDS: the namespaces above, with NBACKENDS backends.
topo_build() {
	local n=$1 i
	lib_ns_add "$NS_C"
	lib_ns_add "$NS_LB"
	lib_ns_add "$NS_SW"
	topo_client_link "$NS_LB"
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
	echo_start "$i"
	lib_wait_for 5 tcp_probe "$NS_LB" "$a4" 80 || die "LB can't reach backend $i"
	# and over IPv6, which also has the backend resolve the LB's address (its
	# default router, the DSR reply path) before any test counts on it
	lib_wait_for 5 tcp_probe "$NS_LB" "$a6" 80 || die "LB can't reach backend $i over IPv6"
}

# topo_add_routed_backend I: backend I one IP hop further, for ipip: behind a
# router (namespace -rt, 10.0.2.254 / fd00:2::fe on the switch) on its own
# segment 10.0.3.0/24 / fd00:3::/64, at 10.0.3.1I / fd00:3::1I. The LB reaches
# it through the router (the FIB gives the router's MAC); l2dsr cannot.
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
	echo_start "$i"
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
