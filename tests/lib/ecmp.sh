#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# Several LB hosts behind an ECMP router that learns the VIP from each over
# BGP: BIRD on the router and on every LB, a chlbd per LB with
# --route-table, real TCP from a client. Sourced by a suite after
# tests/lib.sh:
#
#   . "$(dirname "$0")/../lib.sh"; . "$(dirname "$0")/../lib/ecmp.sh"
#   ecmp_require; ecmp_build 3 4            # 3 LBs, 4 backends
#   ecmp_conf_write "$LIB_DIR/x.conf" ring "1 2 3 4"
#   for i in 1 2 3; do ecmp_lb_up $i -c "$LIB_DIR/x.conf"; done
#   ecmp_wait_nexthops 3 || ...
#   ecmp_hold_open h 300; ecmp_lb_die 2; ecmp_wait_nexthops 2; ecmp_survivors_to s h
#
# The functions: ecmp_build, ecmp_lb_add (a namespace), ecmp_lb_up / _fresh /
# _join (chlbd + BIRD running), ecmp_chlbd_start (or _launch, then _wait) /
# _stop / _wipe,
# ecmp_bird_start / _stop, the events ecmp_lb_die / _link_down / _withdraw,
# ecmp_nexthops / ecmp_wait_nexthops / ecmp_nexthop_from (the router's
# route), ecmp_table_routes (an LB's exported routes), ecmp_hold_open /
# ecmp_survivors_to / ecmp_survive (held connections across an event),
# ecmp_lb_flows / _packets (what an LB carried), ecmp_backends_forget (what
# earlier cases left on the backends), lbctl / lbbirdc / rtbirdc,
# and for changes across LBs ecmp_each_lb, ecmp_rollout and the per-LB
# options hook ecmp_chlbd_extra_args. Static ECMP instead of BGP:
# ecmp_static_route / _del (the router's own multipath route, no BIRD on
# the LBs; ECMP_TABLE= starts chlbd without --route-table), and
# ecmp_round_begin / ecmp_survivors_end (a round left in flight while an
# event runs).
#
#   client ns (-c)         router ns (-er)               switch ns (-sw)
#   eth0 10.0.1.2 ----- eth0 10.0.1.1                     br1 (uplink)
#                         up0 10.0.4.1 --------------- rtup |
#                                                      up1 ---- LB 1 eth0 10.0.4.11
#                                                      up2 ---- LB 2 eth0 10.0.4.12 ...
#                                                       br0 (backends)
#                         back 10.0.2.254 ----------- rtback |
#                                                      lb1 ---- LB 1 eth1 10.0.2.1
#                                                      lb2 ---- LB 2 eth1 10.0.2.2 ...
#                                                      b1 ----- backend 1 eth0 10.0.2.11 ...
#
# The router (ip_forward, fib_multipath_hash_policy=1) runs BIRD with
# docs/examples/bird-router.conf: dynamic eBGP from any LB of 10.0.4.0/24,
# `merge paths`, so the VIP's route has one nexthop per LB announcing it.
# Each LB (namespace -lbI) runs its own chlbd (native XDP on eth0, l2dsr
# to the backends through eth1; own pin directory, state file, socket;
# --route-table $ECMP_TABLE) and BIRD with docs/examples/bird-lb.conf: the
# example configs are what runs here, addresses replaced. The backends
# (tests/lib/topo.sh topo_add_backend: VIP on lo, chlb-echo) answer the
# client directly through the router (DSR). An LB's eth0 sits on a bridge:
# an LB that dies or loses its link is noticed by the router only when the
# BGP hold time (3 s) runs out, as across a real switch.
#
# IPv4 carries the traffic; the IPv6 VIP is announced too (the examples'
# ipv6 channels), and checked by route only.

ECMP_TABLE=${ECMP_TABLE:-100}  # the LBs' --route-table (a caller's `local ECMP_TABLE=`: none)
ECMP_VIP=$VIP4                 # 10.0.0.10 (topo.sh)
ECMP_ROUTER4=10.0.4.1
ECMP_ROUTER6=fd00:4::1
NS_ER=chlb-$LIB_ID-er
ECMP_LBS=()                    # LB numbers whose namespace exists
ECMP_NBE=0
ECMP_BIRD_DIR=$LIB_DIR/bird    # control sockets and configs
ECMP_CHLBD_ARGS=()             # more options for every LB's chlbd (e.g. --history-ms 1000)
declare -A ECMP_CHLBD_PID ECMP_BIRD_PID ECMP_PIN ECMP_STARTS

ns_lb() { echo "chlb-$LIB_ID-lb$1"; }
lb_up4() { echo "10.0.4.$((10 + $1))"; }
lb_up6() { echo "fd00:4::$((10 + $1))"; }
lb_sock() { echo "$LIB_DIR/lb$1.sock"; }
lb_state() { echo "$LIB_DIR/lb$1.state"; }
lb_bird_sock() { echo "$ECMP_BIRD_DIR/lb$1.ctl"; }
ECMP_ROUTER_SOCK=$ECMP_BIRD_DIR/router.ctl

# ecmp_require: what lib_require_e2e needs, plus BIRD (bird2, `make deps`):
# its absence fails the suite, it is not a skip.
ecmp_require() {
	lib_require_e2e
	command -v bird >/dev/null && command -v birdc >/dev/null ||
		die "bird and birdc not found: install bird2 (make deps)"
	mkdir -p "$ECMP_BIRD_DIR"
}

# ---- chlbctl and birdc per LB ----
# lbctl I ARGS...: chlbctl against LB I's chlbd.
lbctl() {
	local i=$1
	shift
	"$CHLBCTL" -s "$(lb_sock "$i")" "$@"
}
lbctl_quiet() { lbctl "$@" >/dev/null 2>&1; }

# lbbirdc I ARGS...: birdc against LB I's BIRD; rtbirdc ARGS...: the router's.
lbbirdc() {
	local i=$1
	shift
	birdc -s "$(lb_bird_sock "$i")" "$@"
}
rtbirdc() { birdc -s "$ECMP_ROUTER_SOCK" "$@"; }
bird_answers() { birdc -s "$1" show status >/dev/null 2>&1; }

# ---- BIRD configs: the examples, addresses replaced ----
ECMP_EXAMPLES=$LIB_ROOT/docs/examples

# ecmp_bird_router_conf FILE: docs/examples/bird-router.conf for this topology.
ecmp_bird_router_conf() {
	sed -e 's/^log syslog all;/log stderr all;/' \
		-e "s#198\.51\.100\.0/24#${ECMP_VIP%.*}.0/24#" \
		-e 's#2001:db8:100::/64#fd00::/64#' \
		-e "s/192\.0\.2\.1\b/$ECMP_ROUTER4/g" \
		-e 's#192\.0\.2\.0/24#10.0.4.0/24#' \
		"$ECMP_EXAMPLES/bird-router.conf" >"$1"
}

# ecmp_bird_lb_conf I FILE: docs/examples/bird-lb.conf for LB I.
ecmp_bird_lb_conf() {
	sed -e 's/^log syslog all;/log stderr all;/' \
		-e "s/kernel table 100;/kernel table $ECMP_TABLE;/" \
		-e "s/192\.0\.2\.11\b/$(lb_up4 "$1")/g" \
		-e "s/192\.0\.2\.1\b/$ECMP_ROUTER4/g" \
		-e "s/2001:db8:4::11\b/$(lb_up6 "$1")/g" \
		"$ECMP_EXAMPLES/bird-lb.conf" >"$2"
}

# ---- the topology ----
# ecmp_build NLB NBE: client, router (BIRD running), switch, NBE backends,
# and LB namespaces 1..NLB (no chlbd, no BIRD yet: ecmp_lb_up).
ecmp_build() {
	local nlb=$1 nbe=$2 i conf
	lib_ns_add "$NS_C"
	lib_ns_add "$NS_ER"
	lib_ns_add "$NS_SW"
	topo_client_link "$NS_ER"
	ip netns exec "$NS_ER" sysctl -qw net.ipv4.ip_forward=1 net.ipv6.conf.all.forwarding=1 \
		net.ipv4.fib_multipath_hash_policy=1 net.ipv6.fib_multipath_hash_policy=1 ||
		die "router sysctls"
	# the two segments: br1 (router + LBs' fronts), br0 (router, LBs' backs, backends)
	ip -n "$NS_SW" link add br1 type bridge || die "bridge br1"
	ip -n "$NS_SW" link set br1 up
	ip -n "$NS_SW" link add br0 type bridge || die "bridge br0"
	ip -n "$NS_SW" link set br0 mtu 1600 up
	ip -n "$NS_ER" link add up0 type veth peer name rtup netns "$NS_SW" || die "veth rtup"
	ip -n "$NS_ER" addr add $ECMP_ROUTER4/24 dev up0
	ip -n "$NS_ER" addr add $ECMP_ROUTER6/64 dev up0 nodad
	ip -n "$NS_ER" link set up0 up
	ip -n "$NS_SW" link set rtup master br1 up
	ip -n "$NS_ER" link add back type veth peer name rtback netns "$NS_SW" || die "veth rtback"
	ip -n "$NS_ER" link set back mtu 1600
	ip -n "$NS_ER" addr add 10.0.2.254/24 dev back
	ip -n "$NS_ER" addr add fd00:2::1/64 dev back nodad
	ip -n "$NS_ER" link set back up
	ip -n "$NS_SW" link set rtback mtu 1600 master br0 up
	for i in $(seq 1 "$nlb"); do
		ecmp_lb_add "$i"
	done
	# backends: topo.sh's, answering through the router, no decap (l2dsr)
	NS_LB=$(ns_lb 1) LB_BACK4=10.0.2.254 DECAP=0
	for i in $(seq 1 "$nbe"); do
		topo_add_backend "$i"
	done
	ECMP_NBE=$nbe
	for i in "${ECMP_LBS[@]}"; do ecmp_lb_neigh "$i"; done
	conf=$ECMP_BIRD_DIR/router.conf
	ecmp_bird_router_conf "$conf"
	lib_bg bird-router ip netns exec "$NS_ER" bird -f -c "$conf" -s "$ECMP_ROUTER_SOCK"
	lib_wait_up bird-router bird_answers "$ECMP_ROUTER_SOCK" || die "BIRD on the router did not start"
}

# ecmp_lb_add I: LB I's namespace, its front on br1 and back on br0, the
# backends as permanent neighbours; xdp_pass on the switch ports its
# native XDP sends to.
ecmp_lb_add() {
	local i=$1 ns
	ns=$(ns_lb "$i")
	lib_ns_add "$ns"
	ip -n "$ns" link add eth0 type veth peer name "up$i" netns "$NS_SW" || die "veth up$i"
	ip -n "$ns" addr add "$(lb_up4 "$i")/24" dev eth0
	ip -n "$ns" addr add "$(lb_up6 "$i")/64" dev eth0 nodad
	ip -n "$ns" link set eth0 up
	ip -n "$NS_SW" link set "up$i" master br1 up
	ip -n "$ns" link add eth1 type veth peer name "lb$i" netns "$NS_SW" || die "veth lb$i"
	ip -n "$ns" link set eth1 mtu 1600
	ip -n "$ns" addr add "10.0.2.$i/24" dev eth1
	ip -n "$ns" addr add "fd00:2::10$i/64" dev eth1 nodad
	ip -n "$ns" link set eth1 up
	ip -n "$NS_SW" link set "lb$i" mtu 1600 master br0 up
	ip -n "$NS_SW" link set dev "up$i" xdpdrv obj "$XDP_PASS_OBJ" sec xdp ||
		die "xdp_pass on up$i"
	ip -n "$NS_SW" link set dev "lb$i" xdpdrv obj "$XDP_PASS_OBJ" sec xdp ||
		die "xdp_pass on lb$i"
	ECMP_LBS+=("$i")
	[ "$ECMP_NBE" = 0 ] || ecmp_lb_neigh "$i"
}

# ecmp_lb_neigh I: LB I resolves every backend from a permanent entry.
ecmp_lb_neigh() {
	local i=$1 b mac
	for b in $(seq 1 "$ECMP_NBE"); do
		mac=$(ip -n "$(ns_b "$b")" -br link show eth0 | awk '{ print $3 }')
		ip -n "$(ns_lb "$i")" neigh replace "$(be_addr4 "$b")" lladdr "$mac" dev eth1 nud permanent
		ip -n "$(ns_lb "$i")" neigh replace "$(be_addr6 "$b")" lladdr "$mac" dev eth1 nud permanent
	done
}

# ---- the LBs' daemons ----
# ecmp_chlbd_extra_args I: more options for LB I's chlbd, one per line (a
# hook: a suite redefines it, e.g. to give each LB its sync peers).
ecmp_chlbd_extra_args() { :; }

# ecmp_chlbd_start I [ARGS]: LB I's chlbd (native XDP on eth0, --route-table),
# with ECMP_CHLBD_ARGS, ecmp_chlbd_extra_args and ARGS (e.g. -c FILE); waits
# until it answers.
ecmp_chlbd_start() { ecmp_chlbd_launch "$@" && ecmp_chlbd_wait "$1"; }

# ecmp_chlbd_launch I [ARGS]: ecmp_chlbd_start without the wait; then
# ecmp_chlbd_wait I (several LBs start at once: launch each, wait for each).
ecmp_chlbd_launch() {
	local i=$1 name extra
	shift
	mapfile -t extra < <(ecmp_chlbd_extra_args "$i")
	if [ -z "${ECMP_PIN[$i]:-}" ]; then
		lib_pindir "lb$i"
		ECMP_PIN[$i]=$LIB_PINDIR
	fi
	ECMP_STARTS[$i]=$((${ECMP_STARTS[$i]:-0} + 1))
	name=chlbd-lb$i-${ECMP_STARTS[$i]}
	lib_bg "$name" "$CHLBD" -i eth0 --netns "$(ns_lb "$i")" -m xdp -s "$(lb_sock "$i")" \
		--pin-dir "${ECMP_PIN[$i]}" --state "$(lb_state "$i")" ${ECMP_TABLE:+--route-table "$ECMP_TABLE"} -f \
		${ECMP_CHLBD_ARGS[@]+"${ECMP_CHLBD_ARGS[@]}"} ${extra[@]+"${extra[@]}"} "$@"
	ECMP_CHLBD_PID[$i]=$LIB_LASTPID
}

# ecmp_chlbd_wait I: LB I's chlbd answers (its log shown if it does not).
ecmp_chlbd_wait() { lib_wait_up "chlbd-lb$1-${ECMP_STARTS[$1]}" lbctl_quiet "$1" service list; }

# ecmp_chlbd_stop I [SIGNAL]: stop LB I's chlbd (TERM: its routes go; KILL:
# they stay, and so does its program).
ecmp_chlbd_stop() {
	local pid=${ECMP_CHLBD_PID[$1]:-}
	[ -n "$pid" ] || return 0
	# (no "Killed" job notice from the shell on SIGKILL)
	lib_stop "$pid" "${2:-TERM}" 2>/dev/null
	ECMP_CHLBD_PID[$1]=
}

# ecmp_chlbd_wipe I: LB I's chlbd stopped, its program detached, pins and
# state removed: the next start is a fresh LB. A killed chlbd's program is
# still attached through its pinned link: a chlbd adopts it first, so that
# `shutdown --detach` takes it away.
ecmp_chlbd_wipe() {
	local i=$1
	if [ -z "${ECMP_CHLBD_PID[$i]:-}" ] && [ -n "${ECMP_PIN[$i]:-}" ] &&
		[ -n "$(ls -A "${ECMP_PIN[$i]}" 2>/dev/null)" ]; then
		ecmp_chlbd_start "$i" || return 1
	fi
	if [ -n "${ECMP_CHLBD_PID[$i]:-}" ]; then
		lbctl_quiet "$i" shutdown --detach
		ecmp_chlbd_stop "$i"
	fi
	[ -z "${ECMP_PIN[$i]:-}" ] || rm -rf "${ECMP_PIN[$i]:?}"/*
	rm -f "$(lb_state "$i")" "$(lb_state "$i")".*
}

# ecmp_lb_fresh I [CONF] [ARGS]: LB I as a new host: whatever it had wiped,
# links up, chlbd started (configured from CONF in one batch, if given; with
# ARGS), BIRD running.
ecmp_lb_fresh() {
	local i=$1 conf=${2:-}
	shift $(($# < 2 ? $# : 2))
	ecmp_chlbd_wipe "$i" || return 1
	if [ -n "$conf" ]; then
		ecmp_lb_up "$i" -c "$conf" "$@"
	else
		ecmp_lb_up "$i" "$@"
	fi
}

# ecmp_bird_start I: BIRD in LB I's namespace (docs/examples/bird-lb.conf).
ecmp_bird_start() {
	local i=$1 conf=$ECMP_BIRD_DIR/lb$1.conf
	ecmp_bird_lb_conf "$i" "$conf"
	lib_bg "bird-lb$i" ip netns exec "$(ns_lb "$i")" bird -f -c "$conf" -s "$(lb_bird_sock "$i")"
	ECMP_BIRD_PID[$i]=$LIB_LASTPID
	lib_wait_up "bird-lb$i" bird_answers "$(lb_bird_sock "$i")"
}

# ecmp_bird_stop I [SIGNAL]: stop LB I's BIRD (TERM: it closes its session
# with a notification, the router drops the routes at once; KILL: silence,
# the router drops them when the hold time runs out).
ecmp_bird_stop() {
	local pid=${ECMP_BIRD_PID[$1]:-}
	[ -n "$pid" ] || return 0
	# (no "Killed" job notice from the shell on SIGKILL)
	lib_stop "$pid" "${2:-TERM}" 2>/dev/null
	ECMP_BIRD_PID[$1]=
}

# ecmp_lb_up I [CHLBD ARGS]: LB I serving: links up, chlbd and BIRD running.
ecmp_lb_up() {
	local i=$1
	shift
	ip -n "$(ns_lb "$i")" link set eth0 up && ip -n "$(ns_lb "$i")" link set eth1 up || return 1
	[ -n "${ECMP_CHLBD_PID[$i]:-}" ] || ecmp_chlbd_start "$i" "$@" || return 1
	[ -n "${ECMP_BIRD_PID[$i]:-}" ] || ecmp_bird_start "$i"
}

# ---- events ----
# ecmp_lb_die I: LB I dies silently, as a host that loses power: its links
# go down first (so not even the FIN of BIRD's closed session reaches the
# router, which would drop the session at once), then BIRD and chlbd are
# killed (its routes stay in its table). The router notices by the hold time.
ecmp_lb_die() {
	ip -n "$(ns_lb "$1")" link set eth0 down
	ip -n "$(ns_lb "$1")" link set eth1 down
	ecmp_bird_stop "$1" KILL
	ecmp_chlbd_stop "$1" KILL
}

# ecmp_lb_link_down I: LB I's front link goes down (daemons untouched):
# BGP keepalives stop, the router notices by the hold time.
ecmp_lb_link_down() { ip -n "$(ns_lb "$1")" link set eth0 down; }

# ecmp_lb_withdraw I: maintenance, as `systemctl stop chlbd` does it: chlbd
# stopped by TERM removes its routes, BIRD withdraws them; the data plane
# keeps serving what still arrives meanwhile.
ecmp_lb_withdraw() { ecmp_chlbd_stop "$1" TERM; }

# ecmp_lb_join I [CHLBD ARGS]: a new LB I (namespace made if needed) joins.
ecmp_lb_join() {
	local i=$1
	shift
	case " ${ECMP_LBS[*]} " in *" $i "*) ;; *) ecmp_lb_add "$i" ;; esac
	ecmp_lb_up "$i" "$@"
}

# ---- the router's view ----
# ecmp_nexthops [ADDR]: how many nexthops the router's route to ADDR (the
# VIP) has (0: no route).
ecmp_nexthops() {
	local fam=-4 addr=${1:-$ECMP_VIP}
	case $addr in *:*) fam=-6 ;; esac
	ip -n "$NS_ER" $fam -j route show exact "$addr" 2>/dev/null |
		jq '[.[] | if .nexthops then (.nexthops | length) elif .gateway then 1 else 0 end] | add // 0'
}

# ecmp_wait_nexthops K [SECONDS] [ADDR]: wait (20 s default) until the
# router's route has K nexthops; prints how long it took as a diag.
ecmp_wait_nexthops() {
	local k=$1 t=${2:-20} addr=${3:-$ECMP_VIP} t0
	t0=$(date +%s.%N)
	if lib_wait_for "$t" ecmp_nexthops_are "$k" "$addr"; then
		diag "router: $addr has $k nexthops after $(lib_elapsed "$t0") s"
		return 0
	fi
	diag "router: $addr has $(ecmp_nexthops "$addr") nexthops, not $k, after $t s:" \
		"$(ip -n "$NS_ER" route show exact "$addr" | tr '\n' ' ')"
	ecmp_diag_bgp
	return 1
}

# ecmp_diag_bgp: the BGP sessions as the router and each running LB see them.
ecmp_diag_bgp() {
	local i
	rtbirdc show protocols 2>&1 | sed 's/^/#   router: /'
	for i in "${ECMP_LBS[@]}"; do
		[ -n "${ECMP_BIRD_PID[$i]:-}" ] || continue
		lbbirdc "$i" show protocols 2>&1 | sed "s/^/#   lb$i: /"
		lbbirdc "$i" show route 2>&1 | sed "s/^/#   lb$i: /"
	done
}
ecmp_nexthops_are() { [ "$(ecmp_nexthops "$2")" = "$1" ]; }

# ecmp_nexthop_from I: the router's route to the IPv4 VIP has a nexthop via
# LB I (its front address): LB I is announced.
ecmp_nexthop_from() {
	ip -n "$NS_ER" -4 -j route show exact "$ECMP_VIP" 2>/dev/null |
		jq -e --arg gw "$(lb_up4 "$1")" \
			'[.[] | (.nexthops // [.])[] | .gateway] | index($gw) != null' >/dev/null
}

# ecmp_static_route "I J ...": the router's own route to the IPv4 VIP, one
# nexthop per LB I J ... (proto static), instead of BGP's: the router sends
# each LB its share of the flows whatever that LB's state (starting,
# half-configured), as a router with static routes does. The LBs then run
# no BIRD, and chlbd no --route-table (ECMP_TABLE=). No BGP route for the
# VIP may be there (ecmp_wait_nexthops 0 first); ecmp_static_route_del
# removes it before BGP announces again.
ecmp_static_route() {
	local i nh=()
	for i in $1; do nh+=(nexthop via "$(lb_up4 "$i")" dev up0); done
	ip -n "$NS_ER" -4 route replace "$ECMP_VIP/32" proto static "${nh[@]}"
}
ecmp_static_route_del() {
	ip -n "$NS_ER" -4 route del "$ECMP_VIP/32" proto static 2>/dev/null
	! ip -n "$NS_ER" -4 route show exact "$ECMP_VIP" proto static | grep -q .
}

# ecmp_table_routes I: LB I's exported routes (table $ECMP_TABLE, chlb's protocol), one per line.
ecmp_table_routes() {
	{
		ip -n "$(ns_lb "$1")" -4 route show table "$ECMP_TABLE" proto 250
		ip -n "$(ns_lb "$1")" -6 route show table "$ECMP_TABLE" proto 250
	} 2>/dev/null | awk '{ print $1, $2 }'
}

# ---- config ----
# ecmp_conf_write FILE ALGO "I J K": one service (the IPv4 VIP, l2dsr) with
# backends I J K, as one config file for every LB (configured in one batch).
ecmp_conf_write() {
	local file=$1 algo=$2 i
	{
		echo "service add $(vip_spec 4) algo $algo fwd l2dsr"
		for i in $3; do echo "backend add $(vip_spec 4) $(be_addr4 "$i") weight 100"; done
	} >"$file"
}

# ---- held connections ----
# ecmp_hold_open NAME M [CLIENT ARGS]: M idle connections from the client
# (each from its own source port: the router's L4 hash spreads them over
# the LBs), all answered. CLIENT ARGS go to chlb-client hold (-T MS: each
# exchange's deadline, 3000 by default).
ecmp_hold_open() {
	hold_start "$1" 4 "$2" "${@:3}" || return 1
	check "all $2 connections of $1 opened ($(summary_field "$LIB_DIR/$1.r0" ok) answered)" \
		[ "$(summary_field "$LIB_DIR/$1.r0" ok)" = "$2" ] && return 0
	awk '$1 == "fail" || $1 == "failcause"' "$LIB_DIR/$1.r0" | sed "s/^/# $1: /"
	return 1
}

# ecmp_survivors_to VAR NAME: one more exchange on every connection of NAME;
# how many have neither broken nor moved to another backend in any round is
# left in VAR. It returns the count in VAR, not on stdout, because it must
# run in the caller's shell: hold_round counts NAME's rounds in a variable
# of this shell, and in a $(...) subshell that count is lost, so the next
# call waits for the same round number again and counts that earlier
# round's lines (its own exchange goes unread).
ecmp_survivors_to() {
	hold_round "$2" >/dev/null || return 1
	printf -v "$1" '%s' "$(ecmp_survivors_count "$2")"
}

# ecmp_round_begin NAME: one more exchange on every connection of NAME,
# not waited for: an event then runs while the requests (and TCP's
# retransmissions of those an LB drops) are in flight. ecmp_survivors_end
# reads it. In the caller's shell, as ecmp_survivors_to.
ecmp_round_begin() {
	local fd r
	eval "fd=\$HOLD_FD_$1 r=\$((HOLD_ROUND_$1 + 1))"
	echo >&"$fd"
	eval "HOLD_ROUND_$1=$r"
	# shellcheck disable=SC2034 # as hold_round sets it (traffic.sh reads it)
	HOLD_LAST=$LIB_DIR/$1.r$r
}

# ecmp_survivors_end VAR NAME: wait for the round ecmp_round_begin began on
# NAME; as ecmp_survivors_to, the survivors so far in VAR.
ecmp_survivors_end() {
	local r
	eval "r=\$HOLD_ROUND_$2"
	hold_wait "$2" "$r" || return 1
	printf -v "$1" '%s' "$(ecmp_survivors_count "$2")"
}

# ecmp_survivors_count NAME: of NAME's connections, how many neither broke
# nor moved in any round read so far.
ecmp_survivors_count() {
	local n bad
	n=$(summary_field "$LIB_DIR/$1.r0" ok)
	bad=$(cat "$LIB_DIR/$1".r[1-9]* | awk '$1 == "fail" || $1 == "moved" { print $2 }' |
		sort -u | wc -l)
	echo $((n - bad))
}

# ecmp_survive NAME K WHAT CMD...: CMD (an event), then wait until the
# router's route has K nexthops, then one exchange on every connection of
# NAME. Diag "WHAT: S of N connections survived"; 0 if S >= 99.9% of N
# (the goal for several LB hosts).
ecmp_survive() {
	local name=$1 k=$2 what=$3 n s
	shift 3
	"$@" || {
		diag "$what: the event ($*) failed"
		return 1
	}
	ecmp_wait_nexthops "$k" || return 1
	ecmp_survivors_to s "$name" || return 1
	n=$(summary_field "$LIB_DIR/$name.r0" ok)
	diag "$what: $s of $n connections survived"
	[ $((s * 1000)) -ge $((n * 999)) ]
}

# ecmp_backends_forget: the backends drop what is left of the client's
# connections (ss -K): a connection whose client went away unseen by its
# backend (reset through another backend, or closed while its LB was
# wiped) stays ESTABLISHED there, idle, and a later case's connection that
# reuses its 4-tuple meets it: the backend answers the SYN with a
# challenge ACK, the client's RST must reach that backend. A suite calls
# it with no connection held.
ecmp_backends_forget() {
	local b
	for b in $(seq 1 "$ECMP_NBE"); do
		ip netns exec "$(ns_b "$b")" ss -K -tn dst "$CLIENT4" >/dev/null 2>&1
	done
	return 0
}

# ecmp_lb_flows I: how many of the client's flows LB I's connection table
# has an entry for (the connections whose handshake it saw).
ecmp_lb_flows() {
	lbctl "$1" -j conns 2>/dev/null |
		jq --arg c "$CLIENT4:" '[.conns[]? | select(.client | startswith($c))] | length'
}

# ecmp_lb_packets I: packets LB I's data plane forwarded for its services
# (a connection moved to it mid-way gets no entry there, but its packets count).
ecmp_lb_packets() {
	lbctl "$1" -j stats 2>/dev/null | jq '[.services[]?.packets] | add // 0'
}

# ---- hooks for later cases ----
# ecmp_rollout SECONDS CMD ARGS...: ecmp_each_lb, SECONDS apart (a change
# rolled out to the LBs one after another: ecmp_rollout 1.5 lbctl backend
# add VIP ADDR).
ecmp_rollout() {
	local gap=$1 cmd=$2 i first=1
	shift 2
	for i in "${ECMP_LBS[@]}"; do
		[ -n "${ECMP_CHLBD_PID[$i]:-}" ] || continue
		[ $first = 1 ] || sleep "$gap"
		first=0
		"$cmd" "$i" "$@" || return 1
	done
}

# ecmp_each_lb CMD ARGS...: CMD I ARGS... for every LB whose chlbd runs, one
# after another (a rolling change: ecmp_each_lb lbctl backend add VIP ADDR).
ecmp_each_lb() {
	local cmd=$1 i
	shift
	for i in "${ECMP_LBS[@]}"; do
		[ -n "${ECMP_CHLBD_PID[$i]:-}" ] || continue
		"$cmd" "$i" "$@" || return 1
	done
}
