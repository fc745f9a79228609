#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# Issue 19's goal with entry sync (chlbd --sync-listen/--sync-peer;
# docs/design.md, "Several LB hosts"): LB hosts behind a BGP/ECMP router
# (tests/lib/ecmp.sh: BIRD on the router and each LB, native XDP, l2dsr,
# real TCP) keep >= 99.9% of their established connections through the
# cases that break without sync. Per algorithm (ring, jump, maglev):
#
#   - LBs 1-3 configured step by step (service add, then one backend add
#     per command, one LB after another: their tables' histories differ);
#   - 300 held connections (A), then a rolling change: backend 4 added on
#     LB 1, 300 more connections opened (B, while only LB 1 has it), LB 2
#     1.5 s later, LB 3 1.5 s after that;
#   - at once: LB 1 dies silently (its connections to backend 4 move to LBs
#     that got their entries before they had backend 4: the rollout race),
#     LB 2 is withdrawn (chlbd stopped), a new LB 4 joins (its chlbd takes
#     the peers' entries before BIRD announces it), LB 1 comes back fresh
#     (pins and state gone; the same);
#   - after each event, one exchange on every connection of A and B: the
#     survivors (neither broken nor moved to another backend) are counted.
#
# The sync link is the LBs' back segment (10.0.2.I:7070); every LB gets the
# same --sync-peer list and leaves itself out. ECMP_SYNC=0 runs the same
# cases without sync, as a control (not in make test): connections break.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/../lib/ecmp.sh"

HELD=${HELD:-300}
ecmp_require
ecmp_build 3 4
VIP=$(vip_spec 4)
SYNC_PORT=7070
ECMP_SYNC=${ECMP_SYNC:-1}

sync_addr() { echo "10.0.2.$1:$SYNC_PORT"; }
# sync_args I: LB I's sync options (every LB of 1-4 a peer).
sync_args() {
	[ "$ECMP_SYNC" = 1 ] || return 0
	echo "--sync-listen $(sync_addr "$1") --sync-peer $(sync_addr 1) --sync-peer $(sync_addr 2) --sync-peer $(sync_addr 3) --sync-peer $(sync_addr 4)"
}

# synced I: LB I has the dump of every other LB whose chlbd runs.
synced() {
	local i=$1 j st
	[ "$ECMP_SYNC" = 1 ] || return 0
	for j in "${ECMP_LBS[@]}"; do
		[ "$j" != "$i" ] && [ -n "${ECMP_CHLBD_PID[$j]:-}" ] || continue
		st=$(lbctl "$i" -j stats | jq -r --arg p "$(sync_addr "$j")" \
			'.sync.peers[] | select(.peer == $p) | .receiving')
		[ "$st" = synced ] || return 1
	done
}

# lb_start_synced I [ARGS]: LB I's links up, its chlbd started with sync,
# then BIRD only once it has its peers' entries (operations.md: bring up
# a new LB). A namespace is made for a new LB.
lb_start_synced() {
	local i=$1 t0
	shift
	case " ${ECMP_LBS[*]} " in *" $i "*) ;; *) ecmp_lb_add "$i" ;; esac
	ip -n "$(ns_lb "$i")" link set eth0 up && ip -n "$(ns_lb "$i")" link set eth1 up || return 1
	# shellcheck disable=SC2046
	ecmp_chlbd_start "$i" $(sync_args "$i") "$@" || return 1
	t0=$(date +%s.%N)
	lib_wait_for 20 synced "$i" || {
		diag "LB $i: not synced: $(lbctl "$i" -j stats | jq -c '.sync.peers')"
		return 1
	}
	diag "LB $i has its peers' entries after $(lib_elapsed "$t0") s: $(ecmp_lb_flows "$i") of the client's"
	ecmp_bird_start "$i"
}

# lb_fresh_synced I [ARGS]: LB I wiped (pins, state), then lb_start_synced.
lb_fresh_synced() {
	[ -z "${ECMP_BIRD_PID[$1]:-}" ] || ecmp_bird_stop "$1"
	ecmp_chlbd_wipe "$1" || return 1
	lb_start_synced "$@"
}

# configure I ALGO: LB I's service, then backends 1-3, one statement each.
configure() {
	local b
	lbctl "$1" service add "$VIP" algo "$2" fwd l2dsr >/dev/null || return 1
	for b in 1 2 3; do
		lbctl "$1" backend add "$VIP" "$(be_addr4 "$b")" weight 100 >/dev/null || return 1
	done
}

# all_have N: every running LB has N entries of the client's connections.
all_have() {
	local i
	for i in "${ECMP_LBS[@]}"; do
		[ -n "${ECMP_CHLBD_PID[$i]:-}" ] || continue
		[ "$(ecmp_lb_flows "$i")" -ge "$1" ] || return 1
	done
}

# survive WHAT K CMD...: the event, K nexthops, then survivors of A and B.
survive() {
	local what=$1 k=$2 sa sb na nb
	shift 2
	"$@" || {
		diag "$what: the event ($*) failed"
		return 1
	}
	ecmp_wait_nexthops "$k" || return 1
	sa=$(ecmp_survivors "$A") && sb=$(ecmp_survivors "$B") || return 1
	na=$(summary_field "$LIB_DIR/$A.r0" ok)
	nb=$(summary_field "$LIB_DIR/$B.r0" ok)
	diag "$what: $sa of $na connections opened before the change survived, $sb of $nb opened during it"
	check "$what: >= 99.9% survive" [ $((sa * 1000)) -ge $((na * 999)) ] &&
		[ $((sb * 1000)) -ge $((nb * 999)) ]
}

sync_events() {
	local algo=$1 i rc=0
	A=a$algo B=b$algo
	# every LB new and without BGP; LB 4 gone
	for i in "${ECMP_LBS[@]}"; do
		ecmp_bird_stop "$i"
		ecmp_chlbd_wipe "$i" || return 1
	done
	for i in 1 2 3; do lb_start_synced "$i" || return 1; done
	for i in 1 2 3; do configure "$i" "$algo" || return 1; done
	ecmp_wait_nexthops 3 || return 1
	ecmp_hold_open "$A" "$HELD" || return 1
	lib_wait_for 10 all_have "$HELD"
	diag "$algo: LB 1 has $(ecmp_lb_flows 1) entries, LB 2 $(ecmp_lb_flows 2), LB 3 $(ecmp_lb_flows 3)"
	# the rolling change, and connections opened while only LB 1 has backend 4
	lbctl 1 backend add "$VIP" "$(be_addr4 4)" weight 100 >/dev/null || return 1
	ecmp_hold_open "$B" "$HELD" || return 1
	diag "$algo: of B, $(grep -c '^conn .* b4$' "$LIB_DIR/$B.r0") went to backend 4 (LB 1's new one)"
	sleep 1.5
	lbctl 2 backend add "$VIP" "$(be_addr4 4)" weight 100 >/dev/null || return 1
	sleep 1.5
	lbctl 3 backend add "$VIP" "$(be_addr4 4)" weight 100 >/dev/null || return 1
	lbctl 1 save >"$LIB_DIR/now.conf" || return 1 # what a new LB is configured with
	sleep 0.3 # a retry round of the deferred entries
	for i in 2 3; do
		diag "$algo: LB $i's entries that waited for backend 4 (deferred, applied once it had it):" \
			"$(lbctl "$i" -j stats | jq -c '.sync | [.deferred, .deferred_applied]')"
	done
	# LB 1 first: its connections to backend 4 then move to LBs that got
	# their entries while they did not have backend 4 yet (the rollout race)
	survive "$algo: LB 1 died silently" 2 ecmp_lb_die 1 || rc=1
	survive "$algo: LB 2 withdrawn (chlbd stopped)" 1 ecmp_lb_withdraw 2 || rc=1
	survive "$algo: a new LB 4 joined" 2 lb_fresh_synced 4 -c "$LIB_DIR/now.conf" || rc=1
	survive "$algo: LB 1 restarted fresh" 3 lb_fresh_synced 1 -c "$LIB_DIR/now.conf" || rc=1
	[ "$ECMP_SYNC" = 1 ] || { hold_stop "$A"; hold_stop "$B"; return $rc; }
	for i in "${ECMP_LBS[@]}"; do
		[ -n "${ECMP_CHLBD_PID[$i]:-}" ] || continue
		diag "$algo: LB $i's sync [sent received applied kept deferred deferred_applied dropped]:" \
			"$(lbctl "$i" -j stats | jq -c '.sync | [.records_sent, .records_received, .applied, .kept, .deferred, .deferred_applied, .dropped]')"
	done
	hold_stop "$A"
	hold_stop "$B"
	return $rc
}

test_sync_ring() { sync_events ring; }
test_sync_jump() { sync_events jump; }
test_sync_maglev() { sync_events maglev; }

lib_run
