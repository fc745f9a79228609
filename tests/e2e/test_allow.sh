#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# Source allow-lists (`service set VIP allow ...`), real TCP, chlbd in
# native XDP: the client namespace has two more addresses per family, one
# listed and one not. Listed clients are balanced; the other's connections
# fail and are counted as drop_source (globally and per service); changing
# the list live under held connections from listed clients breaks none of
# them; `allow any` lets everyone in again; a bad list changes nothing.
. "$(dirname "$0")/../lib.sh"

HELD=${HELD:-200}

lib_require_e2e
topo_build 3
chlbd_start xdp || die "chlbd did not start"
# 10.0.1.2 (CLIENT4) is the client's own; .3 listed, .4 not (the same for IPv6).
ip -n "$NS_C" addr add 10.0.1.3/24 dev eth0
ip -n "$NS_C" addr add 10.0.1.4/24 dev eth0
ip -n "$NS_C" addr add fd00:1::3/64 dev eth0 nodad
ip -n "$NS_C" addr add fd00:1::4/64 dev eth0 nodad

# src FAMILY I: the client's address ending in I
src() { if [ "$1" = 6 ]; then echo "fd00:1::$2"; else echo "10.0.1.$2"; fi; }
# svc_drops VIP: the service's drop_source counter
svc_drops() { ctl -j stats | jq --arg v "$1" '.services[] | select(.service == $v) | .drop_source'; }
refused() { ! ctl_quiet "$@"; }
reason() { ctl -j stats | jq --arg r "$1" '.global[$r] // 0'; }

allow_case() {
	local fam=$1 vip out rc=0 d0 d1 r0 r1 plen
	vip=$(vip_spec "$fam")
	plen=$([ "$fam" = 6 ] && echo 128 || echo 32)
	svc_setup "$fam" maglev ipip "1 2 3" || return 1
	ctl service set "$vip" allow "$(src "$fam" 2),$(src "$fam" 3)" >/dev/null || return 1
	check "service list shows the list" [ "$(ctl -j service list "$vip" | jq -c '.services[0].allow')" = \
		"[\"$(src "$fam" 2)/$plen\",\"$(src "$fam" 3)/$plen\"]" ] || rc=1
	out=$LIB_DIR/allowed$fam.out
	client once -t "$(vip_addr "$fam")" -b "$(src "$fam" 3)" -n 100 -k 16 -q >"$out"
	check "IPv$fam: a listed source: 100 of 100 answered, balanced ($(backend_counts "$out" | tr '\n' ' '))" \
		test "$(summary_field "$out" ok)" = 100 -a "$(backend_counts "$out" | wc -l)" = 3 || rc=1
	d0=$(svc_drops "$vip")
	r0=$(reason drop_source)
	out=$LIB_DIR/denied$fam.out
	client once -t "$(vip_addr "$fam")" -b "$(src "$fam" 4)" -n 20 -k 20 -T 500 -q >"$out"
	d1=$(svc_drops "$vip")
	r1=$(reason drop_source)
	check "IPv$fam: a source not listed: 0 of 20 answered" [ "$(summary_field "$out" ok)" = 0 ] || rc=1
	check "IPv$fam: its SYNs counted: service drop_source +$((d1 - d0)), reason +$((r1 - r0)) (>= 20)" \
		test $((d1 - d0)) -ge 20 -a $((r1 - r0)) -ge 20 || rc=1

	# live changes under held connections from listed clients
	hold_start "al$fam" "$fam" "$HELD" -b "$(src "$fam" 3)" || return 1
	check "IPv$fam: $HELD held connections from a listed source" \
		[ "$(summary_field "$LIB_DIR/al$fam.r0" ok)" = "$HELD" ] || rc=1
	for list in "$(src "$fam" 3)" "$(src "$fam" 3),$(src "$fam" 4)" any \
		"$(src "$fam" 0)/$([ "$fam" = 6 ] && echo 64 || echo 24)" "$(src "$fam" 3)"; do
		ctl service set "$vip" allow "$list" >/dev/null || return 1
		hold_round "al$fam" || return 1
		check "IPv$fam: allow $list: all $HELD held connections answered ($(summary_field "$HOLD_LAST" fail) broke, $(summary_field "$HOLD_LAST" moved) moved)" \
			round_intact "$HELD" || rc=1
	done
	# the source leaves the list: its connections are dropped (documented)
	ctl service set "$vip" allow "$(src "$fam" 2)" >/dev/null || return 1
	hold_round "al$fam" || return 1
	check "IPv$fam: source removed from the list: its $HELD connections get no answer ($(summary_field "$HOLD_LAST" ok) answered)" \
		[ "$(summary_field "$HOLD_LAST" ok)" = 0 ] || rc=1
	hold_stop "al$fam"
	ctl service set "$vip" allow any >/dev/null || return 1
	out=$LIB_DIR/any$fam.out
	client once -t "$(vip_addr "$fam")" -b "$(src "$fam" 4)" -n 50 -k 16 -q >"$out"
	check "IPv$fam: allow any: the other source is served again" [ "$(summary_field "$out" ok)" = 50 ] ||
		rc=1
	return $rc
}

test_allow_ipv4() { allow_case 4; }
test_allow_ipv6() { allow_case 6; }

test_bad_lists_change_nothing() {
	local vip before rc=0 bad
	vip=$(vip_spec 4)
	svc_setup 4 ring ipip "1 2" || return 1
	ctl service set "$vip" allow 10.0.1.3 >/dev/null || return 1
	before=$(saved)
	for bad in 10.0.1.0/33 10.0.1.3/8 10.0.1.0/24,10.0.1.3 fd00:1::3 "10.0.1.3,"; do
		check "allow $bad refused" refused service set "$vip" allow "$bad" || rc=1
	done
	check "too many prefixes refused, naming the limit" \
		bash -c "'$CHLBCTL' -s '$CHLBD_SOCK' service set '$vip' allow $(seq -s, -f '10.9.%g.0/24' 0 64) 2>&1 | grep -q 'at most 64'" ||
		rc=1
	check "state unchanged" [ "$(saved)" = "$before" ] || rc=1
	# which tells a dropped source from a listed one
	out=$(ctl which 10.0.1.4:4000 "$VIP4:80" tcp)
	check "which: an unlisted source is dropped: $out" grep -q '^dropped: .*allow-list' <<<"$out" ||
		rc=1
	out=$(ctl which 10.0.1.3:4000 "$VIP4:80" tcp)
	check "which: a listed source is not: $out" nogrep -q '^dropped:' <<<"$out" || rc=1
	out=$(ctl service set "$vip" allow any --dry-run 2>&1)
	check "dry run names the change: $out" grep -q 'allow 10.0.1.3/32 -> any' <<<"$out" || rc=1
	check "dry run changed nothing" [ "$(saved)" = "$before" ] || rc=1
	return $rc
}

lib_run
