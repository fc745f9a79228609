#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# Health checks, end to end: chlbd probes real servers in the
# backend namespaces (chlb-echo on port 80 for client traffic, socat on the
# check port) over non-blocking sockets in its event loop, and the table
# follows through normal swaps:
#   1. tcp: a backend whose check port stops listening goes down within
#      interval x fall (+ one interval), gets no new flows, and `backend
#      list` says why; back up after rise (maglev, and jump: its buckets);
#   2. on-down keep: its held (idle) connections keep their entries and
#      their backend; on-down reset: they are decided again (reset by the
#      backend the table picks now), but not those of a backend that went
#      down in panic and came back up, when it is drained later;
#   3. http: 500 is down, 200 up, a 4-digit status is not a status line, a
#      server that accepts and never answers times out;
#   4. slow start: a backend coming back ramps its effective weight in
#      steps, and new flows follow (roughly); turning it on ramps no backend
#      that already serves;
#   5. panic: 3 of 4 down with panic 50: health ignored (every backend
#      serves), counted (metrics, promtool-clean) and logged; panic 0 with
#      every backend down: no new flow served, the SYNs counted as
#      drop_no_backend, logged (and panic 50 then logged as panic, not as a
#      backend up);
#   6. a check settings change restarts the probes without a swap; a
#      chlbd restart serves every backend (unknown) until probes decide;
#   7. via vip (the TC egress steering, a route to the VIP on the LB): a
#      backend without the VIP on lo (l2dsr) or without decap (ipip) fails
#      it and passes via direct; via auto without that route, or with a
#      check port that is not the VIP's, probes directly and says why;
#   8. 200 backends, 100 of them black-holing the probes: every control
#      request answered within 50 ms (the max printed), chlbd's CPU printed.
# Intervals are 200 ms so the suite stays short.
. "$(dirname "$0")/../lib.sh"

lib_require_e2e
command -v socat >/dev/null || die "needs socat (the check-port servers)"
command -v python3 >/dev/null || die "needs python3 (timing control requests)"
command -v promtool >/dev/null || die "needs promtool (the metrics' format)"

IV=200    # check interval, ms
TMO=150   # check timeout, ms
CKPORT=8080

topo_build 4
MPORT=9181 # chlbd's metrics port, inside the LB namespace
chlbd_start xdp --history-ms 300 --metrics "127.0.0.1:$MPORT" || die "chlbd did not start"
VIP=$(vip_spec 4)

# ---- check-port servers (socat in backend I's namespace) ----
# ck_start I MODE: MODE tcp (accepts), 200 / 500 (an HTTP answer), hang
# (accepts, reads, never answers) on $CKPORT. The pid in CK_PID[I].
declare -A CK_PID
ck_start() {
	local i=$1 what
	case $2 in
	tcp) what="SYSTEM:true" ;;
	hang) what="SYSTEM:cat>/dev/null" ;;
	*)
		# a script (socat's address syntax takes ':' and ',' for its own),
		# written once: other backends' servers may be running it
		[ -f "$LIB_DIR/http-$2.sh" ] ||
			printf 'printf "HTTP/1.0 %s X\\r\\nContent-Length: 0\\r\\n\\r\\n"\n' "$2" \
				>"$LIB_DIR/http-$2.sh"
		what="SYSTEM:sh $LIB_DIR/http-$2.sh"
		;;
	esac
	ck_stop "$i"
	lib_bg "ck-b$i" ip netns exec "$(ns_b "$i")" socat "TCP-LISTEN:$CKPORT,fork,reuseaddr" "$what"
	CK_PID[$i]=$LIB_LASTPID
	lib_wait_for 5 tcp_probe "$NS_LB" "$(be_addr4 "$i")" "$CKPORT" || die "socat on b$i"
}
ck_stop() {
	[ -n "${CK_PID[$1]:-}" ] || return 0
	lib_stop "${CK_PID[$1]}"
	CK_PID[$1]=
}

# ---- what chlbd says ----
# be_field I FIELD: backend I's FIELD in `backend list --json`.
be_field() {
	ctl -j backend list "$VIP" |
		jq -r --arg a "$(be_addr4 "$1")" --arg f "$2" '.backends[] | select(.address == $a) | .[$f]'
}
health_is() { [ "$(be_field "$1" health)" = "$2" ]; }
all_health() {
	local i
	for i in "${@:2}"; do health_is "$i" "$1" || return 1; done
}
text_says_down() {
	ctl backend list "$VIP" | grep -A1 " $(be_addr4 "$1") " | grep -q "^    health down, .*fall 2"
}
last_has() { be_field "$1" last | grep -qF "$2"; }
eff_is() { [ "$(be_field "$1" effective_weight)" = "$2" ]; }
min_eff_is() { [ "$(ctl -j backend list "$VIP" | jq '[.backends[].effective_weight] | min')" = "$1" ]; }
scrape() { ip netns exec "$NS_LB" curl -sf "http://127.0.0.1:$MPORT/metrics"; }
promtool_ok() {
	local out
	out=$(promtool check metrics <"$1" 2>&1) && [ -z "$out" ] && return 0
	diag "promtool: $out"
	return 1
}
now_ms() { echo $(($(date +%s%N) / 1000000)); }

# flows N: N new connections to the VIP; "bI COUNT" lines.
flows() { client once -t "$VIP4" -n "$1" -k 16 -q | awk '/^backend /{ print $2, $3 }'; }
share_of() { awk -v b="$1" '$1 == b { print $2 }' <<<"$2" | grep . || echo 0; }

# setup ALGO CHECK...: the service on backends 1-4, every check port
# answering, with `service set VIP CHECK...`; waits until all are up.
setup() {
	local algo=$1 i
	shift
	for i in 1 2 3 4; do ck_start "$i" "${CK_MODE:-tcp}"; done
	svc_setup 4 "$algo" l2dsr "1 2 3 4" || return 1
	ctl service set "$VIP" check "$@" >/dev/null || return 1
	check "every backend up" lib_wait_for 5 all_health up 1 2 3 4 || {
		ctl backend list "$VIP" | sed "s/^/#   /"
		return 1
	}
}

tcp_check() { echo tcp port $CKPORT interval $IV timeout $TMO rise 2 fall 2; }

# tcp_down_then_up ALGO
tcp_down_then_up() {
	local t0 t1 f reason n0 m0 c0
	# shellcheck disable=SC2046
	setup "$1" $(tcp_check) || return 1
	check "probes counted" [ "$(be_field 2 probes)" -gt 0 ] || return 1
	n0=$(grep -c 'backend 10.0.2.12: up -> down' "$CHLBD_LOG")
	saved >"$LIB_DIR/saved.before"
	m0=$(stat -c %.9Y "$CHLBD_STATE")
	c0=$(grep -c 'committed: ' "$CHLBD_LOG")
	t0=$(now_ms)
	ck_stop 2
	lib_wait_for 5 health_is 2 down || { diag "b2 never went down"; return 1; }
	# when chlbd decided (its own clock: since_ms ago), not when the poll saw it
	t1=$(($(now_ms) - $(be_field 2 since_ms)))
	reason=$(be_field 2 reason)
	diag "down $((t1 - t0)) ms after the server stopped (interval $IV x fall 2 + one interval = $((IV * 3)) ms, +-10% jitter); reason: $reason"
	check "down within interval x fall + one interval" [ $((t1 - t0)) -le $((IV * 3 * 11 / 10 + 20)) ] ||
		return 1
	check "backend list says why" grep -q "fall 2.*refused" <<<"$reason" || return 1
	ctl backend list "$VIP" | grep -A1 " $(be_addr4 2) " | sed 's/^/#   /'
	check "text backend list: b2's health line says down and why" text_says_down 2 || return 1
	check "effective weight 0" [ "$(be_field 2 effective_weight)" = 0 ] || return 1
	check "the state file was not written (health is runtime state)" \
		[ "$(stat -c %.9Y "$CHLBD_STATE")" = "$m0" ] || return 1
	check "nor staged: no commit, no fsync (commit.c logs 'committed:' for each)" \
		[ "$(grep -c 'committed: ' "$CHLBD_LOG")" = "$c0" ] || return 1
	check "save says what it said before (weight 100, the same bucket order)" \
		cmp -s "$LIB_DIR/saved.before" <(saved) || return 1
	diag "swap after the deciding result (chlbd's log): $(grep -o 'applied [0-9.]* ms after' "$CHLBD_LOG" | tail -1)"
	check "transition logged once" \
		[ "$(grep -c 'backend 10.0.2.12: up -> down' "$CHLBD_LOG")" = $((n0 + 1)) ] ||
		return 1
	f=$(flows 400)
	diag "new flows while b2 is down: $(tr '\n' ' ' <<<"$f")"
	check "no new flow reaches b2" [ "$(share_of b2 "$f")" = 0 ] || return 1
	check "the others serve all of them" [ "$(awk '{ n += $2 } END { print n }' <<<"$f")" = 400 ] ||
		return 1
	ck_start 2 tcp
	check "up after rise" lib_wait_for 5 health_is 2 up || return 1
	check "full weight again" [ "$(be_field 2 effective_weight)" = 100 ] || return 1
	f=$(flows 400)
	check "b2 serves new flows again ($(share_of b2 "$f") of 400)" [ "$(share_of b2 "$f")" -gt 40 ]
}
test_tcp_down_then_up() { tcp_down_then_up maglev; }
# picks FILE: the backend the current table names for 100 client flows, a line each.
picks() {
	local p
	for p in $(seq 20000 20099); do ctl -j which "$CLIENT4:$p" "$VIP4:80" tcp; done |
		jq -r '.tables[0].decision.backend // "none"' >"$1"
}

# jump: a down backend's buckets become tombstones (only its flows move) and
# come back at the same places (every flow goes where it went before)
test_tcp_down_then_up_jump() {
	local moved back
	# shellcheck disable=SC2046
	setup jump $(tcp_check) || return 1
	picks "$LIB_DIR/p0"
	check "the 100 flows spread over the 4 backends, b2 among them" \
		[ "$(sort -u "$LIB_DIR/p0" | grep -c '^10\.0\.2\.')" = 4 ] || return 1
	ck_stop 2
	lib_wait_for 5 health_is 2 down || return 1
	picks "$LIB_DIR/p1"
	moved=$(paste "$LIB_DIR/p0" "$LIB_DIR/p1" | awk -v b="$(be_addr4 2)" '$1 != $2 && $1 != b' | wc -l)
	check "b2 down: only b2's flows moved ($moved others did)" [ "$moved" = 0 ] || return 1
	check "b2 down: none of the 100 goes to b2" nogrep -qx "$(be_addr4 2)" "$LIB_DIR/p1" || return 1
	ck_start 2 tcp
	lib_wait_for 5 health_is 2 up || return 1
	lib_wait_for 2 eff_is 2 100 || return 1
	picks "$LIB_DIR/p2"
	back=$(paste "$LIB_DIR/p0" "$LIB_DIR/p2" | awk '$1 != $2' | wc -l)
	check "b2 up again: every flow goes where it went before ($back differ)" [ "$back" = 0 ] ||
		return 1
	tcp_down_then_up jump
}

# A restart: what the checks decided is runtime state. The new chlbd serves
# every backend (unknown) until its probes decide again; nothing drains.
test_restart_serves_until_decided() {
	# slower probes: the first decision comes >= 1 s after the start
	setup maglev tcp port $CKPORT interval 500 timeout 300 rise 2 fall 3 || return 1
	ck_stop 2
	lib_wait_for 5 health_is 2 down || return 1
	check "the state file has the configured weight" grep -q "$(be_addr4 2) weight 100" <<<"$(saved)" ||
		return 1
	chlbd_stop TERM
	chlbd_start xdp --history-ms 300 --metrics "127.0.0.1:$MPORT" || return 1
	check "after the restart b2 serves (unknown, weight 100) until probed" \
		[ "$(be_field 2 effective_weight)" = 100 ] || return 1
	check "then it is down again" lib_wait_for 5 health_is 2 down || return 1
	check "and out of the table" lib_wait_for 2 eff_is 2 0 || return 1
	check "the others were never down" all_health up 1 3 4
}

# on_down MODE: 120 held connections; b2's check fails (its echo server
# and connections live on); then one more exchange on each.
on_down() {
	local mode=$1 mine n fails
	# shellcheck disable=SC2046
	setup maglev $(tcp_check) || return 1
	ctl service set "$VIP" on-down "$mode" >/dev/null || return 1
	hold_start "held_$mode" 4 120 || return 1
	mine=$(awk '$1 == "conn" && $4 == "b2" { n++ } END { print n + 0 }' "$LIB_DIR/held_$mode.r0")
	check "some held connections are on b2 ($mine)" [ "$mine" -gt 5 ] || return 1
	ck_stop 2
	lib_wait_for 5 health_is 2 down || return 1
	sleep 0.5 # past the history window (--history-ms 300): only entries keep them
	hold_round "held_$mode" || return 1
	n=$(summary_field "$HOLD_LAST" ok)
	fails=$(summary_field "$HOLD_LAST" fail)
	diag "on-down $mode: $mine of 120 on b2; after down: $n answered, $fails failed, $(summary_field "$HOLD_LAST" moved) moved"
	hold_stop "held_$mode"
	ck_start 2 tcp
	if [ "$mode" = keep ]; then
		check "keep: every held connection answered by its backend" round_intact 120
	else
		check "reset: b2's connections are decided again (reset), the others intact" \
			[ "$fails" = "$mine" ] && [ "$n" = $((120 - mine)) ]
	fi
}
test_on_down_keep() { on_down keep; }
test_on_down_reset() { on_down reset; }

# on-down reset resets a down backend's connections once it is out of the
# table; one that went down in panic (kept serving) and came back up has
# nothing left to reset: a later drain (weight 0) of it must keep its
# connections (its generation stays), as every drain does.
test_on_down_reset_not_on_a_later_drain() {
	local g0 n0
	# shellcheck disable=SC2046
	setup maglev $(tcp_check) || return 1
	# panic 100: any backend down is panic, so b2 goes down without leaving the table
	ctl service set "$VIP" on-down reset panic 100 >/dev/null || return 1
	g0=$(be_field 2 gen)
	ck_stop 2
	lib_wait_for 5 health_is 2 down || return 1
	check "down in panic: still at full weight" [ "$(be_field 2 effective_weight)" = 100 ] ||
		return 1
	check "down in panic: its generation is not bumped" [ "$(be_field 2 gen)" = "$g0" ] || return 1
	ck_start 2 tcp
	lib_wait_for 5 health_is 2 up || return 1
	n0=$(grep -c "backend $(be_addr4 2): on-down reset" "$CHLBD_LOG")
	ctl backend set "$VIP" "$(be_addr4 2)" weight 0 >/dev/null || return 1
	lib_wait_for 2 eff_is 2 0 || return 1
	sleep 0.3 # an overlay swap (and a wrong reset) would come within a tick
	check "a drain of the healthy backend keeps its generation ($g0 -> $(be_field 2 gen))" \
		[ "$(be_field 2 gen)" = "$g0" ] || return 1
	check "and logs no on-down reset" \
		[ "$(grep -c "backend $(be_addr4 2): on-down reset" "$CHLBD_LOG")" = "$n0" ]
}

test_http_statuses_and_timeout() {
	CK_MODE=200 setup maglev http port $CKPORT path /healthz interval $IV timeout $TMO rise 2 fall 2 ||
		return 1
	# "up" was seen (in CI) before the last result named an HTTP status: wait for a probe that does
	check "last result names the status" lib_wait_for 2 last_has 1 "HTTP 200" || {
		diag "b1's last result: '$(be_field 1 last)'"
		return 1
	}
	ck_start 2 500
	lib_wait_for 5 health_is 2 down || { diag "500 never went down"; return 1; }
	# (a probe that met the server being replaced may say something else: wait for the next)
	check "500 is down, and says so" lib_wait_for 2 last_has 2 "HTTP 500 (expect 200-399)" || return 1
	diag "500: $(be_field 2 last)"
	# a status code is 3 digits: "2000" is not a 200
	ck_start 2 2000
	check "HTTP/1.0 2000 is not a status line" \
		lib_wait_for 2 last_has 2 "not an HTTP status line: 'HTTP/1.0 2000" || return 1
	ck_start 2 200
	check "200 is up" lib_wait_for 5 health_is 2 up || return 1
	ck_start 3 hang
	lib_wait_for 5 health_is 3 down || { diag "a silent server never went down"; return 1; }
	check "it hit the timeout" lib_wait_for 2 last_has 3 "timeout after $TMO ms (no status line)" ||
		return 1
	diag "accept, never answer: $(be_field 3 last)"
}

# sim_share W...: "LO HI", the keyspace share of the second backend when
# backends 1-4 have weights W (chlbctl sim: balance relative to weight).
sim_share2() {
	local names j total=0 w
	names="$(be_addr4 1),$(be_addr4 2),$(be_addr4 3),$(be_addr4 4)"
	for w in "$@"; do total=$((total + w)); done
	j=$("$CHLBCTL" sim --algo maglev --backends 4 --weights "$(IFS=,; echo "$*")" --names "$names" \
		--flows 10000 --samples 1000 --json) || return 1
	jq -r --argjson w "$2" --argjson t "$total" '"\($w / $t * .balance_min) \($w / $t * .balance_max)"' <<<"$j"
}

test_slow_start_ramps() {
	local w seen="" f="" prev=0 ok=1 shares
	# shellcheck disable=SC2046
	setup maglev $(tcp_check) || return 1
	ctl service set "$VIP" slow-start 8 >/dev/null || return 1
	ck_stop 2
	lib_wait_for 5 health_is 2 down || return 1
	ck_start 2 tcp
	lib_wait_for 5 health_is 2 up || return 1
	# the ramp: 20 40 60 80 then 100, a step every 2 s
	for _ in $(seq 120); do
		w=$(be_field 2 effective_weight)
		case " $seen " in *" $w "*) ;; *) seen="$seen $w" ;; esac
		if [ "$w" = 40 ] && [ -z "$f" ]; then
			f=$(flows 600)
			w=$(be_field 2 effective_weight) # still the step the flows saw?
			[ "$w" = 40 ] || f=""
		fi
		[ "$w" = 100 ] && break
		sleep 0.1
	done
	diag "effective weights seen: $seen"
	for w in $seen; do [ "$w" -ge "$prev" ] || ok=0; prev=$w; done
	check "the weight only grew" [ $ok = 1 ] || return 1
	check "at least 3 steps below 100, then 100" \
		[ "$(wc -w <<<"$seen")" -ge 4 ] && [ "$prev" = 100 ] || return 1
	check "600 new flows measured within the step at 40" [ -n "$f" ] || return 1
	shares=$(sim_share2 100 40 100 100) || return 1
	diag "new flows at effective weight 40: $(tr '\n' ' ' <<<"$f"); chlbctl sim: b2's share $shares"
	# shellcheck disable=SC2086
	check "b2's share of new flows is what sim predicts for weights 100,40,100,100" \
		within_share "$(share_of b2 "$f")" 600 $shares || return 1
	# a backend added to the running service ramps too
	ctl service set "$VIP" slow-start 2 >/dev/null || return 1
	ctl backend del "$VIP" "$(be_addr4 4)" >/dev/null || return 1
	ctl backend add "$VIP" "$(be_addr4 4)" weight 100 >/dev/null || return 1
	w=$(be_field 4 effective_weight)
	check "an added backend starts at 1/5 of its weight ($w)" [ "$w" = 20 ] || return 1
	check "and reaches its weight" lib_wait_for 4 eff_is 4 100
}

# slow start turned on for a running service ramps no backend that already
# serves: b1 (unchecked) gets a checker only now, and must keep its weight
# rather than drop to 1/5 beside the backends checked before.
test_slow_start_on_spares_serving_backends() {
	# shellcheck disable=SC2046
	setup maglev $(tcp_check) || return 1
	ctl backend set "$VIP" "$(be_addr4 1)" check none >/dev/null || return 1
	ctl service set "$VIP" slow-start 8 >/dev/null || return 1
	sleep 0.3 # a ramp's first step would be applied within a tick
	check "b1, serving before, keeps its weight ($(be_field 1 effective_weight))" eff_is 1 100 ||
		return 1
	check "every backend at full weight" min_eff_is 100
}

test_panic() {
	local f
	# shellcheck disable=SC2046
	setup maglev $(tcp_check) || return 1
	ctl service set "$VIP" panic 50 >/dev/null || return 1
	ck_stop 2
	ck_stop 3
	lib_wait_for 5 all_health down 2 3 || return 1
	check "2 of 4 up is not panic: both out" [ "$(be_field 2 effective_weight)" = 0 ] || return 1
	ck_stop 4
	lib_wait_for 5 all_health down 2 3 4 || return 1
	check "panic: every backend back at full weight" lib_wait_for 2 min_eff_is 100 || return 1
	f=$(flows 400)
	diag "new flows in panic: $(tr '\n' ' ' <<<"$f")"
	check "all four serve in panic" [ "$(wc -l <<<"$f")" = 4 ] || return 1
	check "panic logged" grep -q "panic: 1 of 4 backends up" "$CHLBD_LOG" || return 1
	check "backend list says panic" [ "$(be_field 1 panic)" = true ] || return 1
	scrape >"$LIB_DIR/panic.prom" || return 1
	check "panic counted in the metrics" grep -q "^chlb_service_health_panics_total{vip=\"$VIP\"} 1$" \
		"$LIB_DIR/panic.prom" || return 1
	check "b2's health gauge says down" grep -q \
		"^chlb_backend_health{vip=\"$VIP\",backend=\"$(be_addr4 2)\",state=\"down\"} 1$" \
		"$LIB_DIR/panic.prom" || return 1
	check "promtool check metrics: no findings" promtool_ok "$LIB_DIR/panic.prom" || return 1
	ck_start 3 tcp
	ck_start 4 tcp
	check "panic over once 3 of 4 are up" lib_wait_for 5 all_health up 3 4 || return 1
	check "b2 still down, out of the table" lib_wait_for 2 eff_is 2 0
}

no_backend_drops() { ctl -j stats | jq '.global.drop_no_backend // .global.reasons.drop_no_backend // 0'; }

test_panic_0_all_down() {
	local d0 d1 ok l0
	# shellcheck disable=SC2046
	setup maglev $(tcp_check) || return 1
	ctl service set "$VIP" panic 0 >/dev/null || return 1
	for i in 1 2 3 4; do ck_stop "$i"; done
	lib_wait_for 5 all_health down 1 2 3 4 || return 1
	check "every effective weight 0" lib_wait_for 2 min_eff_is 0 || return 1
	d0=$(no_backend_drops)
	ok=$(client once -t "$VIP4" -n 4 -k 4 -T 300 -q | awk '/^summary /{ for (i = 2; i < NF; i++) if ($i == "ok") print $(i + 1) }')
	d1=$(no_backend_drops)
	diag "panic 0, every backend down: ${ok:-0} of 4 new connections answered, drop_no_backend +$((d1 - d0))"
	check "no new flow is served" [ "${ok:-0}" = 0 ] || return 1
	check "the SYNs are dropped and counted" [ "$d1" -gt "$d0" ] || return 1
	check "logged" grep -q "every backend is down and panic is 0" "$CHLBD_LOG" || return 1
	check "not panic" [ "$(be_field 1 panic)" != true ] || return 1
	# still every backend down: panic now serves them all, no backend came up
	l0=$(wc -l <"$CHLBD_LOG")
	ctl service set "$VIP" panic 50 >/dev/null || return 1
	since_l0() { tail -n +"$((l0 + 1))" "$CHLBD_LOG" | grep -q "$1"; }
	check "panic 50 with every backend down: logged as panic, not as a backend up" \
		lib_wait_for 2 since_l0 "no longer every backend down: panic serves them all" || return 1
	if since_l0 "a backend is up again"; then
		diag "check failed: logged 'a backend is up again' while every backend is down"
		return 1
	fi
	# checks off: the panic is over (not left standing, to go unlogged and
	# uncounted when checks come back)
	ctl service set "$VIP" check none >/dev/null || return 1
	check "check none ends the panic, logged" \
		lib_wait_for 2 since_l0 "no checks: panic over, every backend serves"
}

# IPv6: an http check on the service's own port (chlb-echo answers GET),
# the Host header in brackets; a stopped server goes down.
test_ipv6_http_on_the_service_port() {
	local vip6
	vip6=$(vip_spec 6)
	svc_setup 6 maglev l2dsr "1 2 3 4" || return 1
	ctl service set "$vip6" check http path /health interval $IV timeout $TMO rise 2 fall 2 \
		>/dev/null || return 1
	f6() { ctl -j backend list "$vip6" | jq -r --arg a "$(be_addr6 "$1")" --arg f "$2" \
		'.backends[] | select(.address == $a) | .[$f]'; }
	up6() { for i in 1 2 3 4; do [ "$(f6 "$i" health)" = up ] || return 1; done; }
	check "every IPv6 backend up (http on port 80)" lib_wait_for 5 up6 || {
		ctl backend list "$vip6" | sed "s/^/#   /"
		return 1
	}
	diag "IPv6 http: $(f6 1 last)"
	for p in $(ip netns pids "$(ns_b 2)"); do
		[ "$(cat "/proc/$p/comm" 2>/dev/null)" = chlb-echo ] && kill "$p"
	done
	down6() { [ "$(f6 2 health)" = down ]; }
	check "a stopped server is down" lib_wait_for 5 down6 || return 1
	diag "IPv6, server stopped: $(f6 2 last)"
	echo_start 2
	lib_wait_for 5 tcp_probe "$NS_LB" "$(be_addr4 2)" 80 || return 1
	ctl service del "$vip6" >/dev/null
}

test_check_change_no_swap() {
	local swaps p
	# shellcheck disable=SC2046
	setup maglev $(tcp_check) || return 1
	swaps=$(ctl -j service list "$VIP" | jq '.services[0].swaps')
	ctl service set "$VIP" check tcp port $CKPORT interval 300 timeout 200 rise 3 fall 3 >/dev/null ||
		return 1
	check "restart logged" grep -q "probes restart" "$CHLBD_LOG" || return 1
	p=$(be_field 1 probes)
	sleep 1
	check "still probing ($p -> $(be_field 1 probes))" [ "$(be_field 1 probes)" -gt "$p" ] || return 1
	check "no swap for a check change" \
		[ "$(ctl -j service list "$VIP" | jq '.services[0].swaps')" = "$swaps" ]
}

via_why_route() { be_field "$1" via_why | grep -qi "route"; }
via_why_port() { [ "$(be_field "$1" via)" = direct ] && be_field "$1" via_why | grep -q "check port $CKPORT"; }
steered() { ctl -j stats | jq '.global.probe_steered // .global.reasons.probe_steered // 0'; }

test_via_vip_needs_the_vip_on_lo() {
	local s0 s1
	for i in 1 2 3 4; do ck_stop "$i"; done
	svc_setup 4 maglev l2dsr "1 2 3 4" || return 1
	# the LB host's route to the VIP: out of chlbd's interface, where the steering program is
	ip -n "$NS_LB" route add "$VIP4/32" via "$CLIENT4" dev eth0 || return 1
	s0=$(steered)
	ctl service set "$VIP" check tcp interval $IV timeout $TMO rise 2 fall 2 via vip >/dev/null ||
		return 1
	check "every backend up via vip" lib_wait_for 5 all_health up 1 2 3 4 || {
		ctl backend list "$VIP" | sed "s/^/#   /"
		return 1
	}
	s1=$(steered)
	diag "probes steered by the TC egress program: $((s1 - s0))"
	check "backend list says vip" [ "$(be_field 1 via)" = vip ] || return 1
	check "the probes went through the steering program" [ "$s1" -gt "$s0" ] || return 1
	# via auto with a check port that is not the VIP's: direct, and via_why says why
	ck_start 3 tcp
	ctl backend set "$VIP" "$(be_addr4 3)" port $CKPORT via auto >/dev/null || return 1
	check "via auto, check port $CKPORT: direct, via_why names the port" \
		lib_wait_for 3 via_why_port 3 || return 1
	diag "via auto, check port $CKPORT: $(be_field 3 via_why)"
	check "and it passes" health_is 3 up || return 1
	ctl backend set "$VIP" "$(be_addr4 3)" port 80 >/dev/null || return 1
	ck_stop 3
	ip -n "$(ns_b 2)" addr del "$VIP4/32" dev lo
	lib_wait_for 5 health_is 2 down || { diag "b2 without the VIP on lo stayed up"; return 1; }
	diag "b2 without the VIP on lo, via vip: $(be_field 2 last)"
	check "the others stay up" all_health up 1 3 4 || return 1
	ctl backend set "$VIP" "$(be_addr4 2)" via direct >/dev/null || return 1
	check "via direct it passes" lib_wait_for 5 health_is 2 up || return 1
	check "and backend list says direct" [ "$(be_field 2 via)" = direct ] || return 1
	ip -n "$(ns_b 2)" addr add "$VIP4/32" dev lo
	ip -n "$NS_LB" route del "$VIP4/32"
	ctl service set "$VIP" via auto >/dev/null || return 1
	ctl backend set "$VIP" "$(be_addr4 2)" via auto >/dev/null || return 1
	check "via auto without a route to the VIP: direct, and why" lib_wait_for 7 via_why_route 1 ||
		return 1
	diag "via auto, no route: $(be_field 1 via_why)"
	check "and every backend stays up" all_health up 1 2 3 4 || return 1
	# via vip without a route: down, says vip (not the direct it never took), and why in full
	ctl backend set "$VIP" "$(be_addr4 1)" via vip >/dev/null || return 1
	check "via vip without a route: down" lib_wait_for 5 health_is 1 down || return 1
	diag "via vip, no route: $(be_field 1 reason)"
	check "backend list says vip" [ "$(be_field 1 via)" = vip ] || return 1
	check "the reason is whole (ends with the errno's text)" \
		grep -qE "Network is unreachable\)?\$" <<<"$(be_field 1 reason)" || return 1
	ctl backend set "$VIP" "$(be_addr4 1)" via auto >/dev/null
}

# ipip: a backend without decapsulation fails via vip (the probe arrives
# encapsulated, as a client's would) and passes via direct.
test_via_vip_ipip_needs_decap() {
	for i in 1 2 3 4; do ck_stop "$i"; done
	svc_setup 4 maglev ipip "1 2 3 4" || return 1
	ip -n "$NS_LB" route add "$VIP4/32" via "$CLIENT4" dev eth0 || return 1
	ctl service set "$VIP" check tcp interval $IV timeout $TMO rise 2 fall 2 via vip >/dev/null ||
		return 1
	check "every backend up via vip (ipip)" lib_wait_for 5 all_health up 1 2 3 4 || return 1
	topo_decap detach 2 || return 1
	lib_wait_for 5 health_is 2 down || { diag "b2 without decap stayed up"; return 1; }
	diag "b2 without decap, via vip: $(be_field 2 last)"
	check "the others stay up" all_health up 1 3 4 || return 1
	ctl backend set "$VIP" "$(be_addr4 2)" via direct >/dev/null || return 1
	check "via direct it passes" lib_wait_for 5 health_is 2 up || return 1
	topo_decap attach 2 || return 1
	ip -n "$NS_LB" route del "$VIP4/32"
	ctl service set "$VIP" via auto >/dev/null || return 1
	ctl backend set "$VIP" "$(be_addr4 2)" via auto >/dev/null
}

# ---- scale: 200 backends, 100 silent ----
# 10.0.4.1-100 are addresses of backend 1 (its echo answers there); 10.0.5.1-100
# are routed to backend 1 too, which does not forward: their probes vanish.
scale_topo() {
	local i ns
	ns=$(ns_b 1)
	for i in $(seq 1 100); do echo "addr add 10.0.4.$i/32 dev lo"; done | ip -n "$ns" -batch - ||
		return 1
	ip -n "$NS_LB" route add 10.0.4.0/24 via "$(be_addr4 1)" || return 1
	ip -n "$NS_LB" route add 10.0.5.0/24 via "$(be_addr4 1)" || return 1
}

# ctl_times N [GAP]: N `service list` requests over the control socket, one
# at a time, GAP s apart (0.02); prints the slowest in ms (python: no
# process start in the timing).
ctl_times() {
	python3 - "$CHLBD_SOCK" "$1" "${2:-0.02}" <<'EOF'
import socket, sys, time
path, n, gap, worst = sys.argv[1], int(sys.argv[2]), float(sys.argv[3]), 0.0
for _ in range(n):
    t0 = time.monotonic()
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(path)
    s.sendall(b"service list")
    s.shutdown(socket.SHUT_WR)
    while s.recv(65536):
        pass
    s.close()
    worst = max(worst, time.monotonic() - t0)
    time.sleep(gap)
print("%.1f" % (worst * 1000))
EOF
}

decided() {
	[ "$(ctl -j backend list "$1" | jq '[.backends[] | select(.health != "unknown")] | length')" = "$2" ]
}
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$CHLBD_PID/stat"; }
user_ticks() { awk '{ print $14 }' "/proc/$CHLBD_PID/stat"; }

test_scale_200_backends_half_silent() {
	local vip=$VIP4:81/tcp i t0 t1 c0 c1 u0 u1 worst wtrans hz secs up down
	scale_topo || return 1
	{
		echo "service add $vip algo maglev fwd l2dsr"
		for i in $(seq 1 100); do echo "backend add $vip 10.0.4.$i weight 100"; done
		for i in $(seq 1 100); do echo "backend add $vip 10.0.5.$i weight 100"; done
		echo "service set $vip check tcp port 80 interval $IV timeout $TMO rise 2 fall 2 panic 0"
	} >"$LIB_DIR/scale.conf"
	ctl batch -f "$LIB_DIR/scale.conf" >/dev/null || return 1
	# while the probes decide (100 backends go down, one swap each or fewer)
	wtrans=$(ctl_times 150 0.005) || return 1
	lib_wait_for 5 decided "$vip" 200 || diag "not every backend decided within 5 s"
	# chlbd's CPU for the probes alone (no requests meanwhile)
	c0=$(cpu_ticks)
	u0=$(user_ticks)
	if [ -n "${PERF_OUT:-}" ]; then perf record -g -p "$CHLBD_PID" -o "$PERF_OUT" sleep 3 2>/dev/null; else sleep 3; fi
	c1=$(cpu_ticks)
	u1=$(user_ticks)
	hz=$(getconf CLK_TCK)
	diag "chlbd CPU while probing 200 backends ($((200 * 1000 / IV)) probes/s, half of them timing out), no requests: $(((c1 - c0) * 1000 / hz)) ms in 3 s (user $(((u1 - u0) * 1000 / hz)) ms; the rest is the kernel, which also runs the namespaces' side of each probe in chlbd's context)"
	c0=$(cpu_ticks)
	t0=$(date +%s.%N)
	worst=$(ctl_times 150) || return 1
	t1=$(date +%s.%N)
	c1=$(cpu_ticks)
	secs=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }')
	up=$(ctl -j backend list "$vip" | jq '[.backends[] | select(.health == "up")] | length')
	down=$(ctl -j backend list "$vip" | jq '[.backends[] | select(.health == "down")] | length')
	diag "200 backends (100 silent), $((1000 / IV)) probes/s each: slowest of 150 control requests $worst ms; chlbd CPU meanwhile $(((c1 - c0) * 1000 / hz)) ms over $secs s; $up up, $down down"
	check "the answering half is up, the silent half down" [ "$up" = 100 ] && [ "$down" = 100 ] ||
		return 1
	diag "slowest control request while the probes decided (the first second): $wtrans ms"
	check "every control request answered within 50 ms" \
		awk -v w="$worst" -v t="$wtrans" 'BEGIN { exit !(w < 50 && t < 50) }'
}

lib_run
