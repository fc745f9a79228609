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
	local fam=$1 algo=$2 fwd=$3 h=u$1 rc=0 m shares to_other vip sport be cur w nf
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
	nf=$(new_flows "$vip")
	sleep $(((UDP_IDLE_MS + 1500) / 1000))
	hold_round "$h" || return 1
	m=$(summary_field "$HOLD_LAST" moved)
	to_other=$(awk '$1 == "moved" && $5 != "b4"' "$HOLD_LAST" | wc -l)
	# every flow had an entry (the view's tables disagreed about it when it
	# started); idle past the timeout, each was decided again: a new flow
	nf=$(($(new_flows "$vip") - nf))
	check "each of the $FLOWS idle flows decided again counts as a new flow ($nf)" \
		[ "$nf" = "$FLOWS" ] || rc=1
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

lib_run
