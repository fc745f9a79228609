#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# chlbd + chlbctl for real: round trips, bad input, dry runs (a hash-field
# change too), `which` against the attached program, the connection table
# (`conns`, `backend list` conns, `stats` ct_*, evictions counted at a small
# --ct-size), an address in two services (a slot each: removed from one, only
# that one's entries go stale), restarts (TERM and KILL) that adopt the pinned state without
# moving a flow, apply/converge, socket abuse, a corrupt state file,
# teardown.
. "$(dirname "$0")/../lib.sh"
daemon_fixture

VIP=10.0.0.10:80/tcp

test_roundtrip() {
	chlbd_start xdp-generic || return 1
	ctl service add $VIP algo ring vnodes 160 fwd ipip hash 5tuple || return 1
	for i in 2 3 4 5; do ctl backend add $VIP 10.1.0.$i weight 100 || return 1; done
	check "4 backends listed" \
		ctl -j service list | jq -e '.services[0].backends == 4 and .services[0].algo == "ring"' >/dev/null || return 1
	ctl backend set $VIP 10.1.0.3 weight 0 || return 1
	check "drained weight 0" [ "$(ctl -j backend list $VIP | jq '.backends[] | select(.address == "10.1.0.3") | .weight')" = 0 ] || return 1
	ctl backend del $VIP 10.1.0.5 || return 1
	check "3 backends after del" [ "$(ctl -j backend list $VIP | jq '.backends | length')" = 3 ] || return 1
	ctl service add '[2001:db8::10]:443/tcp' algo maglev table 65537 fwd l2dsr || return 1
	ctl backend add '[2001:db8::10]:443/tcp' 2001:db8::2 || return 1
	check "maglev fingerprint listed" \
		ctl -j service list '[2001:db8::10]:443/tcp' | jq -e '.services[0].fingerprint | length == 8' >/dev/null || return 1
	ctl service del '[2001:db8::10]:443/tcp' || return 1
	check "save shows the ring service" [ "$(saved | wc -l)" = 4 ] || return 1
	check "state file persisted" grep -q "10.1.0.3 weight 0" "$CHLBD_STATE"
}

# args | expected exit | text the message must contain. A bad value exits 2
# whether chlbctl or chlbd finds it; a request that does not fit the state exits 1.
BAD=(
	"service add 10.0.0.300:80/tcp|2|'10.0.0.300:80/tcp'"
	"service add 10.0.0.11:80/sctp|2|'sctp'"
	"service add 10.0.0.11:80/tcp algo rendezvous|2|'rendezvous'"
	"service add 10.0.0.11:80/tcp vnodes 0|2|'0'"
	"service add 10.0.0.11:80/tcp algo maglev table 65536|2|'65536': maglev table size must be prime"
	"service add $VIP|1|already exists"
	"backend add $VIP 10.1.0.2|1|already in the service"
	"backend add $VIP 10.1.0.9 weight 10001|2|'10001'"
	"backend add 10.0.0.99:80/tcp 10.1.0.9|1|'10.0.0.99:80/tcp': no such service"
	"backend add $VIP 2001:db8::9|0|"
	"backend del $VIP 2001:db8::9|0|"
	"backend set $VIP 10.1.0.77 weight 5|1|'10.1.0.77': no such backend"
	"backend add $VIP 10.1.0.x|2|'10.1.0.x'"
	"service frob $VIP|2|'frob'"
	"frobnicate|2|'frobnicate'"
	"backend add 10.0.0.50:80/tcp 2001:db8::9|2|'2001:db8::9': fwd l2dsr needs an IPv4 backend"
	"service add [2001:db8::50]:80/tcp|0|"
	"backend add [2001:db8::50]:80/tcp 10.1.0.2|2|IPv6-in-IPv4 is not supported"
	"service del [2001:db8::50]:80/tcp|0|"
	"service set 10.0.0.50:80/tcp algo maglev table 2|2|'2': maglev table size must be larger than"
	"conns --backend notanaddr|2|'notanaddr': malformed backend address"
	"conns --backend|2|'--backend' needs a backend address"
	"conns $VIP --frob|2|'--frob'"
	"conns 10.0.0.99:80/tcp|1|'10.0.0.99:80/tcp': no such service"
	"conns 10.0.0.50:80/tcp --backend 10.1.0.77|1|'10.1.0.77': no such backend in the service"
	"conns --backend 10.1.0.77|1|'10.1.0.77': not a backend of any service"
)

test_bad_input() {
	local before after e args code needle out rc
	ctl service add 10.0.0.50:80/tcp fwd l2dsr && ctl backend add 10.0.0.50:80/tcp 10.1.0.2 &&
		ctl backend add 10.0.0.50:80/tcp 10.1.0.3 || return 1
	before=$(saved)
	for e in "${BAD[@]}"; do
		IFS='|' read -r args code needle <<<"$e"
		# shellcheck disable=SC2086
		out=$(ctl $args 2>&1)
		rc=$?
		check "'$args' exits $code (got $rc: $out)" [ "$rc" = "$code" ] || return 1
		[ -z "$needle" ] || check "'$args' message names '$needle': $out" \
			grep -qF -- "$needle" <<<"$out" || return 1
	done
	# JSON mode: errors are JSON too
	ctl -j service add $VIP | jq -e '.error | test("already exists")' >/dev/null || return 1
	after=$(saved)
	check "rejected input changed nothing" [ "$before" = "$after" ] || return 1
	out=$("$CHLBD" -i v0 -m turbo 2>&1)
	check "chlbd: unknown mode named, exit 2 ($?): $out" grep -q "'turbo': unknown mode" <<<"$out" || return 1
	ctl service del 10.0.0.50:80/tcp
}

test_dry_run() {
	local before out
	before=$(saved)
	out=$(ctl backend del $VIP 10.1.0.2 --dry-run) || return 1
	check "dry run names the moving backend: $out" grep -q "10.1.0.2 .*-> *0.00%" <<<"$out" || return 1
	ctl -j backend add $VIP 10.1.0.9 --dry-run | jq -e '.dry_run and .services[0].moved > 0.1' >/dev/null || return 1
	# a hash-field change moves new flows (not "0.00% of the keyspace"): with
	# ring's two serving backends (10.1.0.3 drains), a re-keyed flow stays on
	# its backend only when both hashes pick the same one
	out=$(ctl service set $VIP hash src --dry-run) || return 1
	check "hash change: share of new flows, not keyspace: $out" \
		grep -qE "^$VIP: change, hash 5tuple -> src: [0-9.]+% of new flows go to another backend" <<<"$out" || return 1
	check "hash change: established connections keep their entries" \
		grep -qx "  established connections keep their connection entries and their backends" <<<"$out" || return 1
	check "hash change moves 40-60% of new flows with two equal backends" \
		ctl -j service set $VIP hash src --dry-run | jq -e '.services[0] | .basis == "flows" and .moved > 0.4 and .moved < 0.6' >/dev/null || return 1
	check "dry run changed nothing" [ "$before" = "$(saved)" ]
}

# which_matches PORT N SEED: the decision `chlbctl which` reports == the one
# the attached program makes, for N random flows
which_matches() {
	local port=$1 src be n
	probe which "$CHLBD_PIN" "$D_IFINDEX" 10.0.0.10 "$port" "$2" "$3" >"$LIB_DIR/probe" || return 1
	n=$(wc -l <"$LIB_DIR/probe")
	check "$2 flows probed (got $n)" [ "$n" = "$2" ] || return 1
	while read -r src _ _; do
		ctl -j which "$src" "10.0.0.10:$port" tcp
	done <"$LIB_DIR/probe" | jq -r .new_flow.backend >"$LIB_DIR/which"
	awk '{ print $3 }' "$LIB_DIR/probe" | diff - "$LIB_DIR/which" >"$LIB_DIR/diff" && return 0
	diag "program vs which (port $port):"
	sed 's/^/#   /' "$LIB_DIR/diff" | head
	return 1
}

test_which_agrees() {
	ctl service add 10.0.0.10:81/tcp algo jump || return 1
	ctl service add 10.0.0.10:82/tcp algo maglev table 251 || return 1
	ctl service add 10.0.0.10:83/tcp algo jtable table 251 || return 1
	ctl service add 10.0.0.10:84/tcp algo hrw table 4099 || return 1
	ctl service add 10.0.0.10:85/tcp vnodes auto target 1.02 || return 1
	for i in 2 3 4 5 6 7; do
		ctl backend add 10.0.0.10:81/tcp 10.1.0.$i && ctl backend add 10.0.0.10:82/tcp 10.1.0.$i &&
			ctl backend add 10.0.0.10:83/tcp 10.1.0.$i weight $((i * 100)) &&
			ctl backend add 10.0.0.10:84/tcp 10.1.0.$i weight $((i * 37)) &&
			ctl backend add 10.0.0.10:85/tcp 10.1.0.$i weight $((i * 37)) || return 1
	done
	# vnodes auto: the target is saved, not the K; the K picked is what `sim` picks
	check "vnodes auto is saved with its target" \
		saved | grep -q "10.0.0.10:85/tcp algo ring vnodes auto target 1.02 " || return 1
	local k simk
	k=$(ctl -j service list 10.0.0.10:85/tcp | jq -r '.services[0] | select(.vnodes_auto and .target_met and .vnodes_balance <= 1.02) | .vnodes')
	simk=$("$CHLBCTL" -j sim --algo ring --names 10.1.0.2,10.1.0.3,10.1.0.4,10.1.0.5,10.1.0.6,10.1.0.7 \
		--weights 74,111,148,185,222,259 --target-balance 1.02 --flows 1000 | jq -r .vnodes)
	check "service list shows the K picked ($k), the one sim picks ($simk)" \
		[ -n "$k" ] && [ "$k" = "$simk" ] || return 1
	check "service list (text) shows vnodes auto" \
		ctl service list 10.0.0.10:85/tcp | grep -q "^  vnodes auto: K $k for target 1.02, balance" || return 1
	ctl backend del 10.0.0.10:83/tcp 10.1.0.4 || return 1
	check "jtable keeps its bucket order in the state" \
		saved | grep -q "10.0.0.10:83/tcp algo jtable table 251 buckets" || return 1
	check "hrw is saved with its table size" \
		saved | grep -q "10.0.0.10:84/tcp algo hrw table 4099" || return 1
	which_matches 80 200 7 && which_matches 81 150 81 && which_matches 82 150 82 &&
		which_matches 83 150 83 && which_matches 84 150 84 && which_matches 85 150 85
}

CV=10.0.0.70:80/tcp
CW=10.0.0.71:*/tcp

# nogrep ARGS: grep finds nothing
# the probed flows of file $1 as "CLIENT BACKEND STATE" ($2), sorted
probed() { awk -v st="$2" '{ print $1, $3, st }' "$1"; }

# conns_of SVC_JSON BACKEND FIELD: a backend's count in `conns` JSON
conns_of() { jq --arg b "$2" ".services[0].backends[] | select(.address == \$b) | .$3" <<<"$1"; }

# `conns` against connections made through the attached program: SYN then
# handshake ACK (writes the entry), some closed by FIN (entry ended), some to
# a port-0 wildcard service; a drain keeps them, a removal makes them stale.
test_conns() {
	local j got want be n live ended out list bl src
	ctl service add $CV algo jump && ctl service add $CW algo jump || return 1
	# backends of no other service: removing one from $CV makes its slot DEAD
	for i in 12 13 14; do ctl backend add $CV 10.1.0.$i || return 1; done
	ctl backend add $CW 10.1.0.15 || return 1
	check "no entries before any connection" \
		[ "$(ctl -j conns $CV | jq -c '.services[0] | [.entries, .listed]')" = "[0,null]" ] || return 1
	probe connect "$CHLBD_PIN" "$D_IFINDEX" 10.0.0.70 80 100 701 >"$LIB_DIR/c_live" &&
		probe connect "$CHLBD_PIN" "$D_IFINDEX" 10.0.0.70 80 20 702 fin >"$LIB_DIR/c_fin" &&
		probe connect "$CHLBD_PIN" "$D_IFINDEX" 10.0.0.71 8080 10 703 >"$LIB_DIR/c_wild" || return 1
	check "every probed packet forwarded" nogrep -q verdict "$LIB_DIR"/c_live "$LIB_DIR"/c_fin \
		"$LIB_DIR"/c_wild || return 1
	n=$(cat "$LIB_DIR"/c_live "$LIB_DIR"/c_fin | awk '{ print $1 }' | sort -u | wc -l)
	check "130 distinct probed flows ($n + 10)" [ "$n" = 120 ] || return 1

	j=$(ctl -j conns $CV) || return 1
	got=$(jq -c '[.services[0] | .entries, .live, .ended, .stale] + [.listed, .truncated, .list_max]' <<<"$j")
	check "service counts [entries, live, ended, stale, listed, truncated, max]: $got" \
		[ "$got" = "[120,100,20,0,120,false,100000]" ] || return 1
	# the list is exactly the probed flows, each on the backend its ACK reached
	{ probed "$LIB_DIR/c_live" live; probed "$LIB_DIR/c_fin" ended; } | sort >"$LIB_DIR/c_want"
	jq -r '.conns[] | "\(.client) \(.backend) \(.state)"' <<<"$j" | sort >"$LIB_DIR/c_got"
	if ! diff "$LIB_DIR/c_want" "$LIB_DIR/c_got" >"$LIB_DIR/c_diff"; then
		diag "conns list vs the probed flows:"
		sed 's/^/#   /' "$LIB_DIR/c_diff" | head
		return 1
	fi
	check "entries name VIP, service, slot, generation" jq -e --arg s "$CV" \
		'[.conns[] | select(.vip == $s and .service == $s and (.slot | type) == "number" and .gen >= 1)] | length == 120' \
		<<<"$j" >/dev/null || return 1
	# which names an entry's state as conns does: a FIN-closed flow's is ended
	src=$(awk 'NR == 1 { print $1 }' "$LIB_DIR/c_fin")
	check "which text: $src's entry is valid, ended" \
		ctl which "$src" 10.0.0.70:80 tcp | grep -qE "^conn entry: .* gen [0-9]+, valid, ended \(FIN or RST seen\)$" || return 1
	src=$(awk 'NR == 1 { print $1 }' "$LIB_DIR/c_live")
	check "which text: $src's entry is valid" \
		ctl which "$src" 10.0.0.70:80 tcp | grep -qE "^conn entry: .* gen [0-9]+, valid$" || return 1
	bl=$(ctl -j backend list $CV) || return 1
	for be in 10.1.0.12 10.1.0.13 10.1.0.14; do
		live=$(grep -c " $be\$" "$LIB_DIR/c_live")
		ended=$(grep -c " $be\$" "$LIB_DIR/c_fin")
		got="$(conns_of "$j" $be live) $(conns_of "$j" $be ended)"
		check "$be: live ended $got, probed $live $ended" [ "$got" = "$live $ended" ] || return 1
		got=$(jq --arg b $be '.backends[] | select(.address == $b) | "\(.conns) \(.conns_ended)"' -r <<<"$bl")
		check "$be: backend list conns $got" [ "$got" = "$live $ended" ] || return 1
	done
	# text: the backend's own line, the other backends left out
	out=$(ctl conns $CV --backend 10.1.0.12) || return 1
	live=$(grep -c " 10.1.0.12\$" "$LIB_DIR/c_live")
	ended=$(grep -c " 10.1.0.12\$" "$LIB_DIR/c_fin")
	check "text names the service: $out" grep -qE "^$CV +120 +100 +20 +0 +0\$" <<<"$out" || return 1
	check "text: 10.1.0.12's line with $live live, $ended ended" \
		grep -qE "^  10\.1\.0\.12 \(slot [0-9]+, gen [0-9]+\) +$live +$ended\$" <<<"$out" || return 1
	check "text: --backend leaves the other backends out" nogrep -q "10.1.0.13" <<<"$out" || return 1
	check "text: backend list has a CONNS column" \
		ctl backend list $CV | grep -qE "^$CV +10\.1\.0\.12 .* $live\$" || return 1
	# the port-0 wildcard takes the flows to any port
	j=$(ctl -j conns $CW) || return 1
	check "wildcard service: 10 live entries to port 8080" jq -e --arg s "$CW" \
		'.services[0].live == 10 and ([.conns[] | select(.vip == "10.0.0.71:8080/tcp" and .service == $s)] | length) == 10' \
		<<<"$j" >/dev/null || return 1
	# the whole table
	j=$(ctl -j conns) || return 1
	check "whole table: 130 entries, none of another service" \
		jq -e '.entries == 130 and .other == 0 and ([.conns[]] | length) == 130' <<<"$j" >/dev/null || return 1
	# a drain keeps a backend's entries; its removal makes them stale
	live=$(grep -c " 10.1.0.13\$" "$LIB_DIR/c_live")
	ended=$(grep -c " 10.1.0.13\$" "$LIB_DIR/c_fin")
	ctl backend set $CV 10.1.0.13 weight 0 || return 1
	got=$(ctl -j backend list $CV | jq -r '.backends[] | select(.address == "10.1.0.13") | "\(.state) \(.conns)"')
	check "drained backend keeps its $live entries: $got" [ "$got" = "draining $live" ] || return 1
	ctl backend del $CV 10.1.0.13 || return 1
	got=$(ctl -j conns $CV | jq -c '[.services[0] | .entries, .live, .ended, .stale]')
	want="[120,$((100 - live)),$((20 - ended)),$((live + ended))]"
	check "removed backend's entries are stale: $got, want $want" [ "$got" = "$want" ] || return 1
	check "stale entries keep their slot, show no live backend" \
		ctl -j conns $CV | jq -e '[.conns[] | select(.state == "stale")] | length == '"$((live + ended))" >/dev/null || return 1
	# stats: table pressure
	j=$(ctl -j stats) || return 1
	check "stats: ct_size 1048576, ct_entries 130, inserts >= 130, evictions = inserts - entries: $(jq -c '[.ct_size, .ct_entries, .ct_inserts, .ct_evictions]' <<<"$j")" \
		jq -e '.ct_size == 1048576 and .ct_entries == 130 and .ct_inserts >= 130 and
			.ct_evictions == ([.ct_inserts - .ct_entries, 0] | max)' <<<"$j" >/dev/null || return 1
	check "stats: bytes per entry ($(jq .ct_bytes_per_entry <<<"$j")) at least key + value, memory = size x that" \
		jq -e '.ct_bytes_per_entry >= 56 and .ct_bytes_per_entry < 512 and
			(.ct_memory_bytes / .ct_size - .ct_bytes_per_entry | fabs) < 0.001' <<<"$j" >/dev/null || return 1
	check "stats text shows the table" ctl stats | grep -q "^connection table: 130 of 1048576 entries" || return 1
	# the list stops at 100,000 entries and says so; the counts still cover everything
	probe connect "$CHLBD_PIN" "$D_IFINDEX" 10.0.0.71 9090 100050 704 >/dev/null || return 1
	j=$(ctl -j conns | jq -c '[.entries, .listed, .truncated, (.conns | length)]')
	check "list truncated at 100000: $j" [ "$j" = "[100180,100000,true,100000]" ] || return 1
	j=$(ctl -j conns $CW | jq -c '[.services[0].live, .listed, .truncated]')
	check "the wildcard service's entries: $j" [ "$j" = "[100060,100000,true]" ] || return 1
	ctl service del $CV && ctl service del $CW
}

# an address in two services is two backends, a slot each: removing it from
# one makes that service's entries stale and leaves the other's live; stats
# has a row per (service, backend), and a slot's new occupant counts from 0
test_shared_backend() {
	local S1=10.0.0.73:80/tcp S2=10.0.0.74:80/tcp j got s1 s2 n16 n17 src1 src2 gen1
	ctl service add $S1 algo jump && ctl service add $S2 algo jump || return 1
	ctl backend add $S1 10.1.0.16 && ctl backend add $S1 10.1.0.17 &&
		ctl backend add $S2 10.1.0.16 || return 1
	s1=$(ctl -j backend list $S1 | jq '.backends[] | select(.address == "10.1.0.16") | .slot')
	s2=$(ctl -j backend list $S2 | jq '.backends[] | select(.address == "10.1.0.16") | .slot')
	check "10.1.0.16 has a slot in each service ($s1, $s2)" \
		test "$s1" -ge 0 -a "$s2" -ge 0 -a "$s1" != "$s2" || return 1
	probe connect "$CHLBD_PIN" "$D_IFINDEX" 10.0.0.73 80 40 731 >"$LIB_DIR/sh1" &&
		probe connect "$CHLBD_PIN" "$D_IFINDEX" 10.0.0.74 80 20 732 >"$LIB_DIR/sh2" || return 1
	check "every probed packet forwarded" nogrep -q verdict "$LIB_DIR"/sh1 "$LIB_DIR"/sh2 || return 1
	n16=$(grep -c " 10.1.0.16\$" "$LIB_DIR/sh1")
	n17=$(grep -c " 10.1.0.17\$" "$LIB_DIR/sh1")
	check "both of $S1's backends took connections ($n16, $n17)" \
		test "$n16" -gt 0 -a "$n17" -gt 0 -a $((n16 + n17)) = 40 || return 1
	src1=$(grep " 10.1.0.16\$" "$LIB_DIR/sh1" | head -1 | awk '{ print $1 }')
	src2=$(head -1 "$LIB_DIR/sh2" | awk '{ print $1 }')
	j=$(ctl -j stats) || return 1
	got=$(jq -c --arg a 10.1.0.16 '[.backends[] | select(.address == $a) | [.service, .slot, .state, .new_flows]] | sort' <<<"$j")
	check "stats: a row per service for 10.1.0.16: $got" \
		[ "$got" = "[[\"$S1\",$s1,\"live\",$n16],[\"$S2\",$s2,\"live\",20]]" ] || return 1
	check "stats text names the service on each row" \
		ctl stats | grep -qE "^  $S2 10\.1\.0\.16 \(slot $s2, live\) " || return 1

	ctl backend del $S1 10.1.0.16 || return 1
	got=$(ctl -j conns $S1 | jq -c '.services[0] | [.entries, .live, .ended, .stale, ([.backends[].address] | join(","))]')
	check "$S1: 10.1.0.16's $n16 entries stale, 10.1.0.17's live: $got" \
		[ "$got" = "[40,$n17,0,$n16,\"10.1.0.17\"]" ] || return 1
	got=$(ctl -j conns $S2 | jq -c '.services[0] | [.entries, .live, .stale, .backends[0].address, .backends[0].live]')
	check "$S2: its 20 entries stay live on 10.1.0.16: $got" \
		[ "$got" = "[20,20,0,\"10.1.0.16\",20]" ] || return 1
	got=$(ctl -j conns --backend 10.1.0.16 | jq -c '[.services[].service, .listed, ([.conns[].service] | unique)]')
	check "conns --backend: only $S2 has it now, its 20 entries: $got" \
		[ "$got" = "[\"$S2\",20,[\"$S2\"]]" ] || return 1
	got=$(ctl -j which "$src1" 10.0.0.73:80 tcp | jq -c '.conn | [.backend, .slot, .service, .state, .valid]')
	check "which: $S1's entry names its dead slot, not valid: $got" \
		[ "$got" = "[\"10.1.0.16\",$s1,\"$S1\",\"dead\",false]" ] || return 1
	got=$(ctl -j which "$src1" 10.0.0.73:80 tcp | jq -r '.established.backend')
	check "which: $S1's flow is decided again ($got)" [ "$got" = 10.1.0.17 ] || return 1
	got=$(ctl -j which "$src2" 10.0.0.74:80 tcp | jq -c '[.conn.slot, .conn.service, .conn.valid, .established.backend, .established_by]')
	check "which: $S2's entry still followed: $got" \
		[ "$got" = "[$s2,\"$S2\",true,\"10.1.0.16\",\"connection entry\"]" ] || return 1
	check "which text: the entry's slot and service" \
		ctl which "$src1" 10.0.0.73:80 tcp | grep -qE "^conn entry: +10\.1\.0\.16 \(slot $s1 of $S1\) gen [0-9]+, stale" || return 1
	got=$(ctl -j backend list $S2 | jq -c '[.backends[] | [.address, .slot, .state, .conns]]')
	check "backend list $S2: $got" [ "$got" = "[[\"10.1.0.16\",$s2,\"live\",20]]" ] || return 1
	got=$(ctl -j stats | jq -c --arg a 10.1.0.16 '[.backends[] | select(.address == $a) | [.service, .state, .new_flows]] | sort')
	check "stats: $S1's row dead, $S2's live: $got" \
		[ "$got" = "[[\"$S1\",\"dead\",$n16],[\"$S2\",\"live\",20]]" ] || return 1

	# back in S1 while its slot is held: that slot, a new generation (the old
	# entries stay stale), counters from zero
	gen1=$(ctl -j which "$src1" 10.0.0.73:80 tcp | jq .conn.gen)
	ctl backend add $S1 10.1.0.16 || return 1
	got=$(ctl -j backend list $S1 | jq -c '.backends[] | select(.address == "10.1.0.16") | [.slot, .gen]')
	check "re-added: slot $s1 again, generation $gen1 + 1: $got" [ "$got" = "[$s1,$((gen1 + 1))]" ] || return 1
	got=$(ctl -j stats | jq -c --arg s $S1 '.backends[] | select(.address == "10.1.0.16" and .service == $s) | [.packets, .bytes, .new_flows]')
	check "its counters start at zero: $got" [ "$got" = "[0,0,0]" ] || return 1
	got=$(ctl -j conns $S1 | jq -c '.services[0] | [.live, .stale]')
	check "$S1's old entries stay stale: $got" [ "$got" = "[$n17,$n16]" ] || return 1
	ctl service del $S1 && ctl service del $S2
}

# connection entries of the probed flows, as chlbctl which reports them
conns() {
	awk '{ print $1 }' <<<"$1" | head -60 | while read -r src; do
		ctl -j which "$src" 10.0.0.10:80 tcp
	done | jq -c '.conn'
}

prog_id() { bpftool -j link show pinned "$CHLBD_PIN/link_$D_IFINDEX" | jq .prog_id; }

# the entries `chlbctl conns` lists for the VIP, sorted
listed() { ctl -j conns 10.0.0.10:80/tcp | jq -c '[.conns[] | [.client, .backend, .slot, .gen, .state]] | sort'; }

restart_keeps_flows() {
	local sig=$1 fp_before fp_after before after conn_before prog_before est list_before
	before=$(probe which "$CHLBD_PIN" "$D_IFINDEX" 10.0.0.10 80 200 42)
	# established connections (SYN, then the handshake ACK that writes the entry)
	est=$(probe connect "$CHLBD_PIN" "$D_IFINDEX" 10.0.0.10 80 60 43)
	conn_before=$(conns "$est")
	list_before=$(listed)
	prog_before=$(prog_id)
	fp_before=$(ctl -j service list | jq -c '[.services[] | [.service, .fingerprint]]')
	local state_before
	state_before=$(saved)
	chlbd_stop "$sig"
	check "program still attached while chlbd is down" \
		ip -n "$D_NS" link show v0 | grep -q xdpgeneric || return 1
	check "still forwarding while chlbd is down" \
		[ "$(probe which "$CHLBD_PIN" "$D_IFINDEX" 10.0.0.10 80 200 42)" = "$before" ] || return 1
	chlbd_start xdp-generic || return 1
	check "adopted pinned maps" grep -q "adopted pinned maps" "$CHLBD_LOG" || return 1
	after=$(probe which "$CHLBD_PIN" "$D_IFINDEX" 10.0.0.10 80 200 42)
	check "no flow re-hashed across the restart" [ "$before" = "$after" ] || return 1
	check "every established flow has a connection entry" \
		[ "$(grep -c slot <<<"$conn_before")" = 60 ] || return 1
	check "connection entries survived" [ "$conn_before" = "$(conns "$est")" ] || return 1
	check "chlbctl conns lists the same entries ($(jq length <<<"$list_before"))" \
		[ "$list_before" = "$(listed)" ] || return 1
	check "program replaced in place (prog $prog_before -> $(prog_id))" \
		[ "$(prog_id)" != "$prog_before" ] || return 1
	fp_after=$(ctl -j service list | jq -c '[.services[] | [.service, .fingerprint]]')
	check "same tables ($fp_before vs $fp_after)" [ "$fp_before" = "$fp_after" ] || return 1
	check "state restored" [ "$state_before" = "$(saved)" ]
}

test_restart_sigterm() { restart_keeps_flows TERM; }
test_restart_sigkill() { restart_keeps_flows KILL; }

test_apply_converges() {
	local f=$LIB_DIR/conf swaps1 swaps2
	cat >"$f" <<-EOF
		# two services
		service add 10.0.0.20:80/tcp algo maglev table 65537 fwd ipip
		backend add 10.0.0.20:80/tcp 10.1.0.2
		backend add 10.0.0.20:80/tcp 10.1.0.3 weight 200
		service add 10.0.0.21:53/udp algo jump hash src
		backend add 10.0.0.21:53/udp 10.1.0.4
		backend add 10.0.0.21:53/udp 10.1.0.5
	EOF
	# it keeps none of the services there are: that takes --force
	check "a file that deletes every service is refused" bash -c "! $CHLBCTL -s $CHLBD_SOCK apply -f $f 2>/dev/null" || return 1
	ctl apply -f "$f" --force || return 1
	check "converged to exactly the file" [ "$(ctl -j service list | jq '.services | length')" = 2 ] || return 1
	if ctl service list $VIP >/dev/null 2>&1; then
		diag "$VIP survived an apply of a file without it"
		return 1
	fi
	swaps1=$(ctl -j service list | jq -c '[.services[].swaps]')
	ctl apply -f "$f" || return 1
	swaps2=$(ctl -j service list | jq -c '[.services[].swaps]')
	check "apply is idempotent (swaps $swaps1 -> $swaps2)" [ "$swaps1" = "$swaps2" ] || return 1
	ctl save >"$LIB_DIR/saved" && ctl apply -f "$LIB_DIR/saved" || return 1
	check "save | apply is a no-op" [ "$swaps1" = "$(ctl -j service list | jq -c '[.services[].swaps]')" ] || return 1
	sed -i '/10.1.0.5/d' "$f"
	check "dry run of the file shows the change" \
		ctl apply -f "$f" --dry-run | grep -q "10.0.0.21:53/udp: change" || return 1
	ctl apply -f "$f" || return 1
	check "one backend less" [ "$(ctl -j backend list 10.0.0.21:53/udp | jq '.backends | length')" = 1 ]
}

test_apply_bad_line() {
	local f=$LIB_DIR/bad.conf before out
	before=$(saved)
	printf 'service add 10.0.0.30:80/tcp\nbackend add 10.0.0.30:80/tcp 10.1.0.2\nbackend add 10.0.0.30:80/tcp 10.1.0.3 weight lots\n' >"$f"
	out=$(ctl apply -f "$f" 2>&1)
	check "a bad value: exit 2" [ $? = 2 ] || return 1
	check "names file, line and token: $out" grep -qF "$f:3: 'lots'" <<<"$out" || return 1
	check "nothing from the file applied" [ "$before" = "$(saved)" ]
}

test_socket_abuse() {
	local out t0
	# oversized
	out=$(python3 - "$CHLBD_SOCK" <<-'EOF'
		import socket, sys
		s = socket.socket(socket.AF_UNIX)
		s.connect(sys.argv[1])
		data = b"service add " + b"x" * (9 << 20)
		try:
		    s.sendall(data)
		except OSError:
		    pass  # chlbd answers and closes once the limit is crossed
		print(s.recv(65536).decode())
	EOF
	)
	check "oversized request gets an error: ${out:0:80}" grep -q "larger than" <<<"$out" || return 1
	out=$(printf 'service add 1.2.3.4:80/tcp\0junk' | socat -t 5 - UNIX-CONNECT:"$CHLBD_SOCK")
	check "NUL byte refused: $out" grep -q "NUL" <<<"$out" || return 1
	out=$(head -c 3000 /dev/urandom | tr -d '\0' | socat -t 5 - UNIX-CONNECT:"$CHLBD_SOCK")
	check "garbage gets a JSON error: ${out:0:80}" jq -e .error <<<"$out" >/dev/null || return 1
	# a client that connects and never finishes its request blocks nobody
	lib_bg hang bash -c "sleep 8 | socat - UNIX-CONNECT:$CHLBD_SOCK"
	lib_bg hang2 bash -c "(printf 'service li'; sleep 8) | socat - UNIX-CONNECT:$CHLBD_SOCK"
	sleep 0.3
	t0=$(date +%s%N)
	ctl service list >/dev/null || return 1
	check "answered within 1 s despite hanging clients" [ $(($(date +%s%N) - t0)) -lt 1000000000 ] || return 1
	check "socket is mode 0600" [ "$(stat -c %a "$CHLBD_SOCK")" = 600 ] || return 1
	check "chlbd still alive" kill -0 "$CHLBD_PID"
}

test_corrupt_state_file() {
	local n_now n_prev out
	n_now=$(saved | wc -l)
	ctl backend add 10.0.0.20:80/tcp 10.1.0.9 || return 1
	chlbd_stop TERM
	truncate -s 50 "$CHLBD_STATE"
	chlbd_start xdp-generic || return 1
	check "log says the last good copy was used" grep -q "last good copy" "$CHLBD_LOG" || return 1
	check "started from the previous state, not empty" [ "$(saved | wc -l)" = "$n_now" ] || return 1
	# the bad file is set aside, never kept as the last good copy
	check "the bad file is kept as .bad" [ "$(stat -c %s "$CHLBD_STATE.bad")" = 50 ] || return 1
	check ".prev is still a good copy after the start's write" \
		grep -q "^# chlb-state end: crc32c" "$CHLBD_STATE.prev" || return 1
	rm -f "$CHLBD_STATE.bad"
	chlbd_stop TERM
	truncate -s 50 "$CHLBD_STATE"
	echo "service add 10.0.0.1:80/tcp" >"$CHLBD_STATE.prev"
	out=$(timeout 10 "$CHLBD" -i v0 --netns "$D_NS" -m xdp-generic -s "$CHLBD_SOCK" --pin-dir "$CHLBD_PIN" \
		--state "$CHLBD_STATE" -f 2>&1)
	check "refuses to start without a good copy (exit $?)" [ $? != 0 ] || return 1
	check "says why: $out" grep -q "truncated or corrupt" <<<"$out" || return 1
	n_prev=$n_now
	# put a good state back for the next tests
	ctl_quiet save
	printf 'service add 10.0.0.20:80/tcp\nbackend add 10.0.0.20:80/tcp 10.1.0.2\n' >"$LIB_DIR/good"
	rm -f "$CHLBD_STATE" "$CHLBD_STATE.prev"
	chlbd_start xdp-generic -c "$LIB_DIR/good" || return 1
	check "config file applied at start" [ "$(saved | wc -l)" = 2 ] || return 1
	: "$n_prev"
}

# an empty option value (an unset shell variable in a unit file), or -i IF
# given twice, is a usage error naming the option: "--state ''" was resolved
# to the working directory and "-s ''" failed late with "couldn't listen on ''"
test_empty_option_values() {
	local o out
	for o in -s --state -c --pin-dir --pid-file --netns; do
		out=$("$CHLBD" -i v0 $o "" -f 2>&1)
		check "$o '': exit 2 (got $?): $out" [ $? = 2 ] || return 1
		check "$o '': names the option: $out" grep -qE "^chlbd: --[a-z-]+: empty value$" <<<"$out" || return 1
	done
	out=$("$CHLBD" -i v0 -i v0 -f 2>&1)
	check "-i twice: exit 2 (got $?): $out" [ $? = 2 ] || return 1
	check "-i twice: names it: $out" grep -qx "chlbd: -i v0 given twice" <<<"$out"
}

test_sighup_reloads_config() {
	printf 'service add 10.0.0.20:80/tcp\nbackend add 10.0.0.20:80/tcp 10.1.0.2\nbackend add 10.0.0.20:80/tcp 10.1.0.3\n' >"$LIB_DIR/good"
	kill -HUP "$CHLBD_PID"
	lib_wait_for 5 bash -c "[ \"\$($CHLBCTL -s $CHLBD_SOCK -j backend list | jq '.backends | length')\" = 2 ]"
}

test_bad_config_at_start() {
	local before
	before=$(saved)
	printf 'service add 10.0.0.20:80/tcp\nbackend add 10.0.0.20:80/tcp 10.1.0.2 weight heavy\n' >"$LIB_DIR/good"
	chlbd_stop TERM
	chlbd_start xdp-generic -c "$LIB_DIR/good" || return 1
	check "says nothing from the file was applied" grep -q "'heavy'.*nothing from it applied" "$CHLBD_LOG" || return 1
	check "kept the state it had" [ "$before" = "$(saved)" ]
}

forwards_to_99() { probe which "$CHLBD_PIN" "$D_IFINDEX" 10.0.0.60 80 3 5 | grep -q " 10.1.0.99$"; }

# a backend whose neighbour is unknown gets its next hop once the kernel knows it
test_nexthop_refresh() {
	ctl service add 10.0.0.60:80/tcp && ctl backend add 10.0.0.60:80/tcp 10.1.0.99 || return 1
	if forwards_to_99; then
		diag "forwarded before the neighbour was known"
		return 1
	fi
	ip -n "$D_NS" neigh replace 10.1.0.99 lladdr 02:00:00:00:01:99 dev v0 nud permanent
	check "next hop picked up within 5 s" lib_wait_for 5 forwards_to_99 || return 1
	ctl service del 10.0.0.60:80/tcp
}

# a backend shared by several services leaves in one batch: one swap per service
test_batch_burst() {
	local p before after
	for p in 90 91 92; do
		printf 'service add 10.0.0.40:%s/tcp\nbackend add 10.0.0.40:%s/tcp 10.1.0.2\nbackend add 10.0.0.40:%s/tcp 10.1.0.3\n' \
			$p $p $p
	done | ctl batch -f - || return 1
	before=$(ctl -j service list | jq -c '[.services[] | select(.service | startswith("10.0.0.40")) | .swaps]')
	for p in 90 91 92; do echo "backend del 10.0.0.40:$p/tcp 10.1.0.3"; done | ctl batch -f - || return 1
	after=$(ctl -j service list | jq -c '[.services[] | select(.service | startswith("10.0.0.40")) | .swaps]')
	check "one swap per service ($before -> $after)" \
		[ "$(jq -n "$after | add") " = "$(jq -n "$before | add + 3") " ] || return 1
	printf 'backend del 10.0.0.40:90/tcp 10.1.0.2\nbackend del 10.0.0.40:91/tcp 10.1.0.77\n' >"$LIB_DIR/b"
	if ctl batch -f "$LIB_DIR/b" 2>/dev/null; then
		diag "a batch with one bad line was accepted"
		return 1
	fi
	check "first line not applied" [ "$(ctl -j backend list 10.0.0.40:90/tcp | jq '.backends | length')" = 1 ]
}

test_two_daemons_side_by_side() {
	local ns2=chlb-$LIB_ID-d2 pin2 sock2=$LIB_DIR/pub/d2.sock pid2 rc=0 out
	# the second one's socket is open to group nogroup: reachable by nobody
	mkdir -p "$LIB_DIR/pub" && chmod 711 "$LIB_DIR" && chmod 755 "$LIB_DIR/pub"
	lib_ns_add "$ns2"
	lib_veth "$ns2" v0 v1 || return 1
	lib_pindir d2
	pin2=$LIB_PINDIR
	lib_bg chlbd-d2 "$CHLBD" -i v0 --netns "$ns2" -m xdp-generic -s "$sock2" --pin-dir "$pin2" \
		--state "$LIB_DIR/d2.state" --socket-group nogroup -f
	pid2=$LIB_LASTPID
	lib_wait_for 10 "$CHLBCTL" -s "$sock2" service list >/dev/null || return 1
	check "group socket is 0660 root:nogroup" [ "$(stat -c '%a %G' "$sock2")" = "660 nogroup" ] || rc=1
	check "a member of the group may talk to chlbd" \
		setpriv --reuid=nobody --regid=nogroup --clear-groups "$CHLBCTL" -s "$sock2" service list >/dev/null || rc=1
	out=$(setpriv --reuid=nobody --regid=65533 --clear-groups "$CHLBCTL" -s "$sock2" service list 2>&1)
	check "others may not: $out" grep -qE "Permission denied|permission denied" <<<"$out" || rc=1
	"$CHLBCTL" -s "$sock2" service add 10.9.9.9:80/tcp || rc=1
	check "second daemon has its own state" \
		[ "$("$CHLBCTL" -s "$sock2" -j service list | jq '.services | length')" = 1 ] || rc=1
	if ctl service list 10.9.9.9:80/tcp >/dev/null 2>&1; then
		diag "the first daemon sees the second one's service"
		rc=1
	fi
	check "both programs attached" ip -n "$ns2" link show v0 | grep -q xdpgeneric || rc=1
	"$CHLBCTL" -s "$sock2" shutdown --detach >/dev/null || rc=1
	wait "$pid2"
	check "first daemon unaffected" ctl service list >/dev/null || rc=1
	out=$(timeout 10 "$CHLBD" -i v0 --netns "$ns2" -m xdp-generic -s "$LIB_DIR/d3.sock" \
		--pin-dir "$CHLBD_PIN" --state "$LIB_DIR/d3.state" -f 2>&1)
	check "a second chlbd on the same pin dir refuses: $out" grep -q "in use by another chlbd" <<<"$out" || rc=1
	return $rc
}

# more connections than --ct-size: the LRU evicts, and stats counts every eviction
test_ct_pressure() {
	local j n
	ctl shutdown --detach >/dev/null || return 1
	lib_wait_for 5 bash -c "! kill -0 $CHLBD_PID 2>/dev/null" || return 1
	CHLBD_PID=
	chlbd_start xdp-generic --ct-size 2048 || return 1
	ctl service add 10.0.0.72:80/tcp algo jump && ctl backend add 10.0.0.72:80/tcp 10.1.0.2 &&
		ctl backend add 10.0.0.72:80/tcp 10.1.0.3 || return 1
	probe connect "$CHLBD_PIN" "$D_IFINDEX" 10.0.0.72 80 5000 720 >"$LIB_DIR/p_live" || return 1
	n=$(awk '{ print $1 }' "$LIB_DIR/p_live" | sort -u | wc -l)
	j=$(ctl -j stats) || return 1
	diag "$n connections into 2048 entries: $(jq -c '{ct_size, ct_entries, ct_inserts, ct_evictions}' <<<"$j")"
	check "ct_size is --ct-size" jq -e '.ct_size == 2048' <<<"$j" >/dev/null || return 1
	check "one insert per connection" jq -e ".ct_inserts == $n" <<<"$j" >/dev/null || return 1
	check "table within its size" jq -e '.ct_entries <= 2048 and .ct_entries > 0' <<<"$j" >/dev/null || return 1
	check "evictions = inserts - entries > 0" \
		jq -e '.ct_evictions == .ct_inserts - .ct_entries and .ct_evictions >= '"$((n - 2048))" <<<"$j" >/dev/null || return 1
	check "conns counts what stats counts" \
		[ "$(ctl -j conns | jq .entries)" = "$(jq .ct_entries <<<"$j")" ] || return 1
	ctl service del 10.0.0.72:80/tcp
}

test_shutdown_detach() {
	ctl shutdown --detach || return 1
	for _ in $(seq 50); do kill -0 "$CHLBD_PID" 2>/dev/null || break; sleep 0.1; done
	if kill -0 "$CHLBD_PID" 2>/dev/null; then
		diag "chlbd still running after shutdown"
		return 1
	fi
	CHLBD_PID=
	if ip -n "$D_NS" link show v0 | grep -q xdp; then
		diag "program still attached after shutdown --detach"
		return 1
	fi
	check "maps unpinned" [ -z "$(ls "$CHLBD_PIN" 2>/dev/null)" ]
}

lib_run
