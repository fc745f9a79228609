#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# Several LB hosts that keep their connections, with entry sync (chlbd
# --sync-listen/--sync-peer; docs/design.md, "Several LB hosts"): LB hosts behind a BGP/ECMP router
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
# And the same in static ECMP (test_static_*): the router has its own
# multipath route over LBs 1-3 (no BIRD, chlbd without --route-table), so
# it sends each LB its share of the flows whatever the LB's state, as a
# router with static routes does. LBs 1-3 configured by -c with backends
# 1-3; 300 connections held (A, as 4 sets of 75), backend 4 added on every
# LB, 300 more (B): about a quarter of A now hash to backend 4, only their
# entries keep them where they are. Then, each while a round on A and B is
# in flight (begun when the fresh chlbd is up, set after set 40 ms apart:
# the requests of the restarted LB's share, retransmitted by TCP until it
# forwards them, arrive spread over time): LB 2 restarted fresh and typed
# by hand (service add, then backends 1-4, 0.3 s between statements: its
# peers' entries for backends it lacks yet must hold their flows, not let
# its partial table decide them); LB 1 restarted fresh and `apply -f` of
# LB 3's save (its peers' entries must be in before its table decides their
# flows). >= 99.9% of A and B survive each.
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

# configure I ALGO "B..." [PAUSE]: LB I's service, then backends B..., one
# statement each, as an operator types them (PAUSE seconds between them).
configure() {
	local b
	lbctl "$1" service add "$VIP" algo "$2" fwd l2dsr >/dev/null || return 1
	for b in $3; do
		[ -z "${4:-}" ] || sleep "$4"
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
	local what=$1 k=$2
	shift 2
	"$@" || {
		diag "$what: the event ($*) failed"
		return 1
	}
	ecmp_wait_nexthops "$k" || return 1
	survivors_check "$what" ecmp_survivors_to
}

# survivors_check WHAT READ: READ VAR SET (ecmp_survivors_to: a round now;
# ecmp_survivors_end: the round begun before the event) for every held set
# in HOLDS; the sets of one LABEL counted together (the parts of one set);
# >= 99.9% of each must survive.
survivors_check() {
	local what=$1 read=$2 h s n l ok=1 msg='' order=()
	local -A S N
	for h in "${HOLDS[@]}"; do
		"$read" s "$h" || return 1 # not $(...): the round count must carry over
		n=$(summary_field "$LIB_DIR/$h.r0" ok)
		l=${LABEL[$h]}
		[ -n "${N[$l]+x}" ] || order+=("$l")
		S[$l]=$((${S[$l]:-0} + s)) N[$l]=$((${N[$l]:-0} + n))
	done
	for l in "${order[@]}"; do
		msg+="${msg:+, }${S[$l]} of ${N[$l]} $l"
		[ $((${S[$l]} * 1000)) -ge $((${N[$l]} * 999)) ] || ok=0
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
	ecmp_backends_forget # earlier cases' leftovers: not this case's to meet
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

# ---- static ECMP ----
# STATIC_T: each held exchange's deadline (ms) in the static cases. A flow
# the restarted LB drops (no service yet) or holds (its entry waits for a
# backend) gets through on one of TCP's retransmissions (about 0.2, 0.6,
# 1.4, 3 s after the request), which can be after the client's default 3 s.
STATIC_T=${STATIC_T:-10000}
# A is held as PARTS sets (one client each) whose rounds begin ROUND_GAP s
# apart: the requests and their retransmissions reach the restarted LB
# spread over time, as on an LB with traffic, not in one burst per RTO that
# a short moment in chlbd (a change live, the entries that wait for it not
# applied yet) would fall between.
PARTS=${PARTS:-4}
ROUND_GAP=${ROUND_GAP:-0.04}

# static_launch I [ARGS]: LB I's links up, its chlbd launched with sync
# and ARGS (ecmp_chlbd_wait I: until it answers); no BIRD (and, from
# static_events, no --route-table). static_start I [ARGS]: both.
static_launch() {
	local i=$1 sa
	shift
	ip -n "$(ns_lb "$i")" link set eth0 up && ip -n "$(ns_lb "$i")" link set eth1 up || return 1
	sa=$(sync_args "$i") || return 1
	# shellcheck disable=SC2086 # the options, one word each
	ecmp_chlbd_launch "$i" $sa "$@"
}
static_start() { static_launch "$@" && ecmp_chlbd_wait "$1"; }

# rounds_begin: a round begun on every set of HOLDS, ROUND_GAP s apart
# (read by static_survive); the first one's start time in ROUNDS_T0.
rounds_begin() {
	local h first=1
	ROUNDS_T0=$(date +%s.%N)
	for h in "${HOLDS[@]}"; do
		[ $first = 1 ] || sleep "$ROUND_GAP"
		first=0
		ecmp_round_begin "$h"
	done
}

# held_now I: how many flows LB I's data plane holds (placeholders).
held_now() { lbctl "$1" -j conns | jq '[.services[]?.held // 0] | add // 0'; }

# The static events: LB I rebuilt from scratch and its chlbd started with
# no configuration; the rounds begun (the router sends LB I its share from
# now on); then configured.
# static_by_hand I ALGO: typed by hand as the last round is begun, 0.3 s
# between statements.
static_by_hand() {
	ecmp_chlbd_wipe "$1" && static_start "$1" || return 1
	rounds_begin
	configure "$1" "$2" "1" 0.3 || return 1
	diag "LB $1 holds $(held_now "$1") flows after service add and backend 1"
	configure_rest "$1" "2 3 4" 0.3
}
# configure_rest I "B..." PAUSE: the rest of LB I's backends, PAUSE seconds apart.
configure_rest() {
	local b
	for b in $2; do
		sleep "$3"
		lbctl "$1" backend add "$VIP" "$(be_addr4 "$b")" weight 100 >/dev/null || return 1
	done
}
# static_apply I FILE: `apply -f FILE` as the last round is begun (while
# the retransmissions of the first ones arrive).
static_apply() {
	ecmp_chlbd_wipe "$1" && static_start "$1" || return 1
	rounds_begin
	lbctl "$1" apply -f "$2" >/dev/null
}

# static_survive WHAT I CMD...: CMD (which begins the rounds: rounds_begin),
# then its rounds read: >= 99.9% of every set of HOLDS survive. Diags: how
# long the rounds took, LB I's sync counts (applied: entries it had none
# for yet; kept: it had one, from the other peer or its own data plane's
# decision) and held flows after; if some broke, what LBs I and 3 (a peer
# that ran throughout) have for them, and LB I's log of the change.
static_survive() {
	local what=$1 i=$2 rc=0
	shift 2
	"$@" || {
		diag "$what: the event ($*) failed"
		return 1
	}
	survivors_check "$what" ecmp_survivors_end || rc=1
	diag "$what: the rounds took $(rounds_took) s; LB $i's sync" \
		"[deferred deferred_applied applied kept waiting dropped]:" \
		"$(sync_counts "$i" '[.deferred, .deferred_applied, .applied, .kept, .waiting, ([.dropped[]] | add)]'), $(held_now "$i") flows held now"
	if [ $rc != 0 ]; then
		broken "$i" 3
		grep -E 'dump received|request:|swapped|fingerprint' \
			"$LIB_DIR/chlbd-lb$i-${ECMP_STARTS[$i]}.log" | sed "s/^/#   LB $i: /"
	fi
	return $rc
}

# rounds_took: seconds from ROUNDS_T0 to the last round's end (its
# client's last write).
rounds_took() {
	local logs=("${HOLDS[@]/#/$LIB_DIR/}")
	stat -c %.3Y "${logs[@]/%/.log}" | sort -n | tail -1 |
		awk -v t0="$ROUNDS_T0" '{ printf "%.1f", $1 - t0 }'
}

# broken I REF: the flows of HOLDS that broke or moved in their last round
# (4 at most): when, the entries LBs I and REF have for them, and the
# backend each one's oldest table picks for them.
broken() {
	local i=$1 ref=$2 h r sp why at
	for h in "${HOLDS[@]}"; do
		eval "r=\$HOLD_ROUND_$h"
		awk -v h="$h" '$1 == "fail" { print h, $3, $4, $6 } $1 == "moved" { print h, $3, "moved-to-" $5, "-" }' \
			"$LIB_DIR/$h.r$r"
	done | head -4 >"$LIB_DIR/broken"
	while read -r h sp why at; do
		[ "$at" = - ] || at=$(date -d "@$at" +%T.%3N)
		diag "$h: port $sp (opened to $(awk -v p="$sp" '$1 == "conn" && $3 == p { print $4 }' "$LIB_DIR/$h.r0");" \
			"$why at $at): LB $i $(entry_of "$i" "$sp"); LB $ref $(entry_of "$ref" "$sp")"
	done <"$LIB_DIR/broken"
}
# entry_of I SPORT: LB I's connection entry for the client's flow from
# SPORT, and the backend its oldest table picks for it (what decides a
# packet of it that finds no entry).
entry_of() {
	local w
	w=$(lbctl "$1" which "$CLIENT4:$2" "${VIP%/*}" "${VIP##*/}")
	echo "entry $(sed -n 's/^conn entry: *//p' <<<"$w"), oldest table ->" \
		"$(sed -n 's/^table [0-9]*: .*-> *\([^ ]*\).*/\1/p' <<<"$w" | tail -1)"
}

# have_all N: wait (20 s) until every running LB has the N entries of the
# held connections (the restarted LB's peers have what it must get).
have_all() {
	[ "$ECMP_SYNC" = 1 ] || return 0
	lib_wait_for 20 all_have "$1" && return 0
	diag "not every LB has the $1 entries: LB 1 $(ecmp_lb_flows 1), LB 2 $(ecmp_lb_flows 2), LB 3 $(ecmp_lb_flows 3); peers of LB 1 $(peers 1)"
	return 1
}

# static_events ALGO: the static ECMP cases (see the top).
static_events() {
	local algo=$1 i h rc=0 n=$((2 * HELD)) as=()
	# shellcheck disable=SC2034 # ecmp_chlbd_launch reads it
	local ECMP_TABLE= # every chlbd started from here: no --route-table
	for i in $(seq 1 "$PARTS"); do
		as+=("sa$algo$i")
		LABEL[sa$algo$i]="opened before backend 4"
	done
	B=sb$algo
	LABEL[$B]="opened after it"
	for i in "${ECMP_LBS[@]}"; do
		ecmp_bird_stop "$i"
		ecmp_chlbd_wipe "$i" || return 1
	done
	ecmp_wait_nexthops 0 || return 1
	ecmp_backends_forget
	ecmp_conf_write "$LIB_DIR/static.conf" "$algo" "1 2 3"
	for i in 1 2 3; do static_launch "$i" -c "$LIB_DIR/static.conf" || return 1; done
	for i in 1 2 3; do ecmp_chlbd_wait "$i" || return 1; done
	# (not waited for sync: a peer refused at first is tried again within
	# 5 s, and its entries come in the dump then; have_all waits for them)
	ecmp_static_route "1 2 3" || return 1
	ecmp_wait_nexthops 3 || return 1
	for i in $(seq 1 "$PARTS"); do # A: HELD in all
		ecmp_hold_open "${as[i - 1]}" $((i < PARTS ? HELD / PARTS : HELD - (PARTS - 1) * (HELD / PARTS))) \
			-T "$STATIC_T" || return 1
	done
	ecmp_each_lb lbctl backend add "$VIP" "$(be_addr4 4)" weight 100 >/dev/null || return 1
	ecmp_hold_open "$B" "$HELD" -T "$STATIC_T" || return 1
	HOLDS=("${as[@]}" "$B")
	have_all "$n" || return 1
	static_survive "$algo static: LB 2 restarted fresh, typed by hand while it gets traffic" 2 \
		static_by_hand 2 "$algo" || rc=1
	have_all "$n" || return 1
	lbctl 3 save >"$LIB_DIR/now.conf" || return 1
	static_survive "$algo static: LB 1 restarted fresh, apply -f while it gets traffic" 1 \
		static_apply 1 "$LIB_DIR/now.conf" || rc=1
	for h in "${HOLDS[@]}"; do hold_stop "$h"; done
	return $rc
}

# static ALGO: static_events, then the router's static route removed (the
# next case's BGP route needs its place) whatever happened.
static() {
	local rc=0
	static_events "$1" || rc=1
	ecmp_static_route_del || {
		diag "the router's static route to $ECMP_VIP is still there"
		rc=1
	}
	return $rc
}

test_static_ring() { static ring; }
test_static_jump() { static jump; }
test_static_maglev() { static maglev; }

lib_run