#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# The guarantee (README.md, "The guarantee"), end to end: an established TCP connection keeps its
# backend whatever its idle time, across any number of changes, as long as
# its backend is in the service and its entry was not evicted. Real TCP
# through chlbd in native XDP, fwd l2dsr, for ring, jump and maglev:
#   1. idle across a burst of >= 20 changes (3 -> 12 backends, drain and
#      remove down to 4): nothing moves or breaks but the removed backends'
#      connections, which all break;
#   2. idle past the history window across a change that moves some: none breaks;
#   3. a drained (weight 0) backend's idle connections survive later changes
#      until it is removed; its CONNS (backend list, conns --backend) are
#      exactly them, and connections closed by FIN or RST are ended;
#   4. spoofed SYNs from the client's address on every port, before and after
#      changes: none breaks; a reused 5-tuple after FIN / RST goes where the
#      current table says;
#   5. live `service set VIP hash src` and back: none breaks; --dry-run says
#      that established connections keep their backend; the algorithm
#      (ring -> maglev -> jump), weights and forwarding mode (l2dsr -> ipip)
#      changed live: none breaks;
#   6. a fresh-source SYN flood of 5x --ct-size during a change window, more
#      changes: none breaks;
#   7. more live connections than --ct-size: the recently used keep their
#      entries; what breaks is the evicted (least recently used) connections
#      that a change moved, and the evictions are counted;
#   8. chlbd SIGTERM / SIGKILL and restart, changes by the new daemon: none breaks;
#   9. hrw with uneven weights, a backend added under 200 held connections:
#      none moves or breaks, the table alone moves some and only to the new
#      backend, new connections go where the table says and follow the
#      weights.
# "Breaks" is a reset or timeout on a held connection; "moves" is an answer
# from another backend than the connection's first. Every case waits past
# the history window before it checks, so only connection entries can keep
# a connection (the window covers just the SYN-to-handshake-ACK gap).
. "$(dirname "$0")/../lib.sh"

HELD=${HELD:-300}             # idle connections per case
HISTORY_MS=${HISTORY_MS:-1000} # chlbd --history-ms: short, so waiting past it is cheap

lib_require_e2e

lib_require_bins "$FLOOD_BIN" "$CONN_BIN"

topo_build 12
# A queue on the client's veth: without one, a veth drops what its peer's
# ring cannot take (silently, at ~500k pps), and the flood would not reach
# the LB; with one, the device pushes back and the sender waits.
tc -n "$NS_C" qdisc replace dev eth0 root pfifo limit 1000 || die "qdisc on the client"

VIP=$(vip_spec 4)

# ---- the daemon ----
# daemon ARGS...: chlbd runs with exactly these options. Another set (a
# connection-table size) needs a fresh data plane: the daemon is shut down
# with --detach and its pins and state removed first.
DAEMON_ARGS=none
daemon() {
	[ "$*" = "$DAEMON_ARGS" ] && [ -n "$CHLBD_PID" ] && return 0
	if [ -n "$CHLBD_PID" ]; then
		ctl_quiet shutdown --detach
		chlbd_stop TERM
		rm -rf "${CHLBD_PIN:?}"/* "$CHLBD_STATE"
	fi
	chlbd_start xdp "$@" || return 1
	DAEMON_ARGS="$*"
}
daemon_default() { daemon --history-ms "$HISTORY_MS"; }

# past_window: sleep until every table the view held before is gone: the
# window and a margin, then (chlbd's timer may retire them late on a busy
# host) until every service's view holds its current table alone.
one_table_each() { ctl -j service list | jq -e '[.services[] | .tables // 1] | all(. == 1)' >/dev/null; }
past_window() {
	sleep "$(awk -v ms="$HISTORY_MS" 'BEGIN { print ms / 1000 + 0.3 }')"
	lib_wait_for 5 one_table_each ||
		diag "past_window: a view still held older tables 5 s past the window"
}

# configure ALGO "I J K": the service with these backends, configured "long
# ago": past the window, the view holds the current table only.
configure() {
	svc_setup 4 "$1" l2dsr "$2" || return 1
	past_window
}

be() { ctl backend "$1" "$VIP" "$(be_addr4 "$2")" "${@:3}" >/dev/null; }
add() { be add "$1" weight 100; }
drain() { be set "$1" weight 0; }
remove() { be del "$1"; }

# ---- held connections ----
# open_held NAME N: N idle connections (tests/lib/traffic.sh hold_start), all answered.
open_held() {
	hold_start "$1" 4 "$2" || return 1
	check "all $2 connections of $1 opened ($(summary_field "$LIB_DIR/$1.r0" ok) answered)" \
		[ "$(summary_field "$LIB_DIR/$1.r0" ok)" = "$2" ]
}

# conns_on NAME bI...: indexes of NAME's connections first served by those backends.
conns_on() {
	local name=$1
	shift
	awk -v list=" $* " '$1 == "conn" && index(list, " " $4 " ") { print $2 }' \
		"$LIB_DIR/$name.r0" | sort -n | tr '\n' ' '
}

# broken NAME: indexes of NAME's connections that broke so far (all rounds).
broken() {
	cat "$LIB_DIR/$1".r[1-9]* 2>/dev/null | awk '$1 == "fail" { print $2 }' | sort -n | tr '\n' ' '
}

# moved NAME: how many answers came from another backend (all rounds).
moved() {
	cat "$LIB_DIR/$1".r[1-9]* 2>/dev/null | awk '$1 == "moved" { n++ } END { print n + 0 }'
}

count() { echo $#; }

# not_in "A..." "B...": how many of the words A are not among the words B.
not_in() {
	awk -v a="$1" -v b="$2" 'BEGIN { split(b, w); for (i in w) in_b[w[i]] = 1
		n = split(a, w); for (i = 1; i <= n; i++) c += !(w[i] in in_b); print c + 0 }'
}

# expect NAME WHAT "IDX...": one more exchange on every held connection of
# NAME; then exactly the connections IDX (empty: none) have broken over all
# rounds, and none answered from another backend. Prints the counts.
expect() {
	local name=$1 what=$2 want=$3 got mv n
	hold_round "$name" || return 1
	got=$(broken "$name")
	mv=$(moved "$name")
	n=$(summary_field "$LIB_DIR/$name.r0" ok)
	# shellcheck disable=SC2086
	diag "$what: held $n, moved $mv, broken $(count $got) (expected 0 moved, $(count $want) broken)"
	[ "$got" = "$want" ] || diag "broke: ${got:-none}; expected: ${want:-none}"
	[ "$mv" = 0 ] && [ "$got" = "$want" ]
}

# table_picks SPORT...: PICK[SPORT] = the backend the current table (table
# 0 of the view) names for the client's flow from SPORT: where a new
# connection goes, and where a packet without an entry goes once the window
# has passed. (One jq for all the flows: one per flow costs 20 ms.)
declare -A PICK
table_picks() {
	local addrs i=0 p
	mapfile -t addrs < <(for p; do ctl -j which "$CLIENT4:$p" "$VIP4:80" tcp; done |
		jq -r '.tables[0].decision.backend // "none"')
	PICK=()
	for p; do
		PICK[$p]=$(be_name "${addrs[i]:-none}")
		i=$((i + 1))
	done
}

# table_moves NAME: how many of NAME's connections the current table alone
# would send elsewhere (only their entries keep them), in $MOVES.
table_moves() {
	local sport first
	MOVES=0
	# shellcheck disable=SC2046
	table_picks $(awk '$1 == "conn" { print $3 }' "$LIB_DIR/$1.r0")
	while read -r _ _ sport first; do
		[ "${PICK[$sport]}" = "$first" ] || MOVES=$((MOVES + 1))
	done < <(grep '^conn ' "$LIB_DIR/$1.r0")
}

# run_case FN ARGS...: one case; whatever it held is closed when it ends
# (pass or fail), so the next case starts with no connections.
run_case() {
	local rc name
	"$@"
	rc=$?
	for name in $(compgen -v | sed -n 's/^HOLD_FD_//p'); do hold_stop "$name"; done
	return $rc
}

# ---- counters ----
# ct_counts: "INSERTS ENTRIES EVICTIONS" of the connection table. From
# `chlbctl stats --json` (ct_inserts, ct_entries, ct_evictions) where it
# has them; else from the data plane itself: the ct_insert counter, the
# pinned map's element count, and evictions = inserts - entries (the data
# plane inserts only new keys and never deletes one: README, Stickiness).
ct_counts() {
	local j ins ent ev
	j=$(ctl -j stats) || return 1
	ins=$(jq '[.. | objects | .ct_inserts? | numbers] | first // empty' <<<"$j")
	ent=$(jq '[.. | objects | .ct_entries? | numbers] | first // empty' <<<"$j")
	ev=$(jq '[.. | objects | .ct_evictions? | numbers] | first // empty' <<<"$j")
	[ -n "$ins" ] || ins=$(jq '.global.ct_insert' <<<"$j")
	[ -n "$ent" ] || ent=$(bpftool -j map dump pinned "$CHLBD_PIN/conns" | jq length)
	[ -n "$ev" ] || ev=$((ins - ent))
	echo "$ins $ent $ev"
}

# entry_sports: source ports of the client's flows with a connection entry
# that still steers them (live or ended; a stale one is decided again), from
# `chlbctl conns --json`; without that command, from the pinned map (whose
# key holds the ports in network order: bpftool shows them as host-order
# integers, so swap the bytes back).
entry_sports() {
	local j
	if j=$(ctl -j conns 2>/dev/null) && jq -e '.conns' >/dev/null 2>&1 <<<"$j"; then
		jq -r --arg c "$CLIENT4:" '.conns[] | select(.state != "stale") | .client
			| select(startswith($c)) | ltrimstr($c)' <<<"$j" | sort -n
		return
	fi
	bpftool -j map dump pinned "$CHLBD_PIN/conns" |
		jq -r --arg c "$CLIENT4" '.[].formatted.key | select((.src[0:4] | join(".")) == $c)
			| (.sport % 256) * 256 + (.sport / 256 | floor)' | sort -n
}

# held_with_entry NAME: how many of NAME's connections have an entry.
held_with_entry() {
	comm -12 <(entry_sports | sort) <(awk '$1 == "conn" { print $3 }' "$LIB_DIR/$1.r0" | sort) |
		wc -l
}

# ---- 1. idle across a burst ----
# 3 -> 12 backends one add at a time, then drain (weight 0) and remove b3..b10
# down to b1 b2 b11 b12: 25 changes. b3 is an original backend, so about a
# third of the connections lose their backend: those must all break (no
# other backend knows them), never move.
burst() {
	local algo=$1 h=burst$1 i gone
	daemon_default || return 1
	configure "$algo" "1 2 3" || return 1
	open_held "$h" "$HELD" || return 1
	gone=$(conns_on "$h" b3)
	for i in $(seq 4 12); do add "$i" || return 1; done
	for i in $(seq 3 10); do
		drain "$i" && remove "$i" || return 1
	done
	past_window
	expect "$h" "$algo: 25 changes (3 -> 12 -> 4 backends), b3..b10 removed" "$gone"
}
test_idle_across_burst_ring() { run_case burst ring; }
test_idle_across_burst_jump() { run_case burst jump; }
test_idle_across_burst_maglev() { run_case burst maglev; }

# ---- 2. idle past the window ----
past_the_window() {
	local algo=$1 h=window$1
	daemon_default || return 1
	configure "$algo" "1 2 3" || return 1
	open_held "$h" "$HELD" || return 1
	past_window
	add 4 || return 1
	table_moves "$h"
	check "$algo: adding b4 moves some connections in the table ($MOVES of $HELD)" \
		[ "$MOVES" -gt 0 ] || return 1
	past_window
	expect "$h" "$algo: idle ${HISTORY_MS} ms, b4 added ($MOVES moved by the table), idle again" ""
}
test_idle_past_window_ring() { run_case past_the_window ring; }
test_idle_past_window_jump() { run_case past_the_window jump; }
test_idle_past_window_maglev() { run_case past_the_window maglev; }

# ---- 3. drain ----
# b1 drained, then 8 changes (adds, weights, a removal) while its
# connections stay idle; they must all survive, and break only when b1 goes.
drained() {
	local algo=$1 h=drain$1 i own base sport how be ended=0 got want
	daemon_default || return 1
	configure "$algo" "1 2 3 4" || return 1
	# 12 connections closed at once, 6 by FIN and 6 by RST: those b1 took are
	# its ended entries (ports outside the client's local range, a block per
	# algorithm: no TIME_WAIT left from another case)
	case $algo in ring) base=9100 ;; jump) base=9120 ;; *) base=9140 ;; esac
	for sport in $(seq $base $((base + 11))); do
		how=fin
		[ "$sport" -lt $((base + 6)) ] || how=rst
		be=$(conn_from "$sport" $how)
		[ -n "$be" ] || {
			diag "connection from $sport failed"
			return 1
		}
		[ "$be" != b1 ] || ended=$((ended + 1))
	done
	open_held "$h" "$HELD" || return 1
	own=$(conns_on "$h" b1)
	drain 1 || return 1
	for i in 5 6 7 8 9; do add "$i" || return 1; done
	be set 2 weight 50 && be set 3 weight 200 && remove 9 || return 1
	past_window
	# shellcheck disable=SC2086
	expect "$h" "$algo: b1 drained ($(count $own) connections), 8 changes after" "" || return 1
	# what an operator watches (operations.md, Draining a backend): b1's
	# CONNS is exactly its held connections, the closed ones are ended.
	# Ended ones are counted from this case's port block only: the last
	# ACKs of the previous case's connections, closed as it ended, can
	# arrive after this service was set up and end entries on its b1 too.
	got=$(ctl -j backend list "$VIP" | jq -r --arg a "$(be_addr4 1)" \
		'.backends[] | select(.address == $a) | .conns')
	got="$got $(ctl -j conns "$VIP" --backend "$(be_addr4 1)" |
		jq --argjson lo "$base" --argjson hi $((base + 11)) '[.conns[] |
		select(.state == "ended") | .client | sub(".*:"; "") | tonumber |
		select(. >= $lo and . <= $hi)] | length')"
	# shellcheck disable=SC2086
	want="$(count $own) $ended"
	check "$algo: drained b1's conns and its ended entries of the closed ones ($got): held and closed there ($want)" \
		[ "$got" = "$want" ] || return 1
	got=$(ctl -j conns "$VIP" --backend "$(be_addr4 1)" |
		jq -r '.conns[] | select(.state == "live") | .client | sub(".*:"; "")' | sort -n | tr '\n' ' ')
	want=$(awk '$1 == "conn" && $4 == "b1" { print $3 }' "$LIB_DIR/$h.r0" | sort -n | tr '\n' ' ')
	check "$algo: conns --backend lists b1's held connections, no other" [ "$got" = "$want" ] ||
		return 1
	remove 1 || return 1
	past_window
	expect "$h" "$algo: drained b1 removed" "$own"
}
test_drain_survives_changes_ring() { run_case drained ring; }
test_drain_survives_changes_jump() { run_case drained jump; }
test_drain_survives_changes_maglev() { run_case drained maglev; }

# ---- 4. spoofed SYNs, and a real reuse of a 5-tuple ----
# An off-path sender that knows the client's address sends one SYN for
# every port of its local range (10000-65000, tests/lib/topo.sh), so also for
# every held connection: before any change, after one (idle for 3 s, past
# the window), and after two more. Each connection whose SYN is spoofed
# must stay where it is: the SYN follows its entry (counted as syn_kept).
spoof_round() {
	local h=$1 what=$2 k0 k1
	k0=$(syn_kept)
	flood --syn-ports "$CLIENT4" 10000 65000 || return 1
	k1=$(syn_kept)
	diag "SYNs that followed an entry (syn_kept): $((k1 - k0))"
	expect "$h" "$what" ""
}
syn_kept() { ctl -j stats | jq '.global.syn_kept // 0'; }

spoofed_syns() {
	local algo=$1 h=spoof$1
	daemon_default || return 1
	configure "$algo" "1 2 3" || return 1
	open_held "$h" "$HELD" || return 1
	spoof_round "$h" "$algo: one SYN per client port, no change" || return 1
	add 4 || return 1
	sleep 2
	past_window
	spoof_round "$h" "$algo: one SYN per client port after b4 was added" || return 1
	add 5 && add 6 || return 1
	past_window
	spoof_round "$h" "$algo: one SYN per client port after b5, b6 were added"
}
test_spoofed_syns_ring() { run_case spoofed_syns ring; }
test_spoofed_syns_jump() { run_case spoofed_syns jump; }
test_spoofed_syns_maglev() { run_case spoofed_syns maglev; }

# The client closed its connection (FIN, or RST by SO_LINGER 0); the same
# 5-tuple's next SYN is a new connection and goes where the current table
# says, although the old entry named another backend. Ports 9000-9047 are
# outside the client's local range, so no held connection uses them. Two
# adds move ~40% of flows, so each group of 24 ports has moved ones.
reuse() {
	local algo=$1 how sport first now pick bad=0 movedn=0 rc=0 base
	daemon_default || return 1
	configure "$algo" "1 2 3" || return 1
	declare -A was
	for sport in $(seq 9000 9047); do
		how=fin
		[ "$sport" -lt 9024 ] || how=rst
		was[$sport]=$(conn_from "$sport" $how)
		[ -n "${was[$sport]}" ] || { diag "first connection from $sport failed"; rc=1; }
	done
	add 4 && add 5 || return 1
	# shellcheck disable=SC2046
	table_picks $(seq 9000 9047)
	# a TIME_WAIT port can be reused after 1 s (net.ipv4.tcp_tw_reuse)
	sleep 1.1
	for base in 9000 9024; do
		how=FIN
		[ $base = 9000 ] || how=RST
		movedn=0 bad=0
		for sport in $(seq $base $((base + 23))); do
			first=${was[$sport]}
			pick=${PICK[$sport]}
			now=$(conn_from "$sport" fin)
			[ "$pick" = "$first" ] || movedn=$((movedn + 1))
			[ "$now" = "$pick" ] || {
				bad=$((bad + 1))
				diag "port $sport: first $first, table says $pick, reused connection went to ${now:-nowhere}"
			}
		done
		diag "$algo: 24 5-tuples reused after $how, $movedn of them moved by the table, $bad not where it says"
		check "$algo: after $how, every reuse goes where the table says ($bad wrong)" [ $bad = 0 ] ||
			rc=1
		check "$algo: some reused 5-tuples after $how were moved by the change ($movedn)" \
			[ $movedn -gt 0 ] || rc=1
	done
	return $rc
}
test_reuse_after_fin_rst_ring() { run_case reuse ring; }
test_reuse_after_fin_rst_jump() { run_case reuse jump; }
test_reuse_after_fin_rst_maglev() { run_case reuse maglev; }

# ---- 5. hash fields changed live ----
hash_fields() {
	local algo=$1 h=hash$1 out rc=0
	daemon_default || return 1
	configure "$algo" "1 2 3" || return 1
	open_held "$h" "$HELD" || return 1
	# The preview must not claim that nothing moves: new flows move, and
	# established connections keep their backend (their entries).
	out=$(ctl service set "$VIP" hash src --dry-run 2>&1)
	printf '%s\n' "$out" | sed 's/^/#   dry-run: /'
	check "$algo: --dry-run of a hash change mentions established connections" \
		grep -qi established <<<"$out" || rc=1
	ctl service set "$VIP" hash src >/dev/null || return 1
	past_window
	expect "$h" "$algo: hash 5tuple -> src" "" || rc=1
	ctl service set "$VIP" hash 5tuple >/dev/null || return 1
	past_window
	expect "$h" "$algo: hash src -> 5tuple" "" || rc=1
	return $rc
}
test_hash_change_live_ring() { run_case hash_fields ring; }
test_hash_change_live_jump() { run_case hash_fields jump; }
test_hash_change_live_maglev() { run_case hash_fields maglev; }

# ---- 5b. algorithm, weights and forwarding mode changed live ----
# Each change moves new flows (the current table alone would send some held
# connections elsewhere: checked, so the case can fail); entries keep every
# established connection. Backends decapsulate (the topology's default), so
# the held connections survive the switch to ipip.
settings() {
	local h=settings rc=0
	daemon_default || return 1
	configure ring "1 2 3" || return 1
	open_held "$h" "$HELD" || return 1
	ctl service set "$VIP" algo maglev >/dev/null || return 1
	be set 2 weight 300 || return 1
	ctl service set "$VIP" algo jump >/dev/null || return 1
	be set 1 weight 50 || return 1
	ctl service set "$VIP" fwd ipip >/dev/null || return 1
	past_window
	table_moves "$h"
	check "the changes move $MOVES of $HELD held connections in the table alone" \
		[ "$MOVES" -gt 0 ] || rc=1
	expect "$h" "ring -> maglev -> jump, weights 100/300/100 -> 50/300/100, l2dsr -> ipip" "" ||
		rc=1
	return $rc
}
test_settings_changed_live() { run_case settings; }

# ---- 9. hrw: a backend added under held connections ----
# Rendezvous with weights 100/200/300, b4 added at 150: the table moves only
# the flows b4 wins (checked on the held connections' own flows), entries
# keep even those. Then 300 new connections: the first 60 go where the
# table says (`which`), and each backend's count is its weight's share within 5 sigma
# (binomial); the table's exact shares for this set (chlbctl sim with the
# same names and weights) are within 1% of the weights.
hrw_add() {
	local h=hrw n=300 rc=0 sport first other=0 off=0 spec i w c j t0=$SECONDS
	daemon_default || return 1
	svc_setup 4 hrw l2dsr "" || return 1
	be add 1 weight 100 && be add 2 weight 200 && be add 3 weight 300 || return 1
	past_window
	open_held "$h" 200 || return 1
	be add 4 weight 150 || return 1
	past_window
	table_moves "$h"
	while read -r _ _ sport first; do
		[ "${PICK[$sport]}" = "$first" ] || [ "${PICK[$sport]}" = b4 ] || other=$((other + 1))
	done < <(grep '^conn ' "$LIB_DIR/$h.r0")
	diag "hrw: the table alone moves $MOVES of the 200 held connections, $other of them elsewhere than b4"
	check "hrw: the add moves $MOVES of 200 held connections in the table alone" \
		[ "$MOVES" -gt 0 ] || rc=1
	check "hrw: ... all of them to b4 ($other elsewhere)" [ "$other" = 0 ] || rc=1
	expect "$h" "hrw 100/200/300, b4 added at 150" "" || rc=1
	open_held new "$n" || return 1
	# the table's pick for the first 60 (a `which` each: the decide tests cover the rest)
	# shellcheck disable=SC2046
	table_picks $(awk '$1 == "conn" { print $3 }' "$LIB_DIR/new.r0" | head -60)
	while read -r _ _ sport first; do
		[ "${PICK[$sport]}" = "$first" ] || off=$((off + 1))
	done < <(grep '^conn ' "$LIB_DIR/new.r0" | head -60)
	check "hrw: 60 new connections went where the table says ($off did not)" [ "$off" = 0 ] ||
		rc=1
	for spec in 1:100 2:200 3:300 4:150; do
		i=${spec%:*} w=${spec#*:}
		c=$(awk -v b="b$i" '$1 == "conn" && $4 == b' "$LIB_DIR/new.r0" | wc -l)
		check "hrw: b$i (weight $w of 750) took $c of $n new connections" \
			awk -v c="$c" -v w="$w" -v n="$n" 'BEGIN { p = w / 750; d = c - n * p
				exit !(d * d < 25 * n * p * (1 - p)) }' || rc=1
	done
	j=$("$CHLBCTL" -j sim --algo hrw --flows 1000 --weights 100,200,300,150 \
		--names "$(be_addr4 1),$(be_addr4 2),$(be_addr4 3),$(be_addr4 4)") || return 1
	diag "hrw: the table's exact shares / weight shares: $(jq -c '[.balance_min, .balance_max]' <<<"$j")"
	check "hrw: exact shares within 1% of the weights" \
		jq -e '.balance_max <= 1.01 and .balance_min >= 0.99' <<<"$j" >/dev/null || rc=1
	diag "hrw: the case took $((SECONDS - t0)) s"
	return $rc
}
test_hrw_backend_added_under_held() { run_case hrw_add; }

# ---- 8. restarts (before 6 and 7, which need a data plane of their own) ----
# chlbd stopped by SIGNAL with idle connections (the pinned program and
# entries keep serving), restarted; then the new daemon makes 6 changes.
restart() {
	local sig=$1 algo=$2 h=restart$1
	daemon_default || return 1
	configure "$algo" "1 2 3" || return 1
	open_held "$h" "$HELD" || return 1
	chlbd_stop "$sig"
	expect "$h" "$algo: no daemon after SIG$sig" "" || return 1
	chlbd_start xdp --history-ms "$HISTORY_MS" || return 1
	add 4 && add 5 && add 6 && add 7 && drain 1 && be set 1 weight 100 || return 1
	past_window
	expect "$h" "$algo: restarted after SIG$sig, 6 changes by the new daemon" ""
}
test_restart_sigterm() { run_case restart TERM ring; }
test_restart_sigkill() { run_case restart KILL maglev; }

# ---- 6. SYN flood during a change window ----
# With a 4096-entry table: a change opens a window, the held connections
# exchange once (a connection the change moved had an entry written then
# under the old design too, so there is something to evict), then 20480
# fresh-source SYNs (5x the table) while the window is open, then four more
# changes. A SYN writes nothing, so nothing may break.
CT_FLOOD=4096
FLOOD_X=${FLOOD_X:-5}
syn_flood() {
	local algo=$1 h=flood$1 c0 c1 e0 e1 rc=0
	daemon --history-ms "$HISTORY_MS" --ct-size $CT_FLOOD || return 1
	configure "$algo" "1 2 3" || return 1
	open_held "$h" "$HELD" || return 1
	add 4 || return 1
	expect "$h" "$algo: b4 added" "" || return 1
	read -r c0 _ <<<"$(ct_counts)"
	e0=$(held_with_entry "$h")
	flood --syn-fresh $((FLOOD_X * CT_FLOOD)) --src-prefix 10.99.0.0/16 || return 1
	read -r c1 _ <<<"$(ct_counts)"
	e1=$(held_with_entry "$h")
	diag "$algo: the flood wrote $((c1 - c0)) entries; held connections with an entry: $e0 before, $e1 after"
	check "$algo: the flood evicted no held connection's entry ($e0 -> $e1)" [ "$e1" = "$e0" ] ||
		rc=1
	add 5 && add 6 && drain 2 && be set 2 weight 100 || return 1
	past_window
	expect "$h" "$algo: $((FLOOD_X * CT_FLOOD)) fresh SYNs with --ct-size $CT_FLOOD, 4 changes" "" ||
		rc=1
	return $rc
}
test_syn_flood_ring() { run_case syn_flood ring; }
test_syn_flood_jump() { run_case syn_flood jump; }
test_syn_flood_maglev() { run_case syn_flood maglev; }

# ---- 7. table pressure ----
# A 512-entry table and 700 live connections, opened after the window: 450
# first (then idle: the least recently used), then 250 that keep talking.
# Their entries do not all fit, so the LRU evicts among the idle ones. Then
# a change moves some flows; after the window a connection without an entry
# is decided by the current table, so what breaks must be evicted idle
# connections that the change moved:
#   - the active ones exchange first: all keep their backend;
#   - then the idle ones: every one that had no entry before the change and
#     was moved breaks (known beforehand: entries from `chlbctl conns`,
#     moves from `chlbctl which`); whatever else breaks was moved too and is
#     idle. (An evicted connection whose SYN is < 32 s old gets its entry
#     back on its next packet, evicting the least recently used entry then:
#     an idle connection later in the round. So the set can grow during the
#     round, but only among the idle and moved.)
#   - the evictions are counted, at least as many as broke.
CT_SMALL=512
OLD_N=450
NEW_N=250
pressure() {
	local algo=$1 o=old$1 nw=new$1 ins0 ev0 ins1 ent1 ev1 ev sports idx sport first
	local gone="" moved_idx="" got extra missing n rc=0
	daemon --history-ms "$HISTORY_MS" --ct-size $CT_SMALL || return 1
	configure "$algo" "1 2 3" || return 1
	read -r ins0 _ ev0 <<<"$(ct_counts)"
	open_held "$o" $OLD_N || return 1
	open_held "$nw" $NEW_N || return 1
	hold_round "$nw" && hold_round "$nw" || return 1
	read -r ins1 ent1 ev1 <<<"$(ct_counts)"
	diag "$algo: table of $CT_SMALL: $((ins1 - ins0)) inserts, $ent1 entries, $((ev1 - ev0)) evictions;" \
		"with an entry: $(held_with_entry "$o") of the $OLD_N idle, $(held_with_entry "$nw") of the $NEW_N active"
	check "$algo: evictions counted ($((ev1 - ev0)))" [ $((ev1 - ev0)) -gt 0 ] || rc=1
	check "$algo: every recently used connection kept its entry" \
		[ "$(held_with_entry "$nw")" = $NEW_N ] || rc=1
	add 4 || return 1
	sports=" $(entry_sports | tr '\n' ' ') "
	# shellcheck disable=SC2046
	table_picks $(awk '$1 == "conn" { print $3 }' "$LIB_DIR/$o.r0")
	while read -r _ idx sport first; do
		[ "${PICK[$sport]}" != "$first" ] || continue
		moved_idx="$moved_idx$idx "
		case $sports in *" $sport "*) ;; *) gone="$gone$idx " ;; esac
	done < <(grep '^conn ' "$LIB_DIR/$o.r0")
	past_window
	expect "$nw" "$algo: $NEW_N recently used, b4 added" "" || rc=1
	hold_round "$o" || return 1
	got=$(broken "$o")
	read -r _ _ ev1 <<<"$(ct_counts)"
	ev=$((ev1 - ev0))
	missing=$(not_in "$gone" "$got")
	extra=$(not_in "$got" "$moved_idx")
	# shellcheck disable=SC2086
	diag "$algo: $OLD_N idle (least recently used), b4 added: moved $(moved "$o")," \
		"broken $(count $got); expected 0 moved, the $(count $gone) without an entry that the" \
		"table moved broken, and any other broken among the $(count $moved_idx) moved; evictions $ev"
	check "$algo: none moved" [ "$(moved "$o")" = 0 ] || rc=1
	check "$algo: every evicted idle connection that the change moved broke ($missing did not)" \
		[ "$missing" = 0 ] || rc=1
	check "$algo: every broken one was idle and moved by the change ($extra were not)" \
		[ "$extra" = 0 ] || rc=1
	# shellcheck disable=SC2086
	n=$(count $got)
	check "$algo: evictions counted, at least as many as broke ($ev >= $n)" \
		[ $((ev > 0 && ev >= n)) = 1 ] || rc=1
	return $rc
}
test_table_pressure_ring() { run_case pressure ring; }
test_table_pressure_jump() { run_case pressure jump; }
test_table_pressure_maglev() { run_case pressure maglev; }

lib_run
