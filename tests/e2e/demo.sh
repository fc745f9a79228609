#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# `make demo`: chlb balancing real TCP between network namespaces, narrated.
# Every number printed is measured, and every claim is checked: the demo
# exits 0 only if all of them held. Cleans up on exit and on Ctrl-C.
. "$(dirname "$0")/../lib.sh"

MODE=${MODE:-xdp}
ALGO=${ALGO:-ring}
NEWFLOWS=600
HELD=200
DEMO_FAILS=0
T0=$(date +%s)

say() { printf '%s\n' "$*"; }
claim() { # claim TEXT CMD...: print TEXT with a verdict
	local text=$1
	shift
	if "$@"; then
		say "   [ok] $text"
	else
		say "   [!!] $text  <-- NOT TRUE"
		DEMO_FAILS=$((DEMO_FAILS + 1))
	fi
}
table() { # table FILE TOTAL: requests per backend
	printf '     %-9s %9s %8s\n' backend requests share
	awk -v n="$2" '$1 == "backend" { printf "     %-9s %9d %7.1f%%\n", $2, $3, 100 * $3 / n }' "$1" |
		sort -k1,1
}

# Ctrl-C: say so (chlbd, in the same process group, is gone too), then clean up.
trap 'say; say "Interrupted: removing what the demo created."; lib_cleanup; exit 130' INT
lib_require_e2e
# A demo killed by SIGKILL (no trap runs) left namespaces, chlbd and the
# servers running: this run removes them.
lib_reap_stale
VIP=$(vip_spec 4)

say "chlb demo: a client, a load balancer running chlbd, and backends, each in its"
say "own network namespace (names chlb-$LIB_ID-*). Ctrl-C cleans everything up."
say
say "1. Building the topology: client -> LB -> bridge -> backends b1 b2 b3 (+ b4 in reserve)."
say "   Backends hold the VIP $VIP4 on lo (direct server return) and run a tiny"
say "   TCP server that answers with its own name."
topo_build 4
say
say "2. Starting chlbd on the LB's eth0 ($MODE), pins under /sys/fs/bpf/chlb-test-$LIB_ID-lb."
chlbd_start "$MODE" || die "chlbd did not start (log above)"
say
say "3. Configuring a service with chlbctl:"
say "   \$ chlbctl service add $VIP algo $ALGO fwd l2dsr"
ctl service add "$VIP" algo "$ALGO" fwd l2dsr >/dev/null || die "service add failed"
for i in 1 2 3; do
	say "   \$ chlbctl backend add $VIP $(be_addr4 $i) weight 100"
	ctl backend add "$VIP" "$(be_addr4 $i)" weight 100 >/dev/null || die "backend add failed"
done
say
say "4. $NEWFLOWS new TCP connections from the client to $VIP4:80, each from its own port:"
out=$LIB_DIR/demo-1.out
client once -t "$VIP4" -n $NEWFLOWS -k 16 -q >"$out"
table "$out" "$(summary_field "$out" ok)"
claim "all $NEWFLOWS connections answered" [ "$(summary_field "$out" ok)" = $NEWFLOWS ]
claim "every backend got a share within what 'chlbctl sim' predicts" \
	spread_ok "$out" "$ALGO" "1 2 3" 4
say
say "5. Opening $HELD long-lived connections and keeping them open:"
hold_start demo 4 $HELD || die "couldn't open the long-lived connections"
say "     $(backend_counts "$LIB_DIR/demo.r0" | sort | awk '{ printf "%s: %s   ", $1, $2 }')"
claim "$HELD connections established" [ "$(summary_field "$LIB_DIR/demo.r0" ok)" = $HELD ]
say
say "6. Adding a fourth backend while they are open:"
say "   \$ chlbctl backend add $VIP $(be_addr4 4) weight 100"
ctl backend add "$VIP" "$(be_addr4 4)" weight 100 >/dev/null || die "backend add failed"
hold_round demo || die "long-lived connections did not answer"
kept=$(($(summary_field "$HOLD_LAST" ok) - $(summary_field "$HOLD_LAST" moved)))
say "   Data exchanged again on every long-lived connection:"
say "     $kept of $HELD still served by the same backend, $(summary_field "$HOLD_LAST" moved) moved, $(summary_field "$HOLD_LAST" fail) broke."
claim "all $HELD established connections kept their backend" [ "$kept" = $HELD ]
out2=$LIB_DIR/demo-2.out
client once -t "$VIP4" -n $NEWFLOWS -k 16 -q >"$out2"
say "   $NEWFLOWS new connections after the change:"
table "$out2" "$(summary_field "$out2" ok)"
on4=$(awk '$1 == "backend" && $2 == "b4" { print $3 }' "$out2")
shares=$(sim_shares "$ALGO" 4 "1 2 3 4")
# The range a count of NEWFLOWS flows can show for those shares (what
# within_share accepts): printed, so that the verdict can be checked by eye.
# shellcheck disable=SC2086
range=$(awk -v n=$NEWFLOWS -v lo="${shares% *}" -v hi="${shares#* }" 'BEGIN {
	p = (lo + hi) / 2; sd = sqrt(n * p * (1 - p))
	a = n * lo - 4 * sd; if (a < 0) a = 0
	printf "%d to %d", a + 0.999, n * hi + 4 * sd }')
say "   New connections that went to b4: ${on4:-0} of $NEWFLOWS ($(awk -v a="${on4:-0}" -v n=$NEWFLOWS 'BEGIN { printf "%.1f%%", 100 * a / n }'))."
say "   Consistent hashing gives the new backend about a quarter: 'chlbctl sim' gives one of"
say "   4 backends $(echo "$shares" | awk '{ printf "%.1f%% to %.1f%%", 100 * $1, 100 * $2 }') of the flows for these addresses; $NEWFLOWS connections from"
say "   random ports vary around that: $range of them on b4 agree with it (4 standard deviations)."
# shellcheck disable=SC2086
claim "the share of new flows on b4 matches the prediction (${on4:-0} is within $range)" \
	within_share "${on4:-0}" $NEWFLOWS $shares
# What the new table alone decides for the held connections' 5-tuples
# (chlbctl which): a consistent hash moves a flow only to the added backend
# (exactly so for ring and jump; Maglev and jtable move a few others too).
# One that it would send to b4 shows why it still reaches its backend.
pick=
n_b4=0 n_same=0 n_other=0
while read -r _ _ sport be; do
	w=$(ctl which "$CLIENT4:$sport" "$VIP4:80" tcp) || continue
	now=$(be_name "$(printf '%s\n' "$w" | awk '$1 == "new" && $2 == "flow:" { print $3 }')")
	if [ "$now" = b4 ]; then
		n_b4=$((n_b4 + 1))
		[ -n "$pick" ] || {
			pick=$sport pick_be=$be pick_w=$w
		}
	elif [ "$now" = "$be" ]; then
		n_same=$((n_same + 1))
	else
		n_other=$((n_other + 1))
	fi
done < <(grep '^conn ' "$LIB_DIR/demo.r0")
say "   For the $HELD long-lived connections' 5-tuples the new table alone picks b4 for $n_b4,"
say "   the backend they already had for $n_same, another one for $n_other."
case $ALGO in
ring | jump)
	claim "adding b4 moves a flow only to b4 ($n_b4 + $n_same = $HELD)" \
		[ $((n_b4 + n_same)) = $HELD ]
	;;
esac
if [ -n "$pick" ]; then
	be=$pick_be
	say "   Why one of them (client port $pick, served by $be) did not move:"
	say "   \$ chlbctl which $CLIENT4:$pick $VIP4:80 tcp"
	printf '%s\n' "$pick_w" | sed 's/^/     /'
	say "   The current table (table 0) would pick b4 for this 5-tuple, but the flow"
	say "   started under an older table, so it keeps its backend."
	claim "chlbctl which names $be ($(be_addr4 "${be#b}")), the backend that really serves it" \
		[ "$(which_backend 4 "$pick")" = "$be" ]
fi
hold_stop demo
say
say "7. A health check, then b3's server stops:"
say "   \$ chlbctl service set $VIP check tcp interval 200 timeout 150 rise 2 fall 2"
ctl service set "$VIP" check tcp interval 200 timeout 150 rise 2 fall 2 >/dev/null ||
	die "service set check failed"
health() { ctl -j backend list "$VIP" | jq -r --arg a "$(be_addr4 "$1")" \
	'.backends[] | select(.address == $a) | .health'; }
all_up() { for i in 1 2 3 4; do [ "$(health $i)" = up ] || return 1; done; }
claim "chlbd probes every backend and finds it up" lib_wait_for 5 all_up
for p in $(ip netns pids "$(ns_b 3)"); do
	[ "$(cat "/proc/$p/comm" 2>/dev/null)" = chlb-echo ] && kill "$p"
done
t_stop=$(date +%s%N)
b3_down() { [ "$(health 3)" = down ]; }
lib_wait_for 5 b3_down
ms=$((($(date +%s%N) - t_stop) / 1000000))
say "   \$ chlbctl backend list $VIP    (b3's lines)"
ctl backend list "$VIP" | grep -A1 " $(be_addr4 3) " | sed 's/^/     /'
down_in_time() { b3_down && [ "$ms" -le 1500 ]; }
claim "b3 is down $ms ms after its server stopped (fall 2 at 200 ms intervals: within 1.5 s)" \
	down_in_time
out3=$LIB_DIR/demo-3.out
client once -t "$VIP4" -n $NEWFLOWS -k 16 -q >"$out3"
say "   $NEWFLOWS new connections while b3 is down:"
table "$out3" "$(summary_field "$out3" ok)"
none_to_b3() { [ "$(summary_field "$out3" ok)" = $NEWFLOWS ] && ! grep -q '^backend b3 ' "$out3"; }
claim "all $NEWFLOWS answered, none sent to b3" none_to_b3
echo_start 3
b3_up() { [ "$(health 3)" = up ]; }
claim "b3's server restarted: b3 is up again" lib_wait_for 5 b3_up
say
say "8. chlbctl stats:"
ctl stats | sed 's/^/     /'
claim "chlbctl stats answered" ctl_quiet stats
say
el=$(($(date +%s) - T0))
if [ $DEMO_FAILS = 0 ]; then
	say "Everything shown above was checked and is true ($el s). Cleaning up."
	exit 0
fi
say "$DEMO_FAILS claim(s) above did not hold ($el s). Logs were in $LIB_DIR (removed on exit)."
exit 1
