#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# `chlbctl stats` against chlbd and the attached program (chlb-probe feeds
# it packets): rates per reader (two --watch readers and a one-shot one
# interleaved each get their own interval and rates); a backend without a
# route gets its own counter (drop_no_route, per service and backend) and
# one log line, and one when the route is back; --watch prints a frame per
# interval (text and one JSON object a line) and ends on SIGINT; --reset
# zeroes every counter but ct_insert; bad values exit 2; a drained backend
# is "draining" in stats as in backend list; a service new to a freed id
# counts from zero; held entries (sync placeholders) are "held" in which,
# conns and /metrics; with 1,000,000 connection entries and 8 clients
# scraping /metrics in a loop, every `stats` answers within 100 ms.
. "$(dirname "$0")/../lib.sh"
daemon_fixture
CTFILL_BIN=$BUILD/tests/tools/chlb-ctfill
LIB_BIN_VARS+=(CTFILL_BIN)
lib_require_bins "$CTFILL_BIN"
for b in curl python3; do
	command -v $b >/dev/null || die "no $b (make deps installs it: Debian packages curl, python3)"
done

V1=10.0.0.80:80/tcp
V2=10.0.0.81:80/tcp

# traffic_start VIP: SYN bursts through the program until traffic_stop
traffic_start() {
	rm -f "$LIB_DIR/stop_traffic"
	(
		seed=1
		while [ ! -e "$LIB_DIR/stop_traffic" ]; do
			probe which "$CHLBD_PIN" "$D_IFINDEX" "${1%%:*}" 80 50 $((seed++)) >/dev/null
			sleep 0.02
		done
	) &
	TRAFFIC=$!
	LIB_PIDS+=("$TRAFFIC")
}
traffic_stop() {
	touch "$LIB_DIR/stop_traffic"
	wait "$TRAFFIC" 2>/dev/null
}

# bg_watch OUT SECONDS ARGS...: chlbctl ARGS for SECONDS (then SIGINT), stdout
# to OUT, in the background; its pid in $BG
bg_watch() {
	local out=$1 secs=$2
	shift 2
	timeout --preserve-status -s INT "$secs" "$CHLBCTL" -s "$CHLBD_SOCK" "$@" >"$out" 2>&1 &
	BG=$!
	LIB_PIDS+=("$BG")
}

# frames FILE: every frame's [frame, interval_s, packets, pps] of V1's service row
frames() {
	jq -c --arg s "$V1" '[.frame, .interval_s, (.services[] | select(.service == $s) | .packets, .pps)]' "$1"
}

test_setup() {
	chlbd_start xdp-generic --history-ms 200 --grace-ms 100 || return 1
	ctl service add $V1 algo jump && ctl backend add $V1 10.1.0.2 && ctl backend add $V1 10.1.0.3
}

# Two --watch readers (every 1 s and every 0.4 s) and a one-shot reader
# polling in between: each frame's interval is its own reader's, and its
# rate is the packets since that reader's previous frame over that interval.
test_rates_per_reader() {
	local a=$LIB_DIR/watch_a b=$LIB_DIR/watch_b pa pb bad f
	traffic_start $V1
	bg_watch "$a" 4.6 -j stats --watch 1
	pa=$BG
	bg_watch "$b" 4.5 stats --watch 0.4 --json
	pb=$BG
	for _ in $(seq 40); do ctl_quiet stats; sleep 0.1; done # a third reader
	wait "$pa" && wait "$pb" || {
		diag "a --watch reader did not end cleanly on SIGINT"
		return 1
	}
	traffic_stop
	diag "reader A (1 s): $(frames "$a" | tr '\n' ' ')"
	diag "reader B (0.4 s): $(frames "$b" | tr '\n' ' ')"
	check "reader A: 4 frames" [ "$(wc -l <"$a")" = 4 ] || return 1
	check "reader B: 10 or 11 frames" [ "$(wc -l <"$b")" -ge 10 -a "$(wc -l <"$b")" -le 11 ] || return 1
	check "reader A's intervals are its own (1 s)" \
		jq -se 'all(.[]; .interval_s > 0.9 and .interval_s < 1.25)' "$a" >/dev/null || return 1
	check "reader B's intervals are its own (0.4 s)" \
		jq -se 'all(.[]; .interval_s > 0.3 and .interval_s < 0.65)' "$b" >/dev/null || return 1
	for f in "$a" "$b"; do
		# frame k's rate = (packets_k - packets_k-1) / interval_k, for every row that has one
		bad=$(jq -sc --arg s "$V1" '
			[range(1; length) as $k | .[$k - 1] as $p | .[$k] as $c |
			 ($c.services[] | select(.service == $s)) as $r |
			 ($p.services[] | select(.service == $s)) as $q |
			 select((($r.packets - $q.packets) / $c.interval_s - $r.pps) | fabs > 0.01 * ($r.pps + 1)) |
			 [$k, $r.pps, $r.packets - $q.packets, $c.interval_s]]' "$f")
		check "$(basename "$f"): every rate is its own frame's delta over its own interval (bad: $bad)" \
			[ "$bad" = "[]" ] || return 1
		check "$(basename "$f"): traffic seen in every frame" \
			jq -se --arg s "$V1" 'all(.[]; (.services[] | select(.service == $s) | .pps) > 50)' "$f" >/dev/null || return 1
		check "$(basename "$f"): backend rows have rates too" \
			jq -se 'all(.[]; all(.backends[]; has("pps") and has("no_route_per_s")))' "$f" >/dev/null || return 1
	done
	# the one-shot reader: counters and the time they were read, no rates
	check "a one-shot stats has no rates" \
		ctl -j stats | jq -e 'has("time_ns") and (has("interval_s") | not) and all(.services[]; has("pps") | not)' >/dev/null
}

test_no_route() {
	local j before out n
	before=$(ctl -j stats | jq '.global | [.drop_no_route, .error]')
	ctl service add $V2 algo jump && ctl backend add $V2 10.9.9.9 || return 1 # no route in the netns
	sleep 2.5 # two next-hop refresh rounds: still one line
	n=$(grep -c "backend 10.9.9.9: no route to it" "$CHLBD_LOG")
	check "one log line for the backend without a route (got $n)" [ "$n" = 1 ] || return 1
	out=$(probe which "$CHLBD_PIN" "$D_IFINDEX" 10.0.0.81 80 50 811) || return 1
	check "its 50 packets dropped" [ "$(grep -c "verdict=" <<<"$out")" = 50 ] || return 1
	j=$(ctl -j stats) || return 1
	check "backend row: no_route 50, packets 0: $(jq -c '.backends[] | select(.address == "10.9.9.9")' <<<"$j")" \
		jq -e '[.backends[] | select(.address == "10.9.9.9") | [.no_route, .packets]] == [[50, 0]]' <<<"$j" >/dev/null || return 1
	check "service row: no_route 50" \
		jq -e --arg s $V2 '[.services[] | select(.service == $s) | .no_route] == [50]' <<<"$j" >/dev/null || return 1
	check "global drop_no_route +50, error unchanged (before $before)" \
		jq -e --argjson b "$before" '.global | .drop_no_route == $b[0] + 50 and .error == $b[1]' <<<"$j" >/dev/null || return 1
	check "text: the backend's NO_ROUTE column" \
		ctl stats | grep -qE "^  $V2 10\.9\.9\.9 \(slot [0-9]+, live\) +0 +0\.0B +0 +50\$" || return 1
	check "text: drop_no_route among the reasons" ctl stats | grep -qE '^  drop_no_route +[0-9]+' || return 1
	# the route comes back: one line, and the packets go to it
	ip -n "$D_NS" route add 10.9.9.0/24 via 10.1.0.2 || return 1
	check "the route's return is logged" lib_wait_for 5 grep -q "backend 10.9.9.9: route to it again" "$CHLBD_LOG" || return 1
	out=$(probe which "$CHLBD_PIN" "$D_IFINDEX" 10.0.0.81 80 20 812) || return 1
	check "then forwarded to it" [ "$(grep -c " 10.9.9.9\$" <<<"$out")" = 20 ] || return 1
	sleep 1.5
	check "still one no-route line, one recovery line" \
		[ "$(grep -c "backend 10.9.9.9: no route" "$CHLBD_LOG")$(grep -c "backend 10.9.9.9: route to it again" "$CHLBD_LOG")" = 11 ] || return 1
	check "no_route stays 50, packets 20" \
		ctl -j stats | jq -e '[.backends[] | select(.address == "10.9.9.9") | [.no_route, .packets]] == [[50, 20]]' >/dev/null || return 1
	ip -n "$D_NS" route del 10.9.9.0/24
	ctl service del $V2
}

test_watch_frames() {
	local out rc
	out=$(timeout 3.6 "$CHLBCTL" -s "$CHLBD_SOCK" stats --watch 1)
	check "--watch 1 for 3.6 s: 3 frames ($(grep -c '^stats every' <<<"$out"))" \
		[ "$(grep -c '^stats every 1 s, frame [0-9]' <<<"$out")" = 3 ] || return 1
	check "frames numbered 1..3" [ "$(grep -oE 'frame [0-9]+' <<<"$out" | tr '\n' ,)" = "frame 1,frame 2,frame 3," ] || return 1
	# the interval as measured: ~1 s, more when the host is busy (not a timing check)
	check "each frame has its rates ($(grep '^rates' <<<"$out" | tr '\n' ,))" \
		[ "$(grep -cE '^rates over the last [0-9]+\.[0-9]{2} s$' <<<"$out")" = 3 ] || return 1
	check "not a terminal: no screen control" nogrep -q $'\033' <<<"$out" || return 1
	out=$(timeout 2.4 "$CHLBCTL" -s "$CHLBD_SOCK" stats --watch=0.5 -j)
	check "--watch=0.5 --json for 2.4 s: 4 lines, each one JSON object" \
		[ "$(jq -c .frame <<<"$out" | tr '\n' ,)" = "1,2,3,4," ] || return 1
	check "every line names its interval" jq -se 'all(.[]; .every_s == 0.5 and .interval_s > 0.4)' <<<"$out" >/dev/null || return 1
	# Ctrl-C ends it: exit 0
	timeout --preserve-status -s INT 1.5 "$CHLBCTL" -s "$CHLBD_SOCK" stats --watch >/dev/null
	rc=$?
	check "SIGINT ends --watch with exit 0 (got $rc)" [ "$rc" = 0 ] || return 1
	# chlbd going away ends it with chlbd-unreachable
	out=$(timeout 3 "$CHLBCTL" -s "$LIB_DIR/nosuch.sock" stats --watch 2>&1)
	rc=$?
	check "--watch without chlbd: exit 3 ($rc: $out)" [ "$rc" = 3 ] || return 1
}

test_reset() {
	local j ins
	probe connect "$CHLBD_PIN" "$D_IFINDEX" 10.0.0.80 80 40 801 >/dev/null || return 1
	j=$(ctl -j stats) || return 1
	ins=$(jq .ct_inserts <<<"$j")
	check "traffic counted ($(jq -c '[.global.forwarded, .ct_inserts, .ct_entries]' <<<"$j"))" \
		jq -e '.global.forwarded > 0 and .ct_inserts >= 40 and (.services[0].packets > 0)' <<<"$j" >/dev/null || return 1
	j=$(ctl -j stats --reset) || return 1
	check "reset: every reason 0 but ct_insert: $(jq -c '.global | with_entries(select(.value > 0))' <<<"$j")" \
		jq -e --argjson i "$ins" '.global | to_entries | all(.value == (if .key == "ct_insert" then $i else 0 end))' <<<"$j" >/dev/null || return 1
	check "reset: every service and backend row 0" \
		jq -e '[(.services[], .backends[]) | .packets, .bytes, .new_flows, .no_route] | all(. == 0)' <<<"$j" >/dev/null || return 1
	check "reset: ct_inserts kept, evictions still inserts - entries" \
		jq -e --argjson i "$ins" '.ct_inserts == $i and .ct_evictions == .ct_inserts - .ct_entries and .ct_entries > 0' <<<"$j" >/dev/null || return 1
	check "reset counted" jq -e '.resets == 1 and .since_reset_s >= 0' <<<"$j" >/dev/null || return 1
	check "reset logged" grep -q "stats reset: data-plane counters zeroed" "$CHLBD_LOG" || return 1
	check "text says since when" ctl stats | grep -qE '^counters since the last reset, [0-9.]+ s ago' || return 1
	probe which "$CHLBD_PIN" "$D_IFINDEX" 10.0.0.80 80 30 802 >/dev/null || return 1
	check "counting again from zero: 30 packets" \
		ctl -j stats | jq -e --arg s $V1 '[.services[] | select(.service == $s) | .packets] == [30]' >/dev/null || return 1
	# another reader's reset: the frame across it has no rates, the next one has
	traffic_start $V1
	bg_watch "$LIB_DIR/watch_r" 3.6 -j stats --watch 1
	sleep 1.5
	ctl_quiet stats --reset || return 1
	wait "$BG"
	traffic_stop
	check "frames: rates, none across the reset, rates ($(jq -c '[.frame, (.services[0] | has("pps"))]' "$LIB_DIR/watch_r" | tr '\n' ' '))" \
		[ "$(jq -c '.services[0] | has("pps")' "$LIB_DIR/watch_r" | tr '\n' ,)" = "true,false,true," ] || return 1
	check "text --reset answers" ctl stats --reset | grep -q "^counters since the last reset"
}

# args | text the message must contain (every one exits 2, nothing sent)
BAD=(
	"stats --watch 0|'0': not a number of seconds from 0.1 to 86400"
	"stats --watch x|'x': not a number of seconds"
	"stats --watch -1|'-1': not a number of seconds"
	"stats --watch 0.05|'0.05'"
	"stats --watch 1e9|'1e9'"
	"stats --watch=|'': not a number of seconds"
	"stats --watch 1 --watch 2|--watch given twice"
	"stats --frob|unexpected argument '--frob'"
	"stats now|unexpected argument 'now'"
)

test_bad_values() {
	local e args needle out rc
	for e in "${BAD[@]}"; do
		IFS='|' read -r args needle <<<"$e"
		# shellcheck disable=SC2086
		out=$(timeout 3 "$CHLBCTL" -s "$LIB_DIR/nosuch.sock" $args 2>&1)
		rc=$?
		check "'$args' exits 2 without asking chlbd (got $rc: $out)" [ "$rc" = 2 ] || return 1
		check "'$args' says $needle: $out" grep -qF -- "$needle" <<<"$out" || return 1
	done
	out=$(ctl -j stats --watch x)
	check "JSON mode: an error object ($out)" \
		jq -e '.error | test("not a number of seconds")' <<<"$out" >/dev/null || return 1
	out=$(printf 'stats frob\n' | socat -t 2 - "UNIX-CONNECT:$CHLBD_SOCK")
	check "chlbd: 'stats frob' is an error ($out)" jq -e '.error | test("frob")' <<<"$out" >/dev/null
}

# stats' states are backend list's: a drained backend is "draining" in both
test_draining() {
	local s l
	ctl backend set $V1 10.1.0.3 weight 0 || return 1
	s=$(ctl -j stats | jq -r --arg s $V1 '.backends[] | select(.service == $s and .address == "10.1.0.3") | .state')
	l=$(ctl -j backend list $V1 | jq -r '.backends[] | select(.address == "10.1.0.3") | .state')
	check "drained: stats '$s', backend list '$l'" [ "$s" = draining -a "$l" = draining ] || return 1
	check "text: the row says draining" ctl stats | grep -qE "^  $V1 10\.1\.0\.3 \(slot [0-9]+, draining\) " || return 1
	ctl backend set $V1 10.1.0.3 weight 100 || return 1
	s=$(ctl -j stats | jq -r --arg s $V1 '.backends[] | select(.service == $s and .address == "10.1.0.3") | .state')
	check "weight back: live ($s)" [ "$s" = live ]
}

# a service that takes a deleted service's id counts from zero
test_service_id_reuse() {
	local V3=10.0.0.83:80/tcp V4=10.0.0.84:80/tcp id3 id4 j
	ctl service add $V3 algo jump && ctl backend add $V3 10.1.0.5 || return 1
	probe which "$CHLBD_PIN" "$D_IFINDEX" 10.0.0.83 80 25 831 >/dev/null || return 1
	id3=$(ctl -j service list $V3 | jq .services[0].id)
	check "$V3 counted 25" ctl -j stats | jq -e --arg s $V3 '[.services[] | select(.service == $s) | .packets] == [25]' >/dev/null || return 1
	ctl service del $V3 || return 1
	sleep 1 # history and grace (--history-ms 200 --grace-ms 100), then the id is free
	ctl service add $V4 algo jump && ctl backend add $V4 10.1.0.6 || return 1
	id4=$(ctl -j service list $V4 | jq .services[0].id)
	check "$V4 took id $id3 ($id4)" [ "$id3" = "$id4" ] || return 1
	j=$(ctl -j stats)
	check "$V4 counts from zero: $(jq -c --arg s $V4 '.services[] | select(.service == $s)' <<<"$j")" \
		jq -e --arg s $V4 '[.services[] | select(.service == $s) | .packets] == [0]' <<<"$j" >/dev/null || return 1
	ctl service del $V4
}


# ct_metric FILE STATE: V1's chlb_service_conntrack_entries sample for STATE in a scrape
ct_metric() { awk -v k="chlb_service_conntrack_entries{vip=\"$V1\",state=\"$2\"}" '$1 == k { print $2 }' "$1"; }
# scrape_held PORT FILE N: a scrape into FILE shows N held entries of V1
scrape_held() {
	nsenter --net="/var/run/netns/$D_NS" curl -s -m 5 -o "$2" "http://127.0.0.1:$1/metrics" &&
		[ "$(ct_metric "$2" held)" = "$3" ]
}

# Held placeholders (what chlbd writes while it waits for a sync peer's
# entry: CHLB_CONN_F_HELD, slot 0xffff, include/chlb_maps.h), written into
# the pinned table: `which` says held, not stale, and that the flow goes
# nowhere; `conns` counts them in its HELD column and lists them as held;
# /metrics has them as state="held". One past its 120 s is stale in all
# three, as the data plane decides it afresh.
test_held_entries_shown() {
	local mport=9181 j out f=$LIB_DIR/held.txt stale0 got
	chlbd_stop || return 1
	chlbd_start xdp-generic --history-ms 200 --grace-ms 100 --metrics "127.0.0.1:$mport" || return 1
	stale0=$(ctl -j conns $V1 | jq '.services[0].stale') || return 1
	# clients 100.64.0.0:1024-1026 held now, :1027-1028 held 200 s ago
	"$CTFILL_BIN" -H "$CHLBD_PIN/conns" 3 10.0.0.80 80 >/dev/null &&
		"$CTFILL_BIN" -H -i 3 -a 200 "$CHLBD_PIN/conns" 2 10.0.0.80 80 >/dev/null || return 1

	j=$(ctl -j which 100.64.0.0:1024 10.0.0.80:80 tcp) || return 1
	got=$(jq -c '[.conn.slot, .conn.held, .conn.valid, .established, .established_by]' <<<"$j")
	check "which JSON: a held entry goes nowhere: $got" \
		jq -e '.conn.slot == 65535 and .conn.held == true and .conn.valid == false and
			.established == null and (.established_by | startswith("nothing: held"))' <<<"$j" >/dev/null || return 1
	out=$(ctl which 100.64.0.0:1024 10.0.0.80:80 tcp) || return 1
	check "which text says held: $(grep '^conn entry:' <<<"$out")" \
		grep -qE "^conn entry: +placeholder \(slot 65535\) gen 0, held \(waiting for a sync peer's entry" <<<"$out" || return 1
	check "which text: established none" grep -qE "^established: +none, by nothing: held" <<<"$out" || return 1
	check "which text: never stale" nogrep -q stale <<<"$out" || return 1
	got=$(ctl -j which 100.64.0.0:1027 10.0.0.80:80 tcp | jq -c '[.conn.held, .conn.valid, .established.backend != null]')
	check "which: a placeholder past its 120 s is stale, decided afresh: $got" [ "$got" = "[false,false,true]" ] || return 1
	check "which text: that one is stale" \
		ctl which 100.64.0.0:1027 10.0.0.80:80 tcp | grep -qE "^conn entry: .* gen 0, stale$" || return 1

	j=$(ctl -j conns $V1) || return 1
	got=$(jq -c --argjson s0 "$stale0" '[.services[0].held, .services[0].stale - $s0]' <<<"$j")
	check "conns JSON: 3 held, 2 more stale: $got" [ "$got" = "[3,2]" ] || return 1
	got=$(jq -c '[.conns[] | select(.client | startswith("100.64.0.0:")) | [.client, .state, .backend]] | sort' <<<"$j")
	check "conns JSON lists them held / stale, with no backend: $got" [ "$got" = \
		'[["100.64.0.0:1024","held",null],["100.64.0.0:1025","held",null],["100.64.0.0:1026","held",null],["100.64.0.0:1027","stale",null],["100.64.0.0:1028","stale",null]]' ] || return 1
	out=$(ctl conns $V1) || return 1
	check "conns text has a HELD column" \
		grep -qE "^SERVICE / BACKEND +ENTRIES +LIVE +ENDED +STALE +HELD$" <<<"$out" || return 1
	check "conns text: $(grep "^$V1 " <<<"$out") ends in 3 held" \
		grep -qE "^$V1 +[0-9]+ +[0-9]+ +[0-9]+ +$((stale0 + 2)) +3$" <<<"$out" || return 1

	check "/metrics: chlb_service_conntrack_entries{state=\"held\"} 3" \
		lib_wait_for 10 scrape_held $mport "$f" 3 || return 1
	check "/metrics: stale as conns counts it ($(ct_metric "$f" stale))" \
		[ "$(ct_metric "$f" stale)" = "$((stale0 + 2))" ]
}

# A full table (1M entries written from userspace for V1's two backends)
# and 8 clients scraping /metrics back to back: `stats` answers within
# 100 ms every time, over 20 tries spread across more than one background
# pass of the table (5 s apart). A functional bound: before the counts
# came from a background walk, every scrape and every `stats` walked the
# whole table in the event loop (~0.3 s each) and `stats` waited behind
# the scrapes for seconds.
test_stats_fast_with_full_table_scraped() {
	local mport=9180 n=1000000 slots lat max slow i pids=() scrapes
	chlbd_stop || return 1
	chlbd_start xdp-generic --history-ms 200 --grace-ms 100 --ct-size 1048576 \
		--metrics "127.0.0.1:$mport" || return 1
	slots=$(ctl -j backend list $V1 | jq -r '[.backends[] | "\(.slot):\(.gen)"] | join(" ")')
	check "V1 has two backend slots ($slots)" [ "$(wc -w <<<"$slots")" = 2 ] || return 1
	# shellcheck disable=SC2086
	"$CTFILL_BIN" -t "$CHLBD_PIN/conns" $n 10.0.0.80 80 $slots | sed 's/^/# filled: /' || return 1
	check "stats counts the filled table (background pass)" \
		lib_wait_for 15 bash -c "'$CHLBCTL' -s '$CHLBD_SOCK' -j stats | jq -e '.ct_entries >= 900000' >/dev/null" || return 1
	# 8 scrapers, each one curl fetching /metrics back to back (its URL
	# glob: the query string is ignored), a status line per scrape; niced:
	# they stand for clients on other hosts, not for load on this one.
	# Line-buffered: a scraper killed at the end keeps its status lines
	# (block-buffered, ~1,000 of them waited in curl's buffer and a loaded
	# host counted 0 scrapes)
	for i in $(seq 8); do
		timeout 30 nice -n 19 nsenter --net="/var/run/netns/$D_NS" stdbuf -oL curl -s -m 5 -o /dev/null \
			-w '%{http_code}\n' "http://127.0.0.1:$mport/metrics?n=[1-1000000]" \
			>"$LIB_DIR/scrapes.$i" 2>/dev/null &
		pids+=($!)
		LIB_PIDS+=($!)
	done
	sleep 0.5
	lat=$(stats_latencies "$CHLBD_SOCK" 20 0.3)
	kill "${pids[@]}" 2>/dev/null
	wait "${pids[@]}" 2>/dev/null
	scrapes=$(cat "$LIB_DIR"/scrapes.* | grep -c '^200$')
	diag "stats latency (ms) under $scrapes scrapes: $(awk '{ printf "%s ", $1 }' <<<"$lat")"
	max=$(awk '$1 > m { m = $1 } END { print m + 0 }' <<<"$lat")
	slow=$(awk '$1 >= 100 { n++ } END { print n + 0 }' <<<"$lat")
	check "20 stats answered, each with the table's entries" \
		[ "$(grep -c ' True$' <<<"$lat")" = 20 ] || return 1
	check "every stats answered within 100 ms (max $max ms, $slow slower)" [ "$slow" = 0 ] || return 1
	check "the scrapers were served (200s: $scrapes, at least 200)" [ "$scrapes" -ge 200 ] || return 1
	# what the scrapes served: the full table, counted by a pass a few seconds old at most
	nsenter --net="/var/run/netns/$D_NS" curl -s -m 5 -o "$LIB_DIR/full.txt" "http://127.0.0.1:$mport/metrics" || return 1
	check "a scrape shows the table ($(grep '^chlb_conntrack_entries ' "$LIB_DIR/full.txt"))" \
		awk '$1 == "chlb_conntrack_entries" && $2 >= 900000 { ok = 1 } END { exit !ok }' "$LIB_DIR/full.txt" || return 1
	check "and its age ($(grep '^chlb_conntrack_tally_age_seconds ' "$LIB_DIR/full.txt"))" \
		awk '$1 == "chlb_conntrack_tally_age_seconds" && $2 < 12 { ok = 1 } END { exit !ok }' "$LIB_DIR/full.txt"
}

test_teardown() {
	ctl shutdown --detach >/dev/null
	lib_wait_for 5 bash -c "! kill -0 $CHLBD_PID 2>/dev/null" || return 1
	CHLBD_PID=
}

lib_run
