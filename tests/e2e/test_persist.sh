#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# Client persistence (`service set VIP persist SECONDS [netmask /N]`), real
# TCP through chlbd in native XDP (l2dsr): the client namespace has 100 more
# addresses, one client each.
#   - 100 clients x 5 connections across 5 changes (a backend added,
#     weights, the algorithm twice, a weight again): every client's
#     connections all on one backend; without persist (the control) they
#     spread; `conns --persist` lists the 100 clients, `which` names the
#     client's backend for a new flow;
#   - a drained backend takes no new connections of its clients: they go
#     elsewhere and stay there;
#   - chlbd restarted (SIGTERM, SIGKILL): the affinity entries are kept
#     (pinned), a change by the new daemon keeps every client on its backend;
#   - netmask: IPv6 clients of one /112 share one backend;
#   - iperf3 -P4 (a control and four data connections, which must meet on
#     one server) while backends are added and drained: completes, all five
#     connections on one backend;
#   - bad input (persist with hash src, hash src on a persist service, a
#     netmask without persist or too long, a timeout out of range) is
#     refused and changes nothing.
. "$(dirname "$0")/../lib.sh"

NCLIENTS=${NCLIENTS:-100}

lib_require_e2e
command -v iperf3 >/dev/null || die "iperf3 is missing (make deps installs it)"
topo_build 4
chlbd_start xdp || die "chlbd did not start"
# clients 10.0.1.100.. (CLIENT4 10.0.1.2 stays the default source)
for i in $(seq 0 $((NCLIENTS - 1))); do
	ip -n "$NS_C" addr add "10.0.1.$((100 + i))/24" dev eth0 || die "client address $i"
done
for i in $(seq 0 9); do
	ip -n "$NS_C" addr add "fd00:1::1:$i/64" dev eth0 nodad || die "client IPv6 address $i"
done

VIP=$(vip_spec 4)
refused() { ! ctl_quiet "$@"; }
src() { echo "10.0.1.$((100 + $1))"; }

# one_conn SRC [ADDR]: the backend (bI) one connection from SRC reaches, or "fail".
one_conn() {
	client once -t "${2:-$VIP4}" -b "$1" -n 1 -q -T 2000 |
		awk '$1 == "backend" && $3 == 1 { b = $2 } END { print b ? b : "fail" }'
}

# round FILE: one connection from every client, "I BACKEND" lines appended to FILE.
round() {
	local i
	for i in $(seq 0 $((NCLIENTS - 1))); do
		echo "$i $(one_conn "$(src "$i")")"
	done >>"$1"
}

# spread FILE: clients whose connections reached more than one backend (or failed).
spread() {
	awk '{ b[$1] = b[$1] " " $2; if ($2 == "fail") bad[$1] = 1 }
		END { for (c in b) { n = split(b[c], w); for (i = 2; i <= n; i++) if (w[i] != w[1]) bad[c] = 1 }
			for (c in bad) k++; print k + 0 }' "$1"
}

# changes: five changes that keep b1..b3 in the service (a backend added, weights, algorithms)
CHANGES=("backend add $VIP $(be_addr4 4) weight 100" "backend set $VIP $(be_addr4 1) weight 200"
	"service set $VIP algo ring" "backend set $VIP $(be_addr4 4) weight 50"
	"service set $VIP algo jump")

# five_rounds FILE: a round, then a change and a round, five times
five_rounds() {
	local c
	round "$1"
	for c in "${CHANGES[@]}"; do
		# shellcheck disable=SC2086
		ctl $c >/dev/null || return 1
		round "$1"
	done
}

test_clients_keep_their_backend_across_changes() {
	local rc=0 out=$LIB_DIR/persist.rounds ctrl=$LIB_DIR/control.rounds n j
	svc_setup 4 maglev l2dsr "1 2 3" || return 1
	five_rounds "$ctrl" || return 1
	n=$(spread "$ctrl")
	diag "control without persist: $n of $NCLIENTS clients reached several backends"
	check "control without persist: $n of $NCLIENTS clients reached several backends (> $((NCLIENTS / 2)))" \
		[ "$n" -gt $((NCLIENTS / 2)) ] || rc=1

	svc_setup 4 maglev l2dsr "1 2 3" || return 1
	ctl service set "$VIP" persist 300 >/dev/null || return 1
	five_rounds "$out" || return 1
	n=$(spread "$out")
	diag "persist 300: $n of $NCLIENTS clients reached several backends or failed"
	check "persist 300: $NCLIENTS clients x 6 connections across 5 changes, $n on another backend or failed (0)" \
		[ "$n" = 0 ] || rc=1
	check "clients on every one of b1..b3 ($(awk '{ print $2 }' "$out" | sort | uniq -c | tr '\n' ' '))" \
		[ "$(awk '{ print $2 }' "$out" | sort -u | grep -c '^b[123]$')" = 3 ] || rc=1
	j=$(ctl -j conns --persist)
	check "conns --persist lists $(jq '.entries' <<<"$j") entries, $(jq '[.persist[] | select(.holds)] | length' <<<"$j") holding ($NCLIENTS)" \
		[ "$(jq --arg v "$VIP" '[.persist[] | select(.holds and .service == $v)] | length' <<<"$j")" = "$NCLIENTS" ] ||
		rc=1
	check "an entry names its client and backend" \
		[ "$(jq -r --arg c "$(src 7)/32" '.persist[] | select(.client == $c) | .backend' <<<"$j")" = \
			"$(be_addr4 "$(awk '$1 == 7 { print substr($2, 2); exit }' "$out")")" ] || rc=1
	out=$(ctl which "$(src 7):40000" "$VIP4:80" tcp)
	check "which: a new flow of client 7 goes by its affinity entry" \
		grep -q '^new flow: .*by the client affinity entry' <<<"$out" || rc=1
	check "stats count persist_hit and persist_insert" \
		[ "$(ctl -j stats | jq '.global.persist_hit > 0 and .global.persist_insert >= '"$NCLIENTS")" = true ] ||
		rc=1
	return $rc
}

test_drained_backend_takes_no_new_clients() {
	local rc=0 before=$LIB_DIR/drain.before after=$LIB_DIR/drain.after moved bad
	svc_setup 4 maglev l2dsr "1 2 3" || return 1
	ctl service set "$VIP" persist 300 >/dev/null || return 1
	round "$before"
	ctl backend set "$VIP" "$(be_addr4 2)" weight 0 >/dev/null || return 1
	round "$after"
	round "$after"
	bad=$(awk '$2 == "b2" || $2 == "fail"' "$after" | wc -l)
	check "b2 drained: no new connection reached it or failed ($bad)" [ "$bad" = 0 ] || rc=1
	moved=$(awk 'NR == FNR { b[$1] = $2; next } b[$1] != "b2" && b[$1] != $2' "$before" "$after" | wc -l)
	check "clients of b1 and b3 kept their backend ($moved moved)" [ "$moved" = 0 ] || rc=1
	check "b2's clients went elsewhere and stayed there" \
		[ "$(awk 'NR == FNR { b[$1] = $2; next } b[$1] == "b2" { print $1, $2 }' "$before" "$after" | sort -u | awk '{ print $1 }' | uniq -d | wc -l)" = 0 ] ||
		rc=1
	return $rc
}

test_entries_expire_after_the_timeout() {
	local rc=0 before=$LIB_DIR/expire.before kept=$LIB_DIR/expire.kept late=$LIB_DIR/expire.late n
	svc_setup 4 maglev l2dsr "1 2 3" || return 1
	ctl service set "$VIP" persist 2 >/dev/null || return 1
	round "$before"
	# b4 at weight 300: the table alone now sends about half of the clients to it
	ctl backend add "$VIP" "$(be_addr4 4)" weight 300 >/dev/null || return 1
	round "$kept"
	n=$(awk 'NR == FNR { b[$1] = $2; next } b[$1] != $2' "$before" "$kept" | wc -l)
	check "within the timeout: $n of $NCLIENTS clients moved (0)" [ "$n" = 0 ] || rc=1
	sleep 3
	round "$late"
	n=$(awk 'NR == FNR { b[$1] = $2; next } b[$1] != $2' "$before" "$late" | wc -l)
	diag "3 s idle, past persist 2: $n of $NCLIENTS clients decided again by the table and moved"
	check "past the timeout the table decides again: clients moved to b4 ($n > 0)" \
		[ "$n" -gt 0 ] && [ "$(awk '$2 == "fail"' "$late" | wc -l)" = 0 ] || rc=1
	return $rc
}

test_restart_keeps_affinity() {
	local rc=0 before=$LIB_DIR/restart.before after n sig
	svc_setup 4 ring l2dsr "1 2 3" || return 1
	ctl service set "$VIP" persist 300 >/dev/null || return 1
	round "$before"
	for sig in TERM KILL; do
		after=$LIB_DIR/restart.$sig
		chlbd_stop "$sig"
		chlbd_start xdp || return 1
		ctl_quiet backend del "$VIP" "$(be_addr4 4)"
		ctl backend add "$VIP" "$(be_addr4 4)" weight 300 >/dev/null || return 1
		round "$after"
		n=$(awk 'NR == FNR { b[$1] = $2; next } b[$1] != $2' "$before" "$after" | wc -l)
		check "chlbd $sig, restarted, b4 added at weight 300: $n of $NCLIENTS clients moved (0)" \
			[ "$n" = 0 ] || rc=1
	done
	return $rc
}

test_netmask_groups_clients() {
	local rc=0 vip6 b i out=$LIB_DIR/netmask.out
	vip6=$(vip_spec 6)
	svc_setup 6 maglev l2dsr "1 2 3" || return 1
	ctl service set "$vip6" persist 120 netmask /112 >/dev/null || return 1
	for i in $(seq 0 9); do one_conn "fd00:1::1:$i" "$VIP6"; done >"$out"
	b=$(sort -u "$out" | tr '\n' ' ')
	check "IPv6, netmask /112: 10 clients of one /112 on one backend ($b)" \
		[ "$(sort -u "$out" | wc -l)" = 1 ] && ! grep -q fail "$out" || rc=1
	check "service list shows persist and netmask" \
		[ "$(ctl -j service list "$vip6" | jq -c '.services[0] | [.persist_s, .netmask]')" = "[120,112]" ] ||
		rc=1
	check "save writes them" grep -q "persist 120 netmask /112" <(saved) || rc=1
	ctl service del "$vip6" >/dev/null
	return $rc
}

test_iperf3_streams_meet_on_one_backend() {
	local rc=0 vip j i backends
	vip=$(vip_spec 4 5201)
	for i in 1 2 3 4; do
		lib_bg "iperf3-b$i" ip netns exec "$(ns_b "$i")" iperf3 -s -p 5201
	done
	ctl_quiet service del "$vip"
	ctl service add "$vip" algo maglev fwd l2dsr persist 60 >/dev/null || return 1
	for i in 1 2 3; do
		ctl backend add "$vip" "$(be_addr4 "$i")" weight 100 >/dev/null || return 1
	done
	lib_wait_for 5 tcp_probe "$NS_LB" "$(be_addr4 4)" 5201 || return 1
	lib_bg iperf3-client ip netns exec "$NS_C" iperf3 -c "$VIP4" -p 5201 -P 4 -t 4 -J
	i=$LIB_LASTPID
	sleep 1
	ctl backend add "$vip" "$(be_addr4 4)" weight 100 >/dev/null || rc=1
	sleep 1
	ctl backend set "$vip" "$(be_addr4 4)" weight 0 >/dev/null || rc=1
	wait "$i"
	check "iperf3 -P4 completed (exit $?), $(jq '.end.sum_received.bytes // 0' "$LIB_DIR/iperf3-client.log") bytes" \
		[ "$(jq '.end.sum_received.bytes // 0' "$LIB_DIR/iperf3-client.log")" -gt 0 ] || rc=1
	j=$(ctl -j conns "$vip")
	diag "iperf3 -P4: $(jq '.end.sum_received.bytes // 0' "$LIB_DIR/iperf3-client.log") bytes received"
	backends=$(jq -r '[.conns[] | select(.vip == "'"$VIP4"':5201/tcp") | .backend] | unique | join(" ")' <<<"$j")
	diag "its connections' backends: $backends"
	check "its 5 connections ($(jq '[.conns[] | select(.vip == "'"$VIP4"':5201/tcp")] | length' <<<"$j")) all on one backend ($backends)" \
		[ "$(jq '[.conns[] | select(.vip == "'"$VIP4"':5201/tcp")] | length' <<<"$j")" = 5 ] &&
		[ "$(wc -w <<<"$backends")" = 1 ] || rc=1
	ctl service del "$vip" >/dev/null
	return $rc
}

test_bad_input_changes_nothing() {
	local rc=0 before out
	svc_setup 4 maglev l2dsr "1 2" || return 1
	ctl service set "$VIP" persist 300 netmask /24 >/dev/null || return 1
	before=$(saved)
	check "hash src on a persist service refused" refused service set "$VIP" hash src || rc=1
	out=$("$CHLBCTL" -s "$CHLBD_SOCK" service set "$VIP" netmask /33 2>&1)
	check "netmask /33 on IPv4 refused: $out" grep -q "netmask longer than an IPv4 address" <<<"$out" || rc=1
	for bad in "persist 86401" "persist -1" "persist 5s" "netmask /x"; do
		# shellcheck disable=SC2086
		check "$bad refused" refused service set "$VIP" $bad || rc=1
	done
	check "state unchanged" [ "$(saved)" = "$before" ] || rc=1
	out=$(ctl service set "$VIP" persist off --dry-run 2>&1)
	check "dry run names the change: $out" grep -q 'persist 300 netmask /24 -> persist off' <<<"$out" || rc=1
	check "dry run changed nothing" [ "$(saved)" = "$before" ] || rc=1
	svc_setup 4 maglev l2dsr "1 2" || return 1
	ctl service set "$VIP" hash src >/dev/null || return 1
	out=$("$CHLBCTL" -s "$CHLBD_SOCK" service set "$VIP" persist 60 2>&1)
	check "persist on a hash src service refused: $out" grep -q "not with hash src" <<<"$out" || rc=1
	out=$("$CHLBCTL" -s "$CHLBD_SOCK" service set "$VIP" netmask /24 2>&1)
	check "netmask without persist refused: $out" grep -q "applies to services with persist only" <<<"$out" ||
		rc=1
	return $rc
}

lib_run
