#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# Health probes through the data path (`via vip`), real packets between
# namespaces: chlbd (TC data plane on the LB's eth0) attaches the probe
# steering program on eth0's egress; the LB has a route for the VIP towards
# the client side, so a connection from the LB to the VIP leaves by eth0.
# A connection marked CHLB_PROBE_MARK(slot) (chlb-markconn) then reaches
# exactly the backend of that slot (the echo server names itself), IPv4
# and IPv6, l2dsr and ipip; its reply comes back directly from the backend
# (VIP -> the LB's address), as DSR replies do. A backend that answers on
# its own address but has no VIP on lo (l2dsr) or no decap (ipip) fails
# the marked connection (a timeout) while a direct one works. An unmarked
# connection to the VIP is not steered (it follows the route, and the
# client does not serve the VIP), and the counters say what happened.
. "$(dirname "$0")/../lib.sh"

MARKCONN_BIN=$BUILD/tests/tools/chlb-markconn
LIB_BIN_VARS+=(MARKCONN_BIN)

lib_require_e2e
lib_require_bins "$MARKCONN_BIN"
topo_build 2
chlbd_start tc || die "chlbd did not start"

# The LB's route to the VIP: towards the client side (its eth0), in the LB's
# namespace only. A real LB host's default route does the same.
ip -n "$NS_LB" route add $VIP4/32 via $CLIENT4 || die "route to $VIP4"
ip -n "$NS_LB" -6 route add $VIP6/128 via $CLIENT6 || die "route to $VIP6"

# markconn FAMILY SLOT|- [ADDR]: a connection from the LB to the VIP (or
# ADDR) port 80, marked for SLOT (- : unmarked); prints the echo's answer.
markconn() {
	local to=${3:-$(vip_addr "$1")}
	if [ "$2" = - ]; then
		ip netns exec "$NS_LB" "$MARKCONN_BIN" -t 1500 "$to" 80
	else
		ip netns exec "$NS_LB" "$MARKCONN_BIN" -t 1500 -s "$2" "$to" 80
	fi
}

# slot_of FAMILY I: the data plane slot of backend I in the family's service.
slot_of() {
	ctl -j backend list "$(vip_spec "$1")" |
		jq -r --arg a "$(be_addr "$1" "$2")" '.backends[] | select(.address == $a) | .slot'
}

# reason NAME: a global reason counter.
reason() { ctl -j stats | jq -r --arg r "$1" '.global[$r] // .reasons[$r] // empty'; }

# steer_each FAMILY FWD: each backend's marked connection reaches that backend.
steer_each() {
	local fam=$1 fwd=$2 i slot got rc=0
	svc_setup "$fam" maglev "$fwd" "1 2" || return 1
	for i in 1 2; do
		slot=$(slot_of "$fam" "$i")
		[ -n "$slot" ] && [ "$slot" -ge 0 ] || {
			diag "no slot for b$i"
			return 1
		}
		# several source ports: every one goes to the marked backend, whatever the table says
		for _ in 1 2 3 4; do
			got=$(markconn "$fam" "$slot") || {
				diag "IPv$fam $fwd: marked for b$i (slot $slot): no answer"
				rc=1
				break
			}
			check "IPv$fam $fwd: marked for b$i (slot $slot), answered by ${got%% *}" \
				[ "${got%% *}" = "b$i" ] || {
				rc=1
				break
			}
		done
	done
	return $rc
}

test_l2dsr_v4() { steer_each 4 l2dsr; }
test_l2dsr_v6() { steer_each 6 l2dsr; }
test_ipip_v4() { steer_each 4 ipip; }
test_ipip_v6() { steer_each 6 ipip; }

# counted: the steered probes are counted, an unmarked connection is not steered
test_counters_and_unmarked() {
	local s0 s1 slot rc=0
	svc_setup 4 maglev l2dsr "1 2" || return 1
	slot=$(slot_of 4 1)
	s0=$(reason probe_steered)
	markconn 4 "$slot" >/dev/null || rc=1
	s1=$(reason probe_steered)
	# SYN, ACK, data, FIN/RST at least: every packet of the connection
	check "probe_steered counted the connection's packets ($s0 -> $s1)" \
		[ "$((s1 - s0))" -ge 3 ] || rc=1
	# unmarked: the route's way (to the client, which does not serve the VIP)
	s0=$(reason probe_steered)
	check "an unmarked connection to the VIP is not steered" \
		nogrep -q . < <(markconn 4 - 2>/dev/null) || rc=1
	s1=$(reason probe_steered)
	check "and not counted ($s0 -> $s1)" [ "$s0" = "$s1" ] || rc=1
	# a slot that serves nothing: dropped, counted
	s0=$(reason probe_bad_slot)
	check "a mark naming an empty slot gets no answer" \
		nogrep -q . < <(markconn 4 8000 2>/dev/null) || rc=1
	s1=$(reason probe_bad_slot)
	check "probe_bad_slot counted it ($s0 -> $s1)" [ "$((s1 - s0))" -ge 1 ] || rc=1
	return $rc
}

# fails_without FAMILY FWD WHAT: backend 2 without WHAT (vip: the VIP on lo;
# decap: the decap program) fails its marked connection and answers directly.
fails_without() {
	local fam=$1 fwd=$2 what=$3 ns slot got rc=0
	ns=$(ns_b 2)
	svc_setup "$fam" maglev "$fwd" "1 2" || return 1
	slot=$(slot_of "$fam" 2)
	check "IPv$fam $fwd: b2 answers marked before" [ "$(markconn "$fam" "$slot" | cut -d' ' -f1)" = b2 ] ||
		return 1
	case $what in
	vip)
		if [ "$fam" = 6 ]; then
			ip -n "$ns" addr del $VIP6/128 dev lo
		else
			ip -n "$ns" addr del $VIP4/32 dev lo
		fi
		;;
	decap) topo_decap detach 2 || return 1 ;;
	esac
	if got=$(markconn "$fam" "$slot" 2>&1); then
		diag "IPv$fam $fwd without $what: b2 still answered: $got"
		rc=1
	else
		check "IPv$fam $fwd: without $what, the marked connection fails ($got)" \
			grep -q timeout <<<"$got" || rc=1
	fi
	got=$(markconn "$fam" - "$(be_addr "$fam" 2)") || rc=1
	check "IPv$fam: b2 answers on its own address (${got%% *})" [ "${got%% *}" = b2 ] || rc=1
	got=$(markconn "$fam" "$(slot_of "$fam" 1)") || rc=1
	check "IPv$fam $fwd: b1 still answers marked (${got%% *})" [ "${got%% *}" = b1 ] || rc=1
	# put it back for the next case
	case $what in
	vip)
		if [ "$fam" = 6 ]; then
			ip -n "$ns" addr add $VIP6/128 dev lo nodad
		else
			ip -n "$ns" addr add $VIP4/32 dev lo
		fi
		;;
	decap) topo_decap attach 2 || rc=1 ;;
	esac
	return $rc
}

test_l2dsr_no_vip_on_lo_v4() { fails_without 4 l2dsr vip; }
test_l2dsr_no_vip_on_lo_v6() { fails_without 6 l2dsr vip; }
test_ipip_no_decap_v4() { fails_without 4 ipip decap; }
test_ipip_no_decap_v6() { fails_without 6 ipip decap; }

# (tc shows the program's name cut to the kernel's 15 characters.)
# chlbd stopped and restarted (in native XDP this time): the steering keeps
# working (the filter persists, the new program is swapped in); shutdown
# --detach removes the filter and its record.
test_restart_and_detach() {
	local slot got rc=0
	svc_setup 4 maglev l2dsr "1 2" || return 1
	slot=$(slot_of 4 2)
	chlbd_stop
	got=$(markconn 4 "$slot") || rc=1
	check "steered while chlbd is down (${got%% *})" [ "${got%% *}" = b2 ] || rc=1
	# restarted in another mode: the data plane moves to native XDP, the steering stays
	chlbd_start xdp || return 1
	got=$(markconn 4 "$slot") || rc=1
	check "steered after the restart in xdp mode (${got%% *})" [ "${got%% *}" = b2 ] || rc=1
	check "one egress filter on eth0" \
		[ "$(ip netns exec "$NS_LB" tc filter show dev eth0 egress | grep -c 'chlb_probe_stee')" = 1 ] ||
		rc=1
	check "its record is pinned" [ -e "$CHLBD_PIN/probe_$(ip -n "$NS_LB" -o link show eth0 | cut -d: -f1)" ] || rc=1
	ctl shutdown --detach >/dev/null || rc=1
	CHLBD_PID=
	check "shutdown --detach removed the egress filter" \
		nogrep -q chlb_probe_stee < <(ip netns exec "$NS_LB" tc filter show dev eth0 egress) || rc=1
	check "and its record" nogrep -q probe_ < <(ls "$CHLBD_PIN" 2>/dev/null) || rc=1
	return $rc
}

lib_run
