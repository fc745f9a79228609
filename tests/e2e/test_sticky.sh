#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# Cases 2, 3, 6 and 8 on long-lived TCP connections, chlbd in native XDP:
#   - sticky across an added backend (>= 200 connections), new flows move to
#     it in the proportion `chlbctl sim` predicts;
#   - `chlbctl which` names the backend serving each live connection, also
#     for connections the current table alone would send elsewhere;
#   - removing a backend breaks only its own connections; draining (weight 0)
#     first keeps them while no new ones arrive;
#   - an ICMP frag-needed / packet-too-big for a flow reaches its backend;
#   - ipip reaches a backend behind a router, and IPv6 backends of an IPv4
#     VIP (IPv4 in IPv6); a service mtu makes chlb answer oversized packets
#     with ICMP so the client's path MTU adapts.
. "$(dirname "$0")/../lib.sh"

HELD=${HELD:-240}
NEW=${NEW:-400}

lib_require_e2e
topo_build 4
chlbd_start xdp ${HISTORY_MS:+--history-ms "$HISTORY_MS"} || die "chlbd did not start"

# conns_on FILE NAME: indexes of round-0 connections served by NAME.
conns_on() { awk -v b="$2" '$1 == "conn" && $4 == b { print $2 }' "$1" | sort -n; }

# broken_after_del NAME OWN: after a backend removal, exchange on the held
# connections every 0.5 s (20 s at most) until all of OWN (its connections)
# broke. chlb may keep serving a removed backend's entry-less connections for
# its table-history window; what matters is that they break (the backend is
# gone) and that nothing else does. Fails if anything moved or if what broke
# is not exactly OWN. Runs in the caller's shell (round counters).
broken_after_del() {
	local name=$1 own=$2 broke="" moved=0
	for _ in $(seq 40); do
		hold_round "$name" || return 1
		broke=$(printf '%s\n%s\n' "$broke" "$(awk '$1 == "fail" { print $2 }' "$HOLD_LAST")" |
			grep . | sort -n)
		moved=$((moved + $(summary_field "$HOLD_LAST" moved)))
		[ "$(echo $broke)" != "$(echo $own)" ] || break
		sleep 0.5
	done
	[ $moved = 0 ] || diag "$moved connections moved to another backend"
	[ "$(echo $broke)" = "$(echo $own)" ] ||
		diag "$(echo $own | wc -w) connections on the removed backend, $(echo $broke | wc -w) broke"
	[ $moved = 0 ] && [ "$(echo $broke)" = "$(echo $own)" ]
}

# sticky_add FAMILY ALGO FWD
sticky_add() {
	local fam=$1 algo=$2 fwd=$3 vip out shares c n rc=0 sport be w bad=0
	vip=$(vip_spec "$fam")
	svc_setup "$fam" "$algo" "$fwd" "1 2 3" || return 1
	hold_start "h$fam$algo" "$fam" "$HELD" || return 1
	check "all $HELD connections opened" \
		[ "$(summary_field "$LIB_DIR/h$fam$algo.r0" ok)" = "$HELD" ] || rc=1
	ctl backend add "$vip" "$(be_addr "$fam" 4)" weight 100 >/dev/null || return 1
	hold_round "h$fam$algo" || return 1
	check "after adding b4: all $HELD still answered, none moved ($(summary_field "$HOLD_LAST" fail) failed, $(summary_field "$HOLD_LAST" moved) moved)" \
		round_intact "$HELD" || rc=1
	# which tells the truth for every live connection, including the ones the
	# new table alone would hand to b4.
	while read -r _ _ sport be; do
		w=$(which_backend "$fam" "$sport")
		[ "$w" = "$be" ] || {
			bad=$((bad + 1))
			[ $bad -gt 3 ] || diag "which sport $sport: says $w, served by $be"
		}
	done < <(grep '^conn ' "$LIB_DIR/h$fam$algo.r0")
	check "which agrees on all $HELD live connections ($bad disagree)" [ $bad = 0 ] || rc=1
	hold_stop "h$fam$algo"
	# New flows: b4 gets its share as sim predicts for these four names.
	out=$LIB_DIR/new$fam$algo.out
	client once -t "$(vip_addr "$fam")" -n "$NEW" -k 16 -q >"$out"
	check "new flows all answered" [ "$(summary_field "$out" ok)" = "$NEW" ] || rc=1
	c=$(awk '$1 == "backend" && $2 == "b4" { print $3 }' "$out")
	shares=$(sim_shares "$algo" "$fam" "1 2 3 4")
	n=$(summary_field "$out" ok)
	diag "new flows on b4: ${c:-0} of $n (sim: one backend's share $shares)"
	# shellcheck disable=SC2086
	within_share "${c:-0}" "$n" $shares || rc=1
	spread_ok "$out" "$algo" "1 2 3 4" "$fam" || rc=1
	return $rc
}

test_sticky_add_ipv4_ring_l2dsr() { sticky_add 4 ring l2dsr; }
test_sticky_add_ipv6_jump_ipip() { sticky_add 6 jump ipip; }
test_sticky_add_ipv4_maglev_ipip() { sticky_add 4 maglev ipip; }

test_remove_breaks_only_its_own() {
	local vip rc=0 own
	vip=$(vip_spec 4)
	svc_setup 4 ring l2dsr "1 2 3 4" || return 1
	hold_start rm 4 "$HELD" || return 1
	own=$(conns_on "$LIB_DIR/rm.r0" b2)
	check "b2 serves some of the held connections" [ -n "$own" ] || return 1
	ctl backend del "$vip" "$(be_addr4 2)" >/dev/null || return 1
	check "the connections that broke are exactly b2's" broken_after_del rm "$own" || rc=1
	hold_stop rm
	return $rc
}

test_drain_keeps_established() {
	local vip rc=0 own out
	vip=$(vip_spec 4)
	svc_setup 4 jump l2dsr "1 2 3 4" || return 1
	hold_start dr 4 "$HELD" || return 1
	own=$(conns_on "$LIB_DIR/dr.r0" b1)
	check "b1 serves some of the held connections" [ -n "$own" ] || return 1
	ctl backend set "$vip" "$(be_addr4 1)" weight 0 >/dev/null || return 1
	hold_round dr || return 1
	check "drained: all $HELD still answered by their backend ($(summary_field "$HOLD_LAST" fail) failed, $(summary_field "$HOLD_LAST" moved) moved)" \
		round_intact "$HELD" || rc=1
	out=$LIB_DIR/drain-new.out
	client once -t "$VIP4" -n 200 -k 16 -q >"$out"
	check "no new flow on the drained b1 ($(backend_counts "$out" | tr '\n' ' '))" \
		[ "$(summary_field "$out" ok)" = 200 ] &&
		! grep -q '^backend b1 ' "$out" || rc=1
	# Removing it after the drain breaks only what was still on it.
	ctl backend del "$vip" "$(be_addr4 1)" >/dev/null || return 1
	check "removal after drain breaks only b1's own connections" broken_after_del dr "$own" ||
		rc=1
	hold_stop dr
	return $rc
}

# icmp_check FAMILY FWD COUNTER: for 3 live flows, a forged too-big toward
# the VIP raises COUNTER on that flow's backend and on no other.
icmp_check() {
	local fam=$1 fwd=$2 ctr=$3 rc=0 i sport be before after d
	svc_setup "$fam" ring "$fwd" "1 2 3 4" || return 1
	hold_start "ic$fam" "$fam" 24 || return 1
	while read -r _ _ sport be; do
		for i in 1 2 3 4; do before[$i]=$(nstat_get "$(ns_b $i)" "$ctr"); done
		client icmp -t "$(vip_addr "$fam")" -p 80 -s "$sport" >/dev/null || rc=1
		sleep 0.3
		for i in 1 2 3 4; do
			after=$(nstat_get "$(ns_b $i)" "$ctr")
			d=$((${after:-0} - ${before[$i]:-0}))
			if [ "b$i" = "$be" ]; then
				check "$ctr on $be (flow from port $sport) rose by 1, got $d" [ $d = 1 ] || rc=1
			else
				check "$ctr on b$i (not the flow's backend $be) unchanged, got +$d" [ $d = 0 ] ||
					rc=1
			fi
		done
	done < <(grep '^conn ' "$LIB_DIR/ic$fam.r0" | awk 'NR % 8 == 1')
	hold_stop "ic$fam"
	return $rc
}

test_icmp_frag_needed_ipv4_l2dsr() { icmp_check 4 l2dsr IcmpInDestUnreachs; }
test_icmp_packet_too_big_ipv6_ipip() { icmp_check 6 ipip Icmp6InPktTooBigs; }

# ipip to a backend one router away (a routed topology): the LB's
# FIB lookup yields the router's MAC, the outer header the backend's address.
test_ipip_through_a_router() {
	local fam out rc=0 sport be w
	topo_add_routed_backend 5
	for fam in 4 6; do
		svc_setup "$fam" ring ipip "1 2 r5" || return 1
		out=$LIB_DIR/routed$fam.out
		client once -t "$(vip_addr "$fam")" -n 300 -k 16 -T 2000 >"$out"
		diag "IPv$fam: $(backend_counts "$out" | sort | tr '\n' ' ')"
		check "IPv$fam: all 300 answered ($(summary_field "$out" fail) failed)" \
			[ "$(summary_field "$out" ok)" = 300 ] || rc=1
		spread_ok "$out" ring "1 2 r5" "$fam" || rc=1
		read -r _ _ sport be < <(grep " b5$" "$out" | head -1)
		w=$(which_backend "$fam" "$sport")
		check "which names the routed backend for sport $sport: $w" [ "$w" = b5 ] || rc=1
	done
	return $rc
}

# IPv4 VIP, IPv6 backends: the LB sends IPv4-in-IPv6 and the backends'
# decap turns the frame back into IPv4 (BPF_F_ADJ_ROOM_DECAP_L3_IPV4).
test_ipip_ipv4_vip_ipv6_backends() {
	local vip out rc=0 i
	vip=$(vip_spec 4)
	ctl_quiet service del "$vip"
	ctl service add "$vip" algo jump fwd ipip >/dev/null || return 1
	for i in 1 2 3; do
		ctl backend add "$vip" "$(be_addr6 $i)" weight 100 >/dev/null || return 1
	done
	out=$LIB_DIR/4in6.out
	client once -t "$VIP4" -n 300 -k 16 -T 2000 >"$out"
	diag "4in6: $(backend_counts "$out" | sort | tr '\n' ' ')"
	check "all 300 answered ($(summary_field "$out" fail) failed)" \
		[ "$(summary_field "$out" ok)" = 300 ] || rc=1
	spread_ok "$out" jump "1 2 3" 6 || rc=1
	return $rc
}

# A service mtu: an encapsulated packet that would exceed it is answered with
# ICMP frag-needed / packet-too-big (reduced by the outer header), so the
# client's path-MTU discovery adapts and big requests still go through.
mtu_case() {
	local fam=$1 want=$2 vip out rc=0 i before after pmtu
	vip=$(vip_spec "$fam")
	ctl_quiet service del "$vip"
	ctl service add "$vip" algo ring fwd ipip mtu 1500 >/dev/null || return 1
	for i in 1 2 3; do
		ctl backend add "$vip" "$(be_addr "$fam" $i)" weight 100 >/dev/null || return 1
	done
	ip -n "$NS_C" route flush cache >/dev/null 2>&1
	ip -n "$NS_C" -6 route flush cache >/dev/null 2>&1
	before=$(ctl stats | awk '$1 == "too_big" { print $2 }')
	out=$LIB_DIR/mtu$fam.out
	client once -t "$(vip_addr "$fam")" -n 20 -k 4 -P 4000 -T 5000 -q >"$out"
	after=$(ctl stats | awk '$1 == "too_big" { print $2 }')
	pmtu=$(ip -n "$NS_C" route get "$(vip_addr "$fam")" | grep -o 'mtu [0-9]*')
	check "IPv$fam: 20 requests of 4000 bytes answered ($(summary_field "$out" fail) failed)" \
		[ "$(summary_field "$out" ok)" = 20 ] || rc=1
	check "IPv$fam: chlb answered too-big packets (too_big ${before:-0} -> ${after:-0})" \
		[ "${after:-0}" -gt "${before:-0}" ] || rc=1
	check "IPv$fam: the client learnt path MTU $want ('${pmtu:-none}')" [ "$pmtu" = "mtu $want" ] ||
		rc=1
	return $rc
}

test_ipip_service_mtu_ipv4() { mtu_case 4 1480; }
test_ipip_service_mtu_ipv6() { mtu_case 6 1460; }

lib_run
