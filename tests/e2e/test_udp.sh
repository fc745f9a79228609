#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# Case 7, UDP, chlbd in generic XDP: the datagrams of one flow (5-tuple) stick
# to one backend, also across an added backend; once a flow has been idle for
# longer than the UDP idle timeout, its next datagram is decided afresh (and
# so moves to the new backend when the current table says so).
. "$(dirname "$0")/../lib.sh"

FLOWS=${FLOWS:-200}
UDP_IDLE_MS=${UDP_IDLE_MS:-2000}

lib_require_e2e
topo_build 4
chlbd_start xdp-generic --udp-timeout-ms "$UDP_IDLE_MS" || die "chlbd did not start"

# new_flows VIP: the service's new_flows counter (chlbctl stats)
new_flows() { ctl -j stats | jq --arg v "$1" '.services[] | select(.service == $v) | .new_flows'; }

# udp_case FAMILY ALGO FWD
udp_case() {
	local fam=$1 algo=$2 fwd=$3 h=u$1 rc=0 m shares to_other vip sport be cur w nf ents
	vip=$(vip_spec "$fam" 80 udp)
	svc_setup "$fam" "$algo" "$fwd" "1 2 3" udp || return 1
	hold_start "$h" "$fam" "$FLOWS" -u || return 1
	check "all $FLOWS flows answered" [ "$(summary_field "$LIB_DIR/$h.r0" ok)" = "$FLOWS" ] ||
		rc=1
	# new_flows counts TCP SYNs and re-decided flows, never a UDP flow's
	# first datagram: nothing tells it from a running flow's (operations.md,
	# Counters and rates); the re-decided ones are counted below
	nf=$(new_flows "$vip")
	check "UDP flows' first datagrams are no new flows (new_flows $nf)" [ "$nf" = 0 ] || rc=1
	hold_round "$h" && hold_round "$h" || return 1
	check "two more datagrams per flow: same backend ($(summary_field "$HOLD_LAST" moved) moved, $(summary_field "$HOLD_LAST" fail) lost)" \
		round_intact "$FLOWS" || rc=1
	ctl backend add "$vip" "$(be_addr "$fam" 4)" weight 100 >/dev/null || return 1
	hold_round "$h" || return 1
	check "after adding b4, active flows stay ($(summary_field "$HOLD_LAST" moved) moved)" \
		round_intact "$FLOWS" || rc=1
	# Idle past the timeout: re-decided from the current table.
	ents=$(ctl -j conns "$vip" | jq '.services[0].live')
	nf=$(new_flows "$vip")
	sleep $(((UDP_IDLE_MS + 1500) / 1000))
	hold_round "$h" || return 1
	m=$(summary_field "$HOLD_LAST" moved)
	to_other=$(awk '$1 == "moved" && $5 != "b4"' "$HOLD_LAST" | wc -l)
	# a flow has an entry when the view's tables disagreed about it (the
	# empty table a service starts with, the add); idle past the timeout,
	# each of those was decided again: a new flow
	nf=$(($(new_flows "$vip") - nf))
	check "each of the $ents idle flows with an entry decided again counts as a new flow ($nf)" \
		[ "$nf" = "$ents" ] && [ "$ents" -ge "$m" ] || rc=1
	shares=$(sim_shares "$algo" "$fam" "1 2 3 4")
	diag "after the idle timeout $m of $FLOWS flows moved (sim: b4's share $shares)"
	check "re-decided flows moved only to the new backend ($to_other elsewhere)" [ "$to_other" = 0 ] ||
		rc=1
	# shellcheck disable=SC2086
	within_share "$m" "$FLOWS" $shares || rc=1
	# which tells the truth for UDP flows as well: moved and unmoved ones.
	while read -r _ _ sport be; do
		cur=$(awk -v s="$sport" '$1 == "moved" && $3 == s { print $5 }' "$HOLD_LAST")
		w=$(which_backend "$fam" "$sport" udp)
		check "which for UDP sport $sport says $w, served by ${cur:-$be}" [ "$w" = "${cur:-$be}" ] ||
			rc=1
	done < <(grep '^conn ' "$LIB_DIR/$h.r0" | awk 'NR % 20 == 1')
	hold_round "$h" || return 1
	check "the new decisions stick ($(summary_field "$HOLD_LAST" moved) moved vs round 0, was $m)" \
		[ "$(summary_field "$HOLD_LAST" moved)" = "$m" ] || rc=1
	hold_stop "$h"
	return $rc
}

test_udp_ipv4_ring_l2dsr() { udp_case 4 ring l2dsr; }
test_udp_ipv6_jump_ipip() { udp_case 6 jump ipip; }

# on_b NAME B: how many flows of hold NAME's first round went to backend bB
on_b() { awk -v b="b$2" '$1 == "conn" && $4 == b' "$LIB_DIR/$1.r0" | wc -l; }

# A UDP flow has no SYN: a datagram without an entry is decided by the
# view's oldest table, and the flows running across a change get their
# entries from it. After one UDP idle timeout every running flow has one,
# so the tables of before leave the view (not after --history-ms): a drained
# backend gets no new UDP flows from then on, an added one its share, and
# the flows that were running keep their backend. It runs last: its flows'
# entries, stale once udp_case re-creates the service, would be re-decided
# (new flows) by udp_case's first datagrams on a reused source port.
test_udp_drain_and_add_reach_new_flows() {
	local vip h=ud g=un rc=0 n i
	vip=$(vip_spec 4 80 udp)
	svc_setup 4 ring l2dsr "1 2 3" udp || return 1
	# the view's oldest table must be a full one: past the window of the setup
	sleep $(((UDP_IDLE_MS + 2000) / 1000))
	hold_start "$h" 4 "$FLOWS" -u || return 1
	ctl backend set "$vip" "$(be_addr 4 1)" weight 0 >/dev/null &&
		ctl backend add "$vip" "$(be_addr 4 4)" weight 100 >/dev/null || return 1
	# running across the change and past the window: a datagram a second
	for i in 1 2 3 4; do
		hold_round "$h" || return 1
		check "round $i after the drain and add: every running flow kept its backend ($(summary_field "$HOLD_LAST" moved) moved)" \
			round_intact "$FLOWS" || rc=1
		sleep 1
	done
	hold_start "$g" 4 "$FLOWS" -u || return 1
	n=$(on_b "$g" 1)
	check "new UDP flows after the window: none on drained b1 ($n of $FLOWS; before: $(on_b "$h" 1))" \
		[ "$n" = 0 ] || rc=1
	n=$(on_b "$g" 4)
	check "new UDP flows after the window: added b4 gets some ($n of $FLOWS)" [ "$n" -gt 0 ] || rc=1
	hold_stop "$h"
	hold_stop "$g"
	return $rc
}

lib_run
