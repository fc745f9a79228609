#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# All-port VIPs (`service add VIP:*/tcp`), real TCP, chlbd in native XDP.
# The backends also serve ports 20000-20999. Connections to 50 random ports
# of the wildcard VIP are balanced over its backends and stay on them
# across an added backend; new flows reach the new one; a service of one
# port of the same address takes that port (and `which` names the service
# each port goes to); the wildcard's entries are counted under its name;
# a wildcard's health check probes the `port N` it must be given.
. "$(dirname "$0")/../lib.sh"

PORTS=${PORTS:-50}
PER_PORT=${PER_PORT:-4}

lib_require_e2e
topo_build 4
for i in 1 2 3 4; do
	lib_bg "echo-range-b$i" ip netns exec "$(ns_b $i)" "$ECHO_BIN" -n "b$i" -p 20000-20999
done
chlbd_start xdp || die "chlbd did not start"
W=$VIP4:*/tcp
lib_wait_for 5 tcp_probe "$NS_LB" "$(be_addr4 1)" 20999 || die "backends do not serve 20000-20999"

# 50 distinct random ports of 20000-20999
mapfile -t PORTLIST < <(shuf -i 20000-20999 -n "$PORTS")

test_wildcard_balanced_and_sticky() {
	local rc=0 p total=0 bad=0 counts ent out b4
	ctl_quiet service del "$W"
	ctl service add "$W" algo maglev fwd ipip >/dev/null || return 1
	for i in 1 2 3; do ctl backend add "$W" "$(be_addr4 $i)" >/dev/null || return 1; done
	check "save writes the star" bash -c "'$CHLBCTL' -s '$CHLBD_SOCK' save | grep -qF 'service add $W '" ||
		rc=1
	for p in "${PORTLIST[@]}"; do
		hold_start "w$p" 4 "$PER_PORT" -p "$p" || return 1
		total=$((total + $(summary_field "$LIB_DIR/w$p.r0" ok)))
	done
	check "$((PORTS * PER_PORT)) connections to $PORTS ports all answered ($total)" \
		[ $total = $((PORTS * PER_PORT)) ] || rc=1
	counts=$(cat "$LIB_DIR"/w*.r0 | awk '$1 == "conn" { n[$4]++ } END { for (b in n) print b, n[b] }' |
		sort | tr '\n' ' ')
	diag "per backend: $counts"
	# balanced: each of the 3 backends has at least 20% of the 200
	check "balanced over b1 b2 b3 ($counts)" \
		awk -v t=$total '{ for (i = 1; i < NF; i += 2) if ($(i + 1) < t / 5) exit 1; if (NF != 6) exit 1 }' <<<"$counts" ||
		rc=1
	ent=$(ctl -j conns "$W" | jq '.services[0].live')
	check "conns counts the wildcard's entries under its name: $ent live" [ "$ent" -ge $total ] || rc=1
	# a change: b4 added; every held connection stays where it was
	ctl backend add "$W" "$(be_addr4 4)" >/dev/null || return 1
	for p in "${PORTLIST[@]}"; do
		hold_round "w$p" || return 1
		round_intact "$PER_PORT" || bad=$((bad + PER_PORT - $(summary_field "$HOLD_LAST" ok) + $(summary_field "$HOLD_LAST" moved)))
	done
	check "after adding b4: all held connections on their backends ($bad broken or moved)" [ $bad = 0 ] || rc=1
	for p in "${PORTLIST[@]}"; do hold_stop "w$p"; done
	# new flows to the same ports: b4 takes its share now
	b4=0
	for p in "${PORTLIST[@]:0:10}"; do
		out=$LIB_DIR/new$p.out
		client once -t "$VIP4" -p "$p" -n 20 -k 10 -q >"$out"
		b4=$((b4 + $(awk '$1 == "backend" && $2 == "b4" { print $3 }' "$out" | grep . || echo 0)))
	done
	check "new flows to 10 of the ports reach the new b4 ($b4 of 200)" [ $b4 -ge 20 ] || rc=1
	return $rc
}

test_specific_port_wins() {
	local rc=0 sp=${PORTLIST[0]} other=${PORTLIST[1]} out w
	ctl_quiet service del "$W"
	ctl service add "$W" algo maglev fwd ipip >/dev/null || return 1
	for i in 2 3 4; do ctl backend add "$W" "$(be_addr4 $i)" >/dev/null || return 1; done
	ctl service add "$VIP4:$sp/tcp" algo ring fwd ipip >/dev/null || return 1
	ctl backend add "$VIP4:$sp/tcp" "$(be_addr4 1)" >/dev/null || return 1
	out=$LIB_DIR/sp.out
	client once -t "$VIP4" -p "$sp" -n 50 -k 10 -q >"$out"
	check "port $sp: its own service, all 50 on b1 ($(backend_counts "$out" | tr '\n' ' '))" \
		[ "$(backend_counts "$out")" = "b1 50" ] || rc=1
	out=$LIB_DIR/other.out
	client once -t "$VIP4" -p "$other" -n 50 -k 10 -q >"$out"
	check "port $other: the wildcard's backends, never b1 ($(backend_counts "$out" | tr '\n' ' '))" \
		[ "$(summary_field "$out" ok)" = 50 ] && nogrep -q '^backend b1 ' "$out" || rc=1
	w=$(ctl -j which "$CLIENT4:4000" "$VIP4:$sp" tcp | jq -r .service)
	check "which port $sp: $w" [ "$w" = "$VIP4:$sp/tcp" ] || rc=1
	w=$(ctl -j which "$CLIENT4:4000" "$VIP4:$other" tcp | jq -r .service)
	check "which port $other: $w" [ "$w" = "$W" ] || rc=1
	# without the specific service its port falls back to the wildcard
	ctl service del "$VIP4:$sp/tcp" >/dev/null || return 1
	client once -t "$VIP4" -p "$sp" -n 30 -k 10 -q >"$out"
	check "port $sp after its service is gone: the wildcard's ($(backend_counts "$out" | tr '\n' ' '))" \
		[ "$(summary_field "$out" ok)" = 30 ] && nogrep -q '^backend b1 ' "$out" || rc=1
	return $rc
}

test_wildcard_health_check_needs_a_port() {
	local rc=0 up
	ctl_quiet service del "$W"
	ctl service add "$W" algo maglev fwd ipip >/dev/null || return 1
	for i in 2 3 4; do ctl backend add "$W" "$(be_addr4 $i)" >/dev/null || return 1; done
	check "check tcp without a port refused" refused service set "$W" check tcp
	ctl service set "$W" check tcp port 80 interval 300 timeout 200 >/dev/null || return 1
	lib_wait_for 10 bash -c "[ \"\$('$CHLBCTL' -s '$CHLBD_SOCK' -j backend list '$W' | jq '[.backends[] | select(.health == \"up\")] | length')\" = 3 ]" ||
		rc=1
	up=$(ctl -j backend list "$W" | jq '[.backends[] | select(.health == "up")] | length')
	check "the 3 backends probed on port 80 are up ($up)" [ "$up" = 3 ] || rc=1
	ctl service set "$W" check none >/dev/null || return 1
	return $rc
}
refused() { ! ctl_quiet "$@"; }

lib_run
