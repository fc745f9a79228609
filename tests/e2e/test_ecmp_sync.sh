#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# Issue 24 (issue 19's goal with entry sync, chlbd --sync-listen/--sync-peer;
# docs/design.md, "Several LB hosts"): LB hosts behind a BGP/ECMP router
# (tests/lib/ecmp.sh: BIRD on the router and each LB announcing what chlbd
# puts in --route-table, native XDP, l2dsr, real TCP) keep >= 99.9% of
# their held connections (300 + 300 here: not one may break) through the
# cases that break without sync, and a starting LB is announced only once
# it is ready (docs/operations.md, "Readiness"). Per algorithm (ring, jump,
# maglev):
#
#   - LBs 1-3 started (chlbd and BIRD at once: readiness gates the route),
#     configured by hand (service add, then one backend add per command,
#     one LB after another: their tables' histories differ): not announced
#     (no route in the LB's table, `route list` says withheld, no nexthop
#     on the router) until the operator, peers synced, runs `route announce`;
#   - 300 held connections (A): "no change", one exchange on each;
#   - a rolling change: backend 4 added on LB 1, 300 more connections
#     opened (B, while only LB 1 has it), LB 2 1.5 s later, LB 3 1.5 s
#     after that: "rollout";
#   - then, one after another: LB 1 dies silently (its connections to
#     backend 4 move to LBs that got their entries before they had backend
#     4: the rollout race); LB 2 is withdrawn (chlbd stopped); a new LB 4
#     joins (-c of a peer's save); LB 1 comes back fresh (pins and state
#     gone), chlbd started without configuration, then `apply -f` of a
#     peer's save; LB 2 comes back fresh, configured by hand one statement
#     at a time, then `route announce`. A new LB configured by -c or apply
#     must have its route only once readiness holds: when the route appears,
#     every peer it is configured with shows `synced` or an `error` (down,
#     refused: a dead peer has failed at least once), every running one
#     `synced`;
#   - after each case, one exchange on every connection of A and B: the
#     survivors (neither broken nor moved to another backend) are counted.
#
# The sync link is the LBs' back segment (10.0.2.I:7070); every LB gets the
# same --sync-peer list and leaves itself out. ECMP_SYNC=0 runs the same
# cases without sync, as a control (not in make test): connections break.
# SYNC_KEY_OPT=1 gives every chlbd --sync-key (one key file for all), by
# default when this chlbd has the option (it will require it with
# --sync-peer).
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/../lib/ecmp.sh"

HELD=${HELD:-300}
ecmp_require
ecmp_build 3 4
VIP=$(vip_spec 4)
SYNC_PORT=7070
ECMP_SYNC=${ECMP_SYNC:-1}
# A short settle time: non-zero, so a route that waited for sync also waits
# past it (the check below sees `synced` before the route, not in the same
# instant), but not the default 2 s, which would cost 2 s on each of the
# ~4 starts an algorithm makes that wait for readiness.
# shellcheck disable=SC2034 # ecmp_chlbd_start reads it
ECMP_CHLBD_ARGS=(--ready-settle-ms 300)
if [ -z "${SYNC_KEY_OPT:-}" ]; then
	SYNC_KEY_OPT=0
	"$CHLBD" --help 2>&1 | grep -q -- --sync-key && SYNC_KEY_OPT=1
fi
SYNC_KEY=$LIB_DIR/sync.key

sync_addr() { echo "10.0.2.$1:$SYNC_PORT"; }

# sync_key_write FILE: a new key file (mode 0600, 32 random bytes as one
# line of 64 hex characters).
sync_key_write() {
	(
		umask 077
		if command -v xxd >/dev/null; then
			head -c32 /dev/urandom | xxd -p -c64
		else
			head -c32 /dev/urandom | od -An -v -tx1 | tr -d ' \n'
			echo
		fi >"$1"
	) && grep -qxE '[0-9a-f]{64}' "$1"
}

# sync_args I: LB I's sync options (every LB of 1-4 a peer; with
# SYNC_KEY_OPT=1 the key, its file written at the first call).
sync_args() {
	local a
	[ "$ECMP_SYNC" = 1 ] || return 0
	a="--sync-listen $(sync_addr "$1") --sync-peer $(sync_addr 1) --sync-peer $(sync_addr 2) --sync-peer $(sync_addr 3) --sync-peer $(sync_addr 4)"
	if [ "$SYNC_KEY_OPT" = 1 ]; then
		[ -s "$SYNC_KEY" ] || sync_key_write "$SYNC_KEY" || {
			diag "could not write the sync key $SYNC_KEY"
			return 1
		}
		a+=" --sync-key $SYNC_KEY"
	fi
	echo "$a"
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

# peers I: LB I's sync peers as it sees them, for diags.
peers() {
	[ "$ECMP_SYNC" = 1 ] || return 0
	lbctl "$1" -j stats | jq -c '[.sync.peers[] | [.peer, .receiving] + (if .error then [.error] else [] end)]'
}

# has_route I: LB I's table has its route to the VIP (what BIRD announces).
has_route() { ecmp_table_routes "$1" | awk -v v="$ECMP_VIP" '$2 == v { f = 1 } END { exit !f }'; }
no_route() { ! has_route "$1"; }
not_announced() { ! ecmp_nexthop_from "$1"; }

# withheld I WHY: LB I is not announced: no VIP route in its table, `route
# list` says withheld because WHY, the router has no nexthop via it.
withheld() {
	local i=$1 j
	check "LB $i: no VIP route in its table before it is ready" no_route "$i" || return 1
	j=$(lbctl "$i" -j route list) || return 1
	check "LB $i: route list says withheld ($2...): $j" \
		jq -e --arg w "$2" '(.ready | not) and (.withheld // "" | startswith($w))' \
		<<<"$j" >/dev/null || return 1
	check "LB $i: the router has no nexthop via it" not_announced "$i"
}

# lb_start I [ARGS]: LB I's links up, its chlbd started with sync and ARGS,
# its BIRD at once (chlbd adds no route until ready). A namespace is made
# for a new LB.
lb_start() {
	local i=$1 sa
	shift
	case " ${ECMP_LBS[*]} " in *" $i "*) ;; *) ecmp_lb_add "$i" ;; esac
	ip -n "$(ns_lb "$i")" link set eth0 up && ip -n "$(ns_lb "$i")" link set eth1 up || return 1
	sa=$(sync_args "$i") || return 1
	# shellcheck disable=SC2086 # the options, one word each
	ecmp_chlbd_start "$i" $sa "$@" || return 1
	ecmp_bird_start "$i"
}

# lb_fresh I [ARGS]: LB I as a host rebuilt from scratch (BIRD stopped,
# pins and state gone), then lb_start.
lb_fresh() {
	[ -z "${ECMP_BIRD_PID[$1]:-}" ] || ecmp_bird_stop "$1"
	ecmp_chlbd_wipe "$1" || return 1
	lb_start "$@"
}

# sync_peers_ok I STATS: LB I's peers in STATS (its `chlbctl -j stats`) as
# readiness promises them (docs/operations.md, "Readiness"): every
# configured peer (--sync-peer: LBs 1-4 but I, running or not, existing or
# not) listed and either `synced` or with an `error` (down or refused: a
# dead peer has failed at least once, not merely not answered yet); and,
# as before, every peer whose chlbd runs `synced`.
sync_peers_ok() {
	local i=$1 j want='' run=''
	[ "$ECMP_SYNC" = 1 ] || return 0
	for j in 1 2 3 4; do
		[ "$j" != "$i" ] || continue
		want+=" $(sync_addr "$j")"
		[ -z "${ECMP_CHLBD_PID[$j]:-}" ] || run+=" $(sync_addr "$j")"
	done
	jq -e --arg want "$want" --arg run "$run" '
		($want | split(" ") | map(select(. != ""))) as $w
		| ($run | split(" ") | map(select(. != ""))) as $r
		| [.sync.peers[]? | select(.receiving == "synced") | .peer] as $s
		| [.sync.peers[]? | select(.receiving == "synced" or (.error // "") != "") | .peer] as $ok
		| ($w - $ok | length) == 0 and ($r - $s | length) == 0' <<<"$2" >/dev/null
}

# peers_of STATS: the peers in STATS, for diags: [peer, receiving(, error)].
peers_of() {
	[ "$ECMP_SYNC" = 1 ] || return 0
	jq -c '[.sync.peers[]? | [.peer, .receiving] + (if .error then [.error] else [] end)]' <<<"$1"
}

# route_after_sync I: wait (20 s) until LB I's table has its VIP route,
# which must come only once LB I's peers are as readiness promises
# (sync_peers_ok). Each look reads the table, then LB I's stats once: the
# peers' states are those of a moment after the route was seen, and a peer
# leaves `synced` or failed only by coming back (none does while an LB here
# waits for its route), so a peer neither synced nor failed then was so
# when the route came.
route_after_sync() {
	local i=$1 t0 ts='' r s st='{}' deadline
	t0=$(date +%s.%N)
	deadline=$(($(date +%s%N) + 20000000000))
	while :; do
		r=0 s=0
		has_route "$i" && r=1
		if [ "$ECMP_SYNC" = 1 ]; then
			st=$(lbctl "$i" -j stats) || {
				diag "LB $i: chlbctl stats failed"
				return 1
			}
		fi
		sync_peers_ok "$i" "$st" && s=1
		[ $s = 0 ] || [ -n "$ts" ] || ts=$(lib_elapsed "$t0")
		if [ $r = 1 ]; then
			check "LB $i: its route came only once every configured peer was synced or had failed, every running one synced: $(peers_of "$st")" \
				[ $s = 1 ] || return 1
			diag "LB $i: peers synced or failed after ${ts:-?} s, its route after $(lib_elapsed "$t0") s;" \
				"sync deferred/applied later/waiting: $(sync_counts "$i" '[.deferred, .deferred_applied, .waiting]');" \
				"peers then: $(peers_of "$st")"
			return 0
		fi
		if [ "$(date +%s%N)" -ge "$deadline" ]; then
			diag "LB $i: no route after 20 s: $(lbctl "$i" -j route list | jq -c .); peers $(peers "$i")"
			return 1
		fi
		sleep 0.05
	done
}

# sync_counts I JQ: JQ of LB I's .sync stats, compact.
sync_counts() {
	[ "$ECMP_SYNC" = 1 ] || return 0
	lbctl "$1" -j stats | jq -c ".sync | $2"
}

# configure I ALGO "B...": LB I's service, then backends B..., one
# statement each, as an operator types them.
configure() {
	local b
	lbctl "$1" service add "$VIP" algo "$2" fwd l2dsr >/dev/null || return 1
	for b in $3; do
		lbctl "$1" backend add "$VIP" "$(be_addr4 "$b")" weight 100 >/dev/null || return 1
	done
}

# fingerprint I: LB I's table fingerprint for the VIP.
fingerprint() { lbctl "$1" -j service list | jq -r --arg s "$VIP" '.services[] | select(.service == $s) | .fingerprint'; }

# announce_by_hand I REF: what docs/operations.md has an operator do on a
# host typed by hand: check it (not announced yet; the fingerprint equals
# LB REF's; every peer synced), then `route announce`.
announce_by_hand() {
	local i=$1 ref=$2 f r
	withheld "$i" "configuration not loaded" || return 1
	f=$(fingerprint "$i") r=$(fingerprint "$ref")
	check "LB $i: its fingerprint equals LB $ref's ($f $r)" [ -n "$f" ] && [ "$f" = "$r" ] ||
		return 1
	lib_wait_for 20 synced "$i" || {
		diag "LB $i: not synced: $(peers "$i")"
		return 1
	}
	diag "LB $i announced by hand; sync deferred/applied later/waiting:" \
		"$(sync_counts "$i" '[.deferred, .deferred_applied, .waiting]')"
	lbctl "$i" route announce >/dev/null || return 1
	check "LB $i: route announce puts its route in its table" has_route "$i"
}

# The cases' events (survive runs them)
# lb_join_conf I FILE: a new (or fresh) LB I configured by -c FILE.
lb_join_conf() { lb_fresh "$1" -c "$2" && route_after_sync "$1"; }
# lb_fresh_apply I FILE: LB I fresh, started without configuration, then
# `chlbctl apply -f FILE`.
lb_fresh_apply() {
	lb_fresh "$1" || return 1
	withheld "$1" "configuration not loaded" || return 1
	lbctl "$1" apply -f "$2" >/dev/null || return 1
	route_after_sync "$1"
}
# lb_fresh_by_hand I ALGO REF: LB I fresh, configured one statement at a
# time, announced by hand.
lb_fresh_by_hand() {
	lb_fresh "$1" || return 1
	configure "$1" "$2" "1 2 3 4" || return 1
	announce_by_hand "$1" "$3"
}

# all_have N: every running LB has N entries of the client's connections.
all_have() {
	local i
	for i in "${ECMP_LBS[@]}"; do
		[ -n "${ECMP_CHLBD_PID[$i]:-}" ] || continue
		[ "$(ecmp_lb_flows "$i")" -ge "$1" ] || return 1
	done
}

# survive WHAT K CMD...: the event, K nexthops, then the survivors of every
# held set in HOLDS (its name: LABEL[set]). >= 99.9% of each: with 300
# connections a set, none may break.
declare -A LABEL
survive() {
	local what=$1 k=$2 h s n ok=1 msg=''
	shift 2
	"$@" || {
		diag "$what: the event ($*) failed"
		return 1
	}
	ecmp_wait_nexthops "$k" || return 1
	for h in "${HOLDS[@]}"; do
		ecmp_survivors_to s "$h" || return 1 # not $(...): the round count must carry over
		n=$(summary_field "$LIB_DIR/$h.r0" ok)
		msg+="${msg:+, }$s of $n ${LABEL[$h]}"
		[ $((s * 1000)) -ge $((n * 999)) ] || ok=0
	done
	diag "$what: survived: $msg"
	check "$what: >= 99.9% survive" [ $ok = 1 ]
}

sync_events() {
	local algo=$1 i rc=0
	A=a$algo B=b$algo
	LABEL[$A]="opened before the change" LABEL[$B]="opened during it"
	# every LB new; LB 4 gone
	for i in "${ECMP_LBS[@]}"; do
		ecmp_bird_stop "$i"
		ecmp_chlbd_wipe "$i" || return 1
	done
	ecmp_wait_nexthops 0 || return 1
	for i in 1 2 3; do lb_start "$i" || return 1; done
	for i in 1 2 3; do configure "$i" "$algo" "1 2 3" || return 1; done
	for i in 1 2 3; do announce_by_hand "$i" $((i == 1 ? 2 : 1)) || return 1; done
	ecmp_wait_nexthops 3 || return 1
	ecmp_hold_open "$A" "$HELD" || return 1
	lib_wait_for 10 all_have "$HELD"
	diag "$algo: LB 1 has $(ecmp_lb_flows 1) entries, LB 2 $(ecmp_lb_flows 2), LB 3 $(ecmp_lb_flows 3)"
	HOLDS=("$A")
	survive "$algo: no change" 3 true || rc=1
	# the rolling change, and connections opened while only LB 1 has backend 4
	lbctl 1 backend add "$VIP" "$(be_addr4 4)" weight 100 >/dev/null || return 1
	ecmp_hold_open "$B" "$HELD" || return 1
	diag "$algo: of B, $(grep -c '^conn .* b4$' "$LIB_DIR/$B.r0") went to backend 4 (LB 1's new one)"
	sleep 1.5
	lbctl 2 backend add "$VIP" "$(be_addr4 4)" weight 100 >/dev/null || return 1
	sleep 1.5
	lbctl 3 backend add "$VIP" "$(be_addr4 4)" weight 100 >/dev/null || return 1
	sleep 0.3 # a retry round of the deferred entries
	for i in 2 3; do
		diag "$algo: LB $i's entries that waited for backend 4 (deferred, applied once it had it):" \
			"$(sync_counts "$i" '[.deferred, .deferred_applied]')"
	done
	HOLDS=("$A" "$B")
	survive "$algo: rollout" 3 true || rc=1
	# LB 1 first: its connections to backend 4 then move to LBs that got
	# their entries while they did not have backend 4 yet (the rollout race)
	survive "$algo: LB 1 died silently" 2 ecmp_lb_die 1 || rc=1
	survive "$algo: LB 2 withdrawn (chlbd stopped)" 1 ecmp_lb_withdraw 2 || rc=1
	lbctl 3 save >"$LIB_DIR/now.conf" || return 1 # a peer's save: what a new LB gets
	survive "$algo: a new LB 4 joined (-c)" 2 lb_join_conf 4 "$LIB_DIR/now.conf" || rc=1
	lbctl 4 save >"$LIB_DIR/now.conf" || return 1
	survive "$algo: LB 1 restarted fresh (apply -f)" 3 lb_fresh_apply 1 "$LIB_DIR/now.conf" ||
		rc=1
	survive "$algo: LB 2 restarted fresh (typed by hand, route announce)" 4 \
		lb_fresh_by_hand 2 "$algo" 3 || rc=1
	if [ "$ECMP_SYNC" = 1 ]; then
		for i in "${ECMP_LBS[@]}"; do
			[ -n "${ECMP_CHLBD_PID[$i]:-}" ] || continue
			diag "$algo: LB $i's sync [sent received applied kept deferred deferred_applied dropped]:" \
				"$(sync_counts "$i" '[.records_sent, .records_received, .applied, .kept, .deferred, .deferred_applied, .dropped]')"
		done
	fi
	hold_stop "$A"
	hold_stop "$B"
	return $rc
}

test_sync_ring() { sync_events ring; }
test_sync_jump() { sync_events jump; }
test_sync_maglev() { sync_events maglev; }

lib_run