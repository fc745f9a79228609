#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# Cases 4 and 5 under load, chlbd in native XDP, l2dsr:
#   - churn: clients open and close connections continuously (>= 20,000)
#     while >= 100 membership changes happen (backends added, drained, then
#     removed): zero failed connections, and long-lived connections all stay
#     on their backend;
#   - hitless restart: chlbd killed (SIGTERM, then SIGKILL) and restarted
#     while traffic runs: zero failed connections, every established one still
#     on its backend, and the restarted daemon still controls the data plane;
#   - a shorter churn again under TC, ipip over IPv6.
. "$(dirname "$0")/../lib.sh"

CHANGES=${CHANGES:-100}
MIN_CONNS=${MIN_CONNS:-20000}
HELD=${HELD:-200}
GAP=${GAP:-0.3}

lib_require_e2e
topo_build 5
chlbd_start xdp || die "chlbd did not start"

# held_ok NAME: every round so far: all answered, none moved.
held_ok() {
	local f=$LIB_DIR/$1.log
	local fails moved
	fails=$(awk '$1 == "summary" { s += $9 } END { print s + 0 }' "$f")
	moved=$(awk '$1 == "summary" { s += $11 } END { print s + 0 }' "$f")
	check "long-lived connections: $fails failed, $moved moved over all rounds" \
		[ "$fails" = 0 ] && [ "$moved" = 0 ]
}

# wait_drained B: as an operator does, remove a drained backend only once its
# connections are gone. On a loaded 2-core box a short connection (a SYN
# retransmitted after 1 s, say) can outlive any fixed sleep; removing its
# backend then breaks it, which is what removal means, not a chlb failure.
# The held connections live on b1-b3 only, so b4/b5 drain to zero.
wait_drained() {
	lib_wait_for 10 no_established "$(ns_b "$1")"
}

no_established() {
	[ -z "$(ip netns exec "$1" ss -Htn state established)" ]
}

# swaps_before_fails CLIENT_LOG CHLBD_LOG: chlbd's swap lines (UTC
# HH:MM:SS.mmm) from the 2 s before each "fail ... at EPOCH" line.
swaps_before_fails() {
	local at
	for at in $(awk '$1 == "fail" && $5 == "at" { print $6 }' "$1"); do
		awk -v at="$at" '/swapped to table slot/ {
			split($1, t, ":"); s = t[1] * 3600 + t[2] * 60 + t[3]
			d = (at % 86400) - s
			if (d >= 0 && d <= 2) printf "swap %.3f s before the failure at %s: %s\n", d, at, $0
		}' "$2"
	done
}

# churn FAMILY ALGO FWD CHANGES MIN_CONNS SECS
churn() {
	local fam=$1 algo=$2 fwd=$3 nchanges=$4 minconns=$5 secs=$6
	local vip rc=0 i changes=0 b total fails t0 h=held$1$3 cl=churn$1$3
	vip=$(vip_spec "$fam")
	svc_setup "$fam" "$algo" "$fwd" "1 2 3" || return 1
	hold_start "$h" "$fam" "$HELD" || return 1
	churn_start "$cl" "$(vip_addr "$fam")"
	t0=$(date +%s)
	# Cycle: add a backend, drain it (weight 0), remove it once drained.
	# b4 and b5 alternate so consecutive tables differ in more than one way.
	# The held connections exchange data after every change, as busy
	# connections do.
	#
	# Each swap is followed by $GAP s. A service view keeps the current
	# table and three previous ones, so an entry-less connection survives
	# being idle for three swaps (see README, Limits); back-to-back swaps
	# every ~0.15 s shrank that to ~0.5 s, and a client stalled that long on
	# this loaded 2-core box (a retransmission, scheduling) lost its backend
	# about once per 500k connections. 0.3 s keeps the window near 1 s.
	i=0
	while [ $changes -lt "$nchanges" ]; do
		b=$((4 + i % 2))
		ctl backend add "$vip" "$(be_addr "$fam" $b)" weight 100 >/dev/null || rc=1
		hold_round "$h" || rc=1
		sleep "$GAP"
		ctl backend set "$vip" "$(be_addr "$fam" $b)" weight 0 >/dev/null || rc=1
		hold_round "$h" || rc=1
		sleep "$GAP"
		wait_drained $b || { diag "b$b still has connections 10 s after the drain"; rc=1; }
		ctl backend del "$vip" "$(be_addr "$fam" $b)" >/dev/null || rc=1
		hold_round "$h" || rc=1
		sleep "$GAP"
		changes=$((changes + 2))
		i=$((i + 1))
	done
	# Keep the load on long enough for the connection count.
	while [ $(($(date +%s) - t0)) -lt "$secs" ]; do sleep 0.5; done
	churn_stop "$cl"
	total=$(summary_field "$LIB_DIR/$cl.log" total)
	fails=$(summary_field "$LIB_DIR/$cl.log" fail)
	diag "IPv$fam $CHLBD_MODE $fwd $algo: $changes membership changes (add+remove), $total connections in $(($(date +%s) - t0)) s, $fails failed"
	# each failure with its time, source port, socket error, age and TCP
	# retransmissions (chlb-client prints them even with -q), then the swaps
	# chlbd made in the 2 s before it
	grep -E '^fail(cause)? ' "$LIB_DIR/$cl.log" | sed 's/^/# /'
	swaps_before_fails "$LIB_DIR/$cl.log" "$CHLBD_LOG" | sed 's/^/# /'
	# the data plane's verdicts over the run: what a failure went through
	ctl stats 2>/dev/null | awk '/^global:/ { g = 1; next } g && (!/^ / || /PACKETS/) { exit } g' |
		tr -s ' ' | tr '\n' ' ' | sed 's/^/# verdicts:/; s/$/\n/'
	check "at least $minconns connections ($total)" [ "$total" -ge "$minconns" ] || rc=1
	# A budget of one failed connection per 500k, stated in the README
	# (Limits): the single resets once seen here (1 in 1-4M) were the
	# backends' TCP racing itself when veth delivered one flow on both CPUs,
	# which topo_backend_napi (tests/lib/topo.sh) now prevents. A steering bug
	# fails thousands.
	check "failed connections within 1 per 500k ($fails of $total)" \
		[ "$fails" -le $((total / 500000)) ] || rc=1
	check "the backends that came and went served connections too ($(backend_counts "$LIB_DIR/$cl.log" | sort | tr '\n' ' '))" \
		grep -q '^backend b4 ' "$LIB_DIR/$cl.log" &&
		grep -q '^backend b5 ' "$LIB_DIR/$cl.log" || rc=1
	held_ok "$h" || rc=1
	hold_stop "$h"
	return $rc
}

test_churn_with_membership_changes() {
	churn 4 ring l2dsr "$CHANGES" "$MIN_CONNS" "${CHURN_MIN_SECS:-20}"
}

# restart SIGNAL: kill chlbd with SIGNAL under load, restart it, prove it
# still works.
restart() {
	local sig=$1 vip rc=0 total fails out
	vip=$(vip_spec 4)
	svc_setup 4 jump l2dsr "1 2 3" || return 1
	hold_start "rs$sig" 4 "$HELD" || return 1
	churn_start "cr$sig"
	sleep 1
	chlbd_stop "$sig"
	hold_round "rs$sig" || rc=1 # served with no daemon at all
	sleep 1
	chlbd_start xdp || return 1
	hold_round "rs$sig" || rc=1
	sleep 1
	# The restarted daemon owns the data plane: a change takes effect.
	ctl backend add "$vip" "$(be_addr4 4)" weight 100 >/dev/null || rc=1
	hold_round "rs$sig" || rc=1
	sleep 1
	churn_stop "cr$sig"
	total=$(summary_field "$LIB_DIR/cr$sig.log" total)
	fails=$(summary_field "$LIB_DIR/cr$sig.log" fail)
	diag "SIG$sig: $total connections across the restart, $fails failed"
	check "no failed connection across the restart ($fails of $total)" [ "$fails" = 0 ] &&
		[ "$total" -gt 0 ] || rc=1
	held_ok "rs$sig" || rc=1
	hold_stop "rs$sig"
	out=$LIB_DIR/after$sig.out
	client once -t "$VIP4" -n 200 -k 16 -q >"$out"
	check "after the restart new flows reach the added b4 ($(backend_counts "$out" | tr '\n' ' '))" \
		grep -q '^backend b4 ' "$out" || rc=1
	ctl backend del "$vip" "$(be_addr4 4)" >/dev/null
	return $rc
}

test_restart_sigterm_under_load() { restart TERM; }
test_restart_sigkill_under_load() { restart KILL; }

# The same under TC with ipip over IPv6 (skb encapsulation, IP6IP6, decap on
# the backends), shorter: the full-size run above covers the counts.
test_churn_tc_ipip_ipv6() {
	ctl_quiet shutdown --detach
	chlbd_stop TERM
	rm -rf "${CHLBD_PIN:?}"/* "$CHLBD_STATE"
	chlbd_start tc || return 1
	churn 6 jump ipip 40 5000 8
}

lib_run
