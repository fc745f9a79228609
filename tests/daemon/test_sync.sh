#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# Entry sync between two chlbds (user/chlbd/sync/sync.c): LB1 carries
# real TCP (the e2e topology: client -> LB1 -> backends b1-b3, l2dsr); LB2
# is a second chlbd in its own namespace, with the same service but its
# backends added in another order after another service, so the same
# backend has another slot there. The two talk over a link of their own
# (10.9.0.0/24). Checked:
#  - connections opened through LB1 appear on LB2, each with LB2's slot of
#    the same backend address (`chlbctl -j conns` on both), IPv4 and IPv6;
#    the clients' FINs mark them ended there too; LB2's metrics count them;
#  - a fresh LB2 (killed, pins and state removed) gets LB1's entries by the
#    bulk dump, and says so (`chlbctl stats`: synced, dumps_received);
#  - connections opened through LB1's data plane while its chlbd is down
#    reach LB2 when it is back: in the dump LB2 gets when it reconnects;
#  - a record for a backend LB2 lacks waits (deferred, the rollout race):
#    applied once the backend is added there, dropped and counted when it
#    is not added within LB2's --history-ms (3 s here);
#  - bad input from a configured peer (a fake one at 10.9.0.3 with the key:
#    garbage, a truncated record, a bad family, a service LB2 lacks) is
#    rejected or dropped, counted, and changes no entry; a host that is not
#    a configured peer is refused and counted;
#  - authentication (--sync-key; tests/tools/sync_peer.py plays the peer,
#    a second implementation of the protocol): a receiving peer without
#    the key, with another key, or replaying a recorded handshake gets no
#    record; a listener at a peer's address without the key, a message with
#    a byte flipped or replayed, a v1 peer: nothing applied; each refused,
#    counted (rejected.auth), logged once a minute per peer;
#  - 100,000 records for a VIP LB2 lacks: bounded waiting, stats answer fast;
#  - a fresh LB2 joining while LB1 holds 500,000 entries (chlb-ctfill): the
#    dump goes in slices, the records of connections opened through LB1
#    meanwhile go with it, none is dropped (peer_slow), and every one of
#    those connections has its entry on LB2, with the same backend.
. "$(dirname "$0")/../lib.sh"

CTFILL_BIN=$BUILD/tests/tools/chlb-ctfill
LIB_BIN_VARS+=(CTFILL_BIN)
lib_require_e2e
lib_require_bins "$CTFILL_BIN"
command -v python3 >/dev/null || die "python3 not found (the fake sync peer)"
topo_build 3

NS_LB2=chlb-$LIB_ID-lb2
LB2_SOCK=$LIB_DIR/lb2.sock
LB2_STATE=$LIB_DIR/lb2.state
LB2_PID=
LB2_STARTS=0
SYNC1=10.9.0.1:7070
SYNC2=10.9.0.2:7070
FAKE=10.9.0.3:7070
N=30
SYNC_PEER_PY=$LIB_ROOT/tests/tools/sync_peer.py
# the shared key (docs/operations.md: a line of 64 hex digits, mode 0600)
KEY=$LIB_DIR/sync.key
(umask 077 && od -An -tx1 -N32 /dev/urandom | tr -d ' \n' >"$KEY" && echo >>"$KEY")
KEY2=$LIB_DIR/sync2.key # LB2's copy (a key is rotated one host at a time)
(umask 077 && cp "$KEY" "$KEY2")

lb2() { "$CHLBCTL" -s "$LB2_SOCK" "$@"; }
lb2_quiet() { lb2 "$@" >/dev/null 2>&1; }

# LB2's namespace: v0 on the backends' subnet (their MACs as permanent
# neighbours: next hops resolve, no traffic needed), and the sync link to
# LB1, which also holds the fake peer's address and an unconfigured one.
lib_ns_add "$NS_LB2"
lib_veth "$NS_LB2" v0 v1 || die "veth"
ip -n "$NS_LB2" addr add 10.0.2.100/24 dev v0
ip -n "$NS_LB2" addr add fd00:2::100/64 dev v0 nodad
for i in 1 2 3; do
	mac=$(ip -n "$(ns_b "$i")" -br link show eth0 | awk '{ print $3 }')
	ip -n "$NS_LB2" neigh replace "$(be_addr4 "$i")" lladdr "$mac" dev v0 nud permanent
	ip -n "$NS_LB2" neigh replace "$(be_addr6 "$i")" lladdr "$mac" dev v0 nud permanent
done
ip -n "$NS_LB" link add sync0 type veth peer name sync0 netns "$NS_LB2" || die "veth sync"
ip -n "$NS_LB" addr add 10.9.0.1/24 dev sync0
ip -n "$NS_LB" addr add 10.9.0.3/24 dev sync0
ip -n "$NS_LB" link set sync0 up
ip -n "$NS_LB2" addr add 10.9.0.2/24 dev sync0
ip -n "$NS_LB2" addr add 10.9.0.4/24 dev sync0
ip -n "$NS_LB2" link set sync0 up
lib_pindir lb2
LB2_PIN=$LIB_PINDIR

# LB2's config file: another service first, then the VIP's backends in
# reverse order, so each backend's slot differs from LB1's.
LB2_CONF=$LIB_DIR/lb2.conf
{
	echo "service add 10.0.0.99:80/tcp algo ring fwd l2dsr"
	echo "backend add 10.0.0.99:80/tcp $(be_addr4 1)"
	echo "backend add 10.0.0.99:80/tcp $(be_addr4 2)"
	echo "service add $(vip_spec 4) algo ring fwd l2dsr"
	for i in 3 2 1; do echo "backend add $(vip_spec 4) $(be_addr4 "$i") weight 100"; done
	echo "service add $(vip_spec 6) algo maglev fwd l2dsr"
	for i in 3 2 1; do echo "backend add $(vip_spec 6) $(be_addr6 "$i") weight 100"; done
} >"$LB2_CONF"

# lb2_start: LB2's chlbd with its config (the services exist before the
# peers' entries come in), peers LB1 and the fake one.
lb2_start() {
	LB2_STARTS=$((LB2_STARTS + 1))
	lib_bg "chlbd-lb2-$LB2_STARTS" "$CHLBD" -i v0 --netns "$NS_LB2" -m xdp -s "$LB2_SOCK" \
		--pin-dir "$LB2_PIN" --state "$LB2_STATE" -c "$LB2_CONF" -f --history-ms 3000 \
		--metrics 10.9.0.2:9180 \
		--sync-listen "$SYNC2" --sync-key "$KEY2" \
		--sync-peer "$SYNC1" --sync-peer "$FAKE"
	LB2_PID=$LIB_LASTPID
	lib_wait_up "chlbd-lb2-$LB2_STARTS" lb2_quiet service list
}

lb2_fresh() {
	[ -z "$LB2_PID" ] || lib_stop "$LB2_PID" KILL 2>/dev/null
	LB2_PID=
	ip -n "$NS_LB2" link set dev v0 xdp off 2>/dev/null
	rm -rf "${LB2_PIN:?}"/*
	rm -f "$LB2_STATE" "$LB2_STATE".*
}

lb1_sync() { ctl -j stats | jq -r ".sync$1"; }
lb2_sync() { lb2 -j stats | jq -r ".sync$1"; }
lb2_peer_state() { lb2_sync ".peers[] | select(.peer == \"$1\") | .receiving"; }
lb2_synced_with_lb1() { [ "$(lb2_peer_state "$SYNC1")" = synced ]; }

# conns_of CTL...: "CLIENT BACKEND SLOT STATE" of the client's entries
# (family $FAM), sorted.
FAM=4
conns_of() {
	local c="$CLIENT4:"
	[ "$FAM" = 4 ] || c="[$CLIENT6]:"
	"$@" -j conns | jq -r --arg c "$c" \
		'.conns[] | select(.client | startswith($c)) | "\(.client) \(.backend) \(.slot) \(.state)"' |
		sort
}
# slot_of CTL ADDR: the slot of ADDR in the VIP's service (stats' backends).
slot_of() {
	"$1" -j stats | jq -r --arg a "$2" --arg s "$(vip_spec "$FAM")" \
		'.backends[] | select(.address == $a and .service == $s) | .slot'
}
lb2_has_n() { [ "$(conns_of lb2 | grep -c " $2\$")" -ge "$1" ]; }

chlbd_start xdp --sync-listen "$SYNC1" --sync-peer "$SYNC2" --sync-key "$KEY"
svc_setup 4 ring l2dsr "1 2 3" || die "LB1's service"
svc_setup 6 maglev l2dsr "1 2 3" || die "LB1's IPv6 service"
lb2_start || die "LB2 did not start"

# every entry LB2 has for the client is LB1's, by address, in LB2's own slot
same_entries() {
	local want=$1 l1 l2 bad=0 differ=0 c b s st c2 b2 s2 st2
	l1=$(conns_of ctl)
	l2=$(conns_of lb2)
	check "LB1 has $want entries of the client ($(echo "$l1" | grep -c .))" \
		[ "$(echo "$l1" | grep -c .)" -ge "$want" ] || return 1
	while read -r c b s st; do
		read -r c2 b2 s2 st2 < <(echo "$l2" | awk -v c="$c" '$1 == c')
		if [ "$c2" != "$c" ] || [ "$b2" != "$b" ] || [ "$s2" != "$(slot_of lb2 "$b")" ]; then
			diag "LB1: $c $b slot $s; LB2: ${c2:-no entry} $b2 slot $s2"
			bad=$((bad + 1))
		fi
		[ "$s2" = "$s" ] || differ=$((differ + 1))
	done <<<"$l1"
	check "every LB1 entry is on LB2 with LB2's slot of its backend ($bad wrong)" [ $bad = 0 ] &&
		check "the slots differ between the hosts ($differ of $want): mapped by address" \
			[ $differ -gt 0 ]
}

test_live_records() {
	lib_wait_for 10 lb2_synced_with_lb1 || { diag "LB2 -> LB1: $(lb2_peer_state "$SYNC1")"; return 1; }
	lib_wait_for 10 eval '[ "$(lb1_sync ".peers[0].sending")" = true ]' || return 1
	hold_start h1 4 $N || return 1
	lib_wait_for 5 lb2_has_n $N live || diag "LB2 has $(conns_of lb2 | grep -c live) live entries"
	same_entries $N || return 1
	check "LB1 sent records, LB2 applied them ($(lb2_sync .applied))" \
		[ "$(lb2_sync .applied)" -ge $N ] || return 1
	hold_stop h1
	lib_wait_for 10 lb2_has_n $N ended
	check "the clients' FINs ended the entries on LB2 too ($(conns_of lb2 | grep -c ended) of $N)" \
		lb2_has_n $N ended
}

test_ipv6_records() {
	local rc=0
	FAM=6
	hold_start h6 6 20 || rc=1
	[ $rc = 1 ] || lib_wait_for 5 lb2_has_n 20 live
	[ $rc = 1 ] || same_entries 20 || rc=1
	hold_stop h6
	FAM=4
	return $rc
}

test_fresh_lb2_gets_dump() {
	hold_start h2 4 $N || return 1
	lb2_fresh
	lb2_start || return 1
	lib_wait_for 10 lb2_synced_with_lb1 || return 1
	check "LB2 says the dump is in (dumps_received $(lb2_sync .dumps_received))" \
		[ "$(lb2_sync .dumps_received)" -ge 1 ] || return 1
	check "LB2 got LB1's live entries by the dump" lb2_has_n $N live || return 1
	check "LB1 counted its dumps ($(lb1_sync .dumps_sent))" [ "$(lb1_sync .dumps_sent)" -ge 2 ] ||
		return 1
	same_entries $N
}

# h_b3 NAME: the client:port of NAME's connections to b3, a line each ("10.0.1.2:SPORT ").
h_b3() { awk -v c="$CLIENT4" '$1 == "conn" && $4 == "b3" { print c ":" $3 " " }' "$LIB_DIR/$1.r0"; }
lb2_has_none() { ! conns_of lb2 | grep -qFf "$1"; }
# lb2_lacks_ports PORT...: LB2 has no entry of the client from these ports.
# The fake peers' records use client ports below the client namespace's
# ephemeral range (tests/lib/topo.sh), so no real connection can hold them.
lb2_lacks_ports() {
	local p l
	for p in "$@"; do
		l=$(conns_of lb2 | grep "^$CLIENT4:$p ") || continue
		diag "LB2 has: $l"
		return 1
	done
}
# lb2_all_held FILE: LB2 has an entry for each of FILE's flows, every one held (no backend).
lb2_all_held() {
	[ "$(conns_of lb2 | grep -Ff "$1" | grep -c ' null [0-9]* held$')" = "$(grep -c . "$1")" ]
}
lb2_has_all() { [ "$(conns_of lb2 | grep -cFf "$1")" = "$(grep -c . "$1")" ]; }

test_lb1_down_meanwhile() {
	local d0
	d0=$(lb2_sync .dumps_received)
	chlbd_stop KILL 2>/dev/null # the program stays attached and keeps inserting entries
	hold_start h5 4 $N || return 1
	check "no record of them reached LB2 ($(conns_of lb2 | grep -c live) live entries)" \
		[ "$(conns_of lb2 | grep -c live)" = $N ] || return 1 # h2's
	chlbd_start xdp --sync-listen "$SYNC1" --sync-peer "$SYNC2" --sync-key "$KEY" || return 1
	lib_wait_for 15 lb2_has_n $((2 * N)) live
	check "LB1 back: LB2 got the $N by a new dump (dumps $d0 -> $(lb2_sync .dumps_received))" \
		lb2_has_n $((2 * N)) live && [ "$(lb2_sync .dumps_received)" -gt "$d0" ] || return 1
	same_entries $((2 * N))
}

test_missing_backend() {
	local want d0 a0 n0
	d0=$(lb2_sync .deferred)
	a0=$(lb2_sync .deferred_applied)
	n0=$(lb2_sync .dropped.no_backend)
	# a rollout: b3 leaves and comes back on LB2 while LB1 keeps it
	lb2 backend del "$(vip_spec 4)" "$(be_addr4 3)" >/dev/null || return 1
	hold_start h3 4 $N || return 1
	h_b3 h3 >"$LIB_DIR/h3.b3"
	want=$(grep -c . "$LIB_DIR/h3.b3")
	sleep 0.5
	diag "new connections to b3 through LB1: $want; LB2 deferred $(($(lb2_sync .deferred) - d0))"
	check "records for a backend LB2 lacks wait (deferred +$(($(lb2_sync .deferred) - d0)))" \
		[ "$want" -gt 0 ] && [ $(($(lb2_sync .deferred) - d0)) -ge "$want" ] &&
		check "their flows held on LB2 meanwhile (no backend, packets dropped)" \
			lb2_all_held "$LIB_DIR/h3.b3" || return 1
	lb2 backend add "$(vip_spec 4)" "$(be_addr4 3)" weight 100 >/dev/null || return 1
	lib_wait_for 2 lb2_has_all "$LIB_DIR/h3.b3"
	check "b3 added on LB2: the waiting entries are applied ($(($(lb2_sync .deferred_applied) - a0)))" \
		lb2_has_all "$LIB_DIR/h3.b3" || return 1
	# not added back within --history-ms: dropped and counted
	lb2 backend del "$(vip_spec 4)" "$(be_addr4 3)" >/dev/null || return 1
	hold_start h4 4 $N || return 1
	h_b3 h4 >"$LIB_DIR/h4.b3"
	want=$(grep -c . "$LIB_DIR/h4.b3")
	lib_wait_for 6 eval '[ $(($(lb2_sync .dropped.no_backend) - n0)) -ge "$want" ]'
	lb2 backend add "$(vip_spec 4)" "$(be_addr4 3)" weight 100 >/dev/null || return 1
	sleep 0.5
	check "not added within --history-ms: dropped, counted ($(($(lb2_sync .dropped.no_backend) - n0)) of $want)" \
		[ "$want" -gt 0 ] && [ $(($(lb2_sync .dropped.no_backend) - n0)) -ge "$want" ] &&
		check "and never applied" lb2_has_none "$LIB_DIR/h4.b3"
}

# A peer that is down (the fake one, not listening yet): stats say why, the
# log says it once, and operations.md's wait loop (every peer synced or
# with an error) ends instead of waiting for it.
test_peer_down() {
	local log=$LIB_DIR/chlbd-lb2-$LB2_STARTS.log
	lib_wait_for 10 eval "[ \"\$(lb2_sync '.peers[] | select(.peer == \"$FAKE\") | .error')\" = 'Connection refused' ]"
	lb2 stats | grep "peer $FAKE" | sed 's/^/# LB2: /'
	check "a peer that is down: its error in stats -j" \
		[ "$(lb2_sync ".peers[] | select(.peer == \"$FAKE\") | .error")" = "Connection refused" ] &&
		check "and in stats" \
			bash -c "'$CHLBCTL' -s '$LB2_SOCK' stats | grep -q 'peer $FAKE: receiving: [a-z]*, last error: Connection refused'" &&
		check "a synced peer has no error" \
			[ "$(lb2_sync ".peers[] | select(.peer == \"$SYNC1\") | has(\"error\")")" = false ] &&
		check "operations.md's wait loop ends" \
			bash -c "'$CHLBCTL' -s '$LB2_SOCK' -j stats | jq -e '[.sync.peers[] | .receiving == \"synced\" or has(\"error\")] | all' >/dev/null" &&
		check "the log says why, once ($(grep -c "sync: $FAKE: can't connect (Connection refused)" "$log") lines)" \
			[ "$(grep -c "sync: $FAKE: can't connect (Connection refused)" "$log")" = 1 ]
}

# fake_peer KEYFILE SCRIPT: tests/tools/sync_peer.py listening at $FAKE (in
# LB1's namespace), a step of SCRIPT per connection LB2 makes; waits until
# every step is sent and LB2 closed each connection.
FAKE_RUNS=0
fake_peer() {
	local n
	n=$(tr ';' '\n' <<<"$2" | grep -c .)
	FAKE_RUNS=$((FAKE_RUNS + 1))
	lib_bg "fake-peer-$FAKE_RUNS" ip netns exec "$NS_LB" python3 "$SYNC_PEER_PY" listen \
		"${FAKE%:*}" "${FAKE#*:}" "$1" "$2"
	lib_wait_for 60 eval "[ \$(grep -c '^sent' '$LIB_DIR/fake-peer-$FAKE_RUNS.log') = $n ]" || {
		diag "fake peer: $(tr '\n' ' ' <"$LIB_DIR/fake-peer-$FAKE_RUNS.log")"
		return 1
	}
}

test_bad_input() {
	local e0 e1 c0 c1
	e0=$(conns_of lb2)
	c0=$(lb2 -j stats | jq -c '.sync | [.dropped.no_service, .dropped.no_backend, .rejected.bad_input, .rejected.truncated, .applied]')
	# a service LB2 lacks and a backend it lacks (both wait, then dropped), then bad bytes
	fake_peer "$KEY" "records:10.0.0.77,10.0.2.11,9001/10.0.0.10,10.0.2.99,9002;garbage;truncated;badfamily" ||
		return 1
	sleep 4 # the records for a service and a backend LB2 lacks wait --history-ms (3 s)
	c1=$(lb2 -j stats | jq -c '.sync | [.dropped.no_service, .dropped.no_backend, .rejected.bad_input, .rejected.truncated, .applied]')
	diag "LB2 [no_service no_backend bad_input truncated applied]: $c0 -> $c1"
	e1=$(conns_of lb2)
	[ "$e0" = "$e1" ] || diff <(echo "$e0") <(echo "$e1") | sed 's/^/# LB2 entries: /' | head -20
	check "a record for a service LB2 lacks: dropped after waiting, counted" \
		[ "$(jq '.[0]' <<<"$c1")" = $(($(jq '.[0]' <<<"$c0") + 1)) ] &&
		check "a record for a backend LB2 lacks: dropped after waiting, counted" \
			[ "$(jq '.[1]' <<<"$c1")" = $(($(jq '.[1]' <<<"$c0") + 1)) ] &&
		check "garbage and a bad family: rejected, counted" \
			[ "$(jq '.[2]' <<<"$c1")" = $(($(jq '.[2]' <<<"$c0") + 2)) ] &&
		check "a truncated record: rejected, counted" \
			[ "$(jq '.[3]' <<<"$c1")" = $(($(jq '.[3]' <<<"$c0") + 1)) ] &&
		check "nothing applied" [ "$(jq '.[4]' <<<"$c1")" = "$(jq '.[4]' <<<"$c0")" ] &&
		check "LB2's entries unchanged" [ "$e0" = "$e1" ] &&
		check "LB2's log names the bad input" \
			grep -q "sync: $FAKE: bad input (not a sync message" "$LIB_DIR/chlbd-lb2-$LB2_STARTS.log"
}

test_unknown_peer() {
	local u0 got
	u0=$(lb1_sync .rejected.unknown_peer)
	got=$(ip netns exec "$NS_LB2" python3 -c '
import socket, sys
s = socket.socket(); s.bind(("10.9.0.4", 0)); s.settimeout(5)
s.connect(("10.9.0.1", 7070)); print(len(s.recv(100)))' 2>&1)
	check "a host that is not a --sync-peer gets nothing ($got bytes)" [ "$got" = 0 ] &&
		check "and is counted ($u0 -> $(lb1_sync .rejected.unknown_peer))" \
			[ "$(lb1_sync .rejected.unknown_peer)" = $((u0 + 1)) ] &&
		check "chlbctl stats shows the sync counters" \
			bash -c "'$CHLBCTL' -s '$CHLBD_SOCK' stats | grep -q '^sync (listening on $SYNC1)'"
}

# peer_py SRC MODE: tests/tools/sync_peer.py connecting from SRC (a
# namespace's address) to LB1 as a receiving peer; prints what it got.
peer_py() {
	local ns=$NS_LB2
	ip netns exec "$ns" python3 "$SYNC_PEER_PY" connect "$1" "${SYNC1%:*}" "${SYNC1#*:}" \
		"${SYNC_KEY_FILE:-$KEY}" "$2" 2>&1
}
refused_lines() { grep -c "sync: $1: refused" "$2"; }

# LB1 sends only to a peer that proves the key: from LB2's own address,
# a receiver without the key, with another key, or replaying a handshake
# it recorded gets no record; an honest one (the same protocol written
# again in Python) gets the dump, every tag checked.
test_auth_receiver() {
	local a0 got log=$LIB_DIR/chlbd-$CHLBD_STARTS.log
	a0=$(lb1_sync .rejected.auth)
	got=$(peer_py 10.9.0.2 honest)
	check "an honest peer with the key gets LB1's dump, tags checked ($got)" \
		[ "${got%% *}" = records ] && [ "${got#* }" -ge 1 ] || return 1
	for m in nokey wrongkey replay; do
		got=$(peer_py 10.9.0.2 $m)
		check "a receiving peer: $m: refused, no record ($got)" [ "$got" = refused ] || return 1
	done
	check "each counted (rejected.auth $a0 -> $(lb1_sync .rejected.auth))" \
		[ "$(lb1_sync .rejected.auth)" = $((a0 + 3)) ] &&
		check "logged once a minute per peer ($(refused_lines "$SYNC2" "$log") lines)" \
			[ "$(refused_lines "$SYNC2" "$log")" = 1 ] &&
		lib_wait_for 15 lb2_synced_with_lb1
}

# LB2 applies only what a peer that proved the key sent, each message at
# its place: a listener at a peer's address without the key (a local user
# who took the port), a byte flipped in a record (the backend's address),
# a message replayed, a v1 peer: nothing applied.
test_auth_sender() {
	local c0 c1 log=$LIB_DIR/chlbd-lb2-$LB2_STARTS.log q
	q=".sync | [(.peers[] | select(.peer == \"$FAKE\") | .records_received), .rejected.auth, .rejected.bad_input]"
	c0=$(lb2 -j stats | jq -c "$q")
	fake_peer - "records:10.0.0.10,10.0.2.11,9020" || return 1
	fake_peer "$KEY" "flip;replay;v1" || return 1
	c1=$(lb2 -j stats | jq -c "$q")
	diag "LB2 [from the fake peer: records auth bad_input]: $c0 -> $c1"
	check "of the fake peer's records, only the replayed message's first copy is taken" \
		[ "$(jq '.[0]' <<<"$c1")" = $(($(jq '.[0]' <<<"$c0") + 1)) ] &&
		check "no entry for what it sent without the key, flipped, or as v1" \
			lb2_lacks_ports 9020 9010 9012 &&
		check "no key, a flipped byte, a replayed message: refused, counted" \
			[ "$(jq '.[1]' <<<"$c1")" = $(($(jq '.[1]' <<<"$c0") + 3)) ] &&
		check "a v1 peer: bad input, counted" \
			[ "$(jq '.[2]' <<<"$c1")" = $(($(jq '.[2]' <<<"$c0") + 1)) ] &&
		check "logged once ($(refused_lines "$FAKE" "$log") lines)" [ "$(refused_lines "$FAKE" "$log")" = 1 ] &&
		check "the log says the peer speaks v1" grep -q "sync: $FAKE: bad input (the peer speaks sync v1" "$log"
}

# 100,000 records for a VIP LB2 lacks: they wait in a bounded queue (the
# oldest go), every record costs O(1), and `chlbctl stats` stays fast.
test_flood_for_absent_vip() {
	local n0 lat max w
	n0=$(lb2_sync .dropped.no_service)
	lib_bg flood-peer ip netns exec "$NS_LB" python3 "$SYNC_PEER_PY" listen \
		"${FAKE%:*}" "${FAKE#*:}" "$KEY" "flood:10.0.0.77,10.0.2.11,100000"
	lat=$(stats_latencies "$LB2_SOCK" 60 0.1)
	lib_wait_for 30 grep -q '^sent flood' "$LIB_DIR/flood-peer.log"
	max=$(awk '$1 > m { m = $1 } END { print m + 0 }' <<<"$lat")
	w=$(lb2_sync .waiting)
	diag "stats latency (ms) during the flood: $(awk '{ printf "%s ", $1 }' <<<"$lat")"
	diag "waiting $w, dropped no_service +$(($(lb2_sync .dropped.no_service) - n0)), received from the flood $(lb2_sync ".peers[] | select(.peer == \"$FAKE\") | .dump_entries")"
	check "the flood went through" grep -q '^sent flood' "$LIB_DIR/flood-peer.log" &&
		check "stats answered within 100 ms throughout (slowest $max ms)" \
			awk '$1 >= 100 { exit 1 }' <<<"$lat" &&
		check "at most 65536 wait ($w)" [ "$w" -le 65536 ] &&
		check "the oldest went, counted" [ $(($(lb2_sync .dropped.no_service) - n0)) -ge $((100000 - 65536)) ]
}

# Rotating the key on the running pair, as docs/operations.md says (each
# LB its own copy of the file): the new key appended everywhere, then put
# first, then the old one removed - one host after the other, with the
# sync connections cut (ss -K) after each step so every step's files meet
# in fresh handshakes. Both peers stay synced, nothing is refused, live
# records keep flowing; a file that went bad meanwhile keeps the keys read
# before; at the end a peer with only the old key is refused.
new_key() { od -An -tx1 -N32 /dev/urandom | tr -d ' \n'; }
cut_sync() {
	ip netns exec "$NS_LB2" ss -K dst 10.9.0.1 >/dev/null 2>&1
	ip netns exec "$NS_LB2" ss -K src 10.9.0.1 >/dev/null 2>&1
	lib_wait_for 15 both_synced
}
both_synced() {
	lb2_synced_with_lb1 &&
		[ "$(lb1_sync ".peers[] | select(.peer == \"$SYNC2\") | .receiving")" = synced ]
}
# keys FILE KEY...: FILE holds these keys, one a line (rewritten in place: same inode, new mtime)
keys() {
	local f=$1
	shift
	printf '%s\n' "$@" >"$f.tmp" && cat "$f.tmp" >"$f" && rm -f "$f.tmp"
}
test_key_rotation() {
	local old new a0 step f n=0
	old=$(head -1 "$KEY")
	new=$(new_key)
	a0=$(($(lb1_sync .rejected.auth) + $(lb2_sync .rejected.auth)))
	for step in "$old $new" "$new $old" "$new"; do
		for f in "$KEY2" "$KEY"; do
			# shellcheck disable=SC2086
			keys "$f" $step
			n=$((n + 1))
			check "step $n ($(basename "$f"): $([ "${step%% *}" = "$old" ] && echo old || echo new) key first, $(wc -w <<<"$step") keys): synced after a reconnect" \
				cut_sync || { diag "LB1: $(lb1_sync .peers | jq -c .) LB2: $(lb2_sync .peers | jq -c .)"; return 1; }
		done
	done
	check "no handshake refused ($a0 -> $(($(lb1_sync .rejected.auth) + $(lb2_sync .rejected.auth))))" \
		[ $(($(lb1_sync .rejected.auth) + $(lb2_sync .rejected.auth))) = "$a0" ] || return 1
	hold_start h8 4 10 || return 1
	lib_wait_for 5 lb2_has_n 10 live
	check "records flow under the new key" lb2_has_n 10 live || return 1
	hold_stop h8
	# a key file that went bad: the keys read before stay, said in the log
	echo "not a key" >"$KEY2"
	check "a broken key file: still synced after a reconnect" cut_sync &&
		check "and LB2's log says it kept the keys" \
			grep -q "sync: key file $KEY2: line 1: a key is 64 hex digits, not 9; keeping the keys read before" \
			"$LIB_DIR/chlbd-lb2-$LB2_STARTS.log" || return 1
	keys "$KEY2" "$new"
	keys "$LIB_DIR/old.key" "$old"
	check "a peer with only the old key is refused ($(SYNC_KEY_FILE=$LIB_DIR/old.key peer_py 10.9.0.2 honest))" \
		[ "$(SYNC_KEY_FILE=$LIB_DIR/old.key peer_py 10.9.0.2 honest)" = refused ] &&
		lib_wait_for 15 both_synced
}

# Options that do not go together fail at once, naming what is wrong
# (before: --sync-listen alone started with sync silently off, a peer given
# twice made two receiving connections that kept dropping each other, a
# wildcard --sync-listen made the host its own peer).
test_options() {
	local out rc
	opt_fails() {
		local want=$1
		shift
		out=$(timeout 5 "$CHLBD" -i v0 --netns "$NS_LB2" -s "$LIB_DIR/opt.sock" -f "$@" 2>&1)
		rc=$?
		check "chlbd $*: exit 2 ($rc), '$want' ($out)" [ $rc = 2 ] && grep -qF -- "$want" <<<"$out"
	}
	printf '%s\n' "$(cat "$KEY")" >"$LIB_DIR/open.key"
	chmod 644 "$LIB_DIR/open.key"
	(umask 077 && echo 0123 >"$LIB_DIR/short.key" && tr 0-9 g <"$KEY" >"$LIB_DIR/nothex.key")
	opt_fails "--sync-listen needs --sync-peer" --sync-listen 10.9.0.4:7070 &&
		opt_fails "--sync-peer needs --sync-key FILE" --sync-listen 10.9.0.4:7070 --sync-peer "$SYNC1" &&
		opt_fails "--sync-key '$LIB_DIR/open.key': mode 0644: others can read or change it" \
			--sync-listen 10.9.0.4:7070 --sync-peer "$SYNC1" --sync-key "$LIB_DIR/open.key" &&
		opt_fails "--sync-key '$LIB_DIR/short.key': line 1: a key is 64 hex digits, not 4" \
			--sync-key "$LIB_DIR/short.key" &&
		opt_fails "line 1: 'g' is not a hex digit" --sync-key "$LIB_DIR/nothex.key" &&
		opt_fails "--sync-key '$LIB_DIR/none.key': No such file or directory" \
			--sync-key "$LIB_DIR/none.key" &&
		opt_fails "--sync-peer needs --sync-listen" --sync-peer "$SYNC1" --sync-key "$KEY" &&
		opt_fails "'0.0.0.0:7070': bad value for --sync-listen: give this host's own address" \
			--sync-listen 0.0.0.0:7070 --sync-peer "$SYNC1" --sync-key "$KEY" &&
		opt_fails "'[::]:7070': bad value for --sync-listen" --sync-listen '[::]:7070' \
			--sync-peer "$SYNC1" --sync-key "$KEY" &&
		opt_fails "'$SYNC1': --sync-peer $SYNC1 given twice" --sync-listen 10.9.0.4:7070 \
			--sync-peer "$SYNC1" --sync-peer "$SYNC1" --sync-key "$KEY"
}

test_metrics() {
	local m
	m=$(ip netns exec "$NS_LB2" curl -s http://10.9.0.2:9180/metrics)
	lb2 stats | sed -n '/^sync/,$p' | sed 's/^/# LB2: /'
	check "LB2's metrics: applied records" \
		grep -qE '^chlb_sync_records_total\{result="applied"\} [1-9]' <<<"$m" &&
		check "LB2's metrics: records dropped for want of a backend" \
			grep -qE '^chlb_sync_records_total\{result="dropped_no_backend"\} [1-9]' <<<"$m" &&
		check "LB2's metrics: bad input" \
			grep -qE '^chlb_sync_rejected_total\{reason="bad_input"\} [1-9]' <<<"$m" &&
		check "LB2's metrics: authentication failures" \
			grep -qE '^chlb_sync_rejected_total\{reason="auth"\} [1-9]' <<<"$m"
}

# A joining peer receives a 500,000-entry dump while new connections open
# through LB1 (bounded sync costs: the dump is read in slices through the cursor only
# while less than 1 MiB is queued to the peer, and the live records go
# between the slices): none of the live records is dropped (peer_slow, or
# the data plane's sync ring full), LB2 ends synced with the whole dump, and
# each new connection's entry is on LB2 with the backend that answered it.
# Both hosts run the default --ct-size (1,048,576): room for the 500,000.
BIG=500000
BIG_CONNS=40
lb1_global() { ctl -j stats | jq -r ".global.$1"; }
lb1_dumping_to_lb2() { [ "$(lb1_sync ".peers[] | select(.peer == \"$SYNC2\") | .dumping")" = true ]; }
lb2_dump_entries() { lb2_sync ".peers[] | select(.peer == \"$SYNC1\") | .dump_entries"; }
# lb2_backend_of SPORT: the backend of LB2's valid entry for the client's
# IPv4 flow from SPORT ("none" without one).
lb2_backend_of() {
	lb2 -j which "$CLIENT4:$1" "$VIP4:80" tcp |
		jq -r 'if .conn.valid then .conn.backend else "none" end'
}
lb2_has_entry_of() { [ "$(lb2_backend_of "$1")" != none ]; }
# log_ms FILE PATTERN: the time of FILE's last line matching PATTERN, in ms of the day.
log_ms() {
	grep -E "$2" "$1" | tail -1 |
		awk '{ split($1, t, ":"); printf "%d\n", (t[1] * 3600 + t[2] * 60 + t[3]) * 1000 }'
}

test_big_dump_with_new_connections() {
	local slots slow0 ring0 slow1 ring1 bad=0 idx sport be want got during e0 e1 log2 t0 t1 last
	slots=$(ctl -j backend list "$(vip_spec 4)" | jq -r '[.backends[] | "\(.slot):\(.gen)"] | join(" ")')
	check "LB1's IPv4 service has three backend slots ($slots)" [ "$(wc -w <<<"$slots")" = 3 ] ||
		return 1
	# shellcheck disable=SC2086
	"$CTFILL_BIN" -t "$CHLBD_PIN/conns" $BIG "$VIP4" 80 $slots | sed 's/^/# LB1 filled: /' ||
		return 1
	slow0=$(lb1_sync .dropped.peer_slow)
	ring0=$(lb1_global sync_drop)
	lb2_fresh
	lb2_start || return 1
	log2=$LIB_DIR/chlbd-lb2-$LB2_STARTS.log
	lib_wait_for 10 lb1_dumping_to_lb2 || {
		diag "LB1 never dumped to LB2: LB2 $(lb2_peer_state "$SYNC1"), $(lb2_dump_entries) entries"
		return 1
	}
	e0=$(lb2_dump_entries)
	hold_start h7 4 $BIG_CONNS || return 1
	during=$(lb1_dumping_to_lb2 && echo yes)
	e1=$(lb2_dump_entries)
	diag "LB2 had $e0 of the dump's entries before the $BIG_CONNS connections, $e1 after"
	check "the $BIG_CONNS connections opened while LB1 was dumping to LB2 (LB2: $e1 entries in)" \
		[ "$during" = yes ] || return 1
	lib_wait_for 30 lb2_synced_with_lb1
	t0=$(log_ms "$log2" "sync: connected to $SYNC1: authenticated")
	t1=$(log_ms "$log2" "sync: $SYNC1: dump received")
	diag "LB1: $(grep -o "sync: $SYNC2: dump of .*" "$CHLBD_LOG" | tail -1)"
	diag "LB2: $(grep -o "sync: $SYNC1: dump received.*" "$log2" | tail -1), $((t1 - t0)) ms after it authenticated"
	check "LB2 synced with LB1 ($(lb2_peer_state "$SYNC1"), dump_entries $(lb2_dump_entries))" \
		lb2_synced_with_lb1 && [ "$(lb2_dump_entries)" -ge $BIG ] || return 1
	slow1=$(lb1_sync .dropped.peer_slow)
	ring1=$(lb1_global sync_drop)
	check "LB1 dropped no live record for a slow peer (peer_slow $slow0 -> $slow1)" \
		[ "$slow1" = "$slow0" ] &&
		check "nor for a full sync ring (sync_drop $ring0 -> $ring1)" \
			[ -n "$ring0" ] && [ "$ring0" != null ] && [ "$ring1" = "$ring0" ] ||
		return 1
	want=$(grep -c '^conn ' "$LIB_DIR/h7.r0")
	check "all $BIG_CONNS connections answered ($want)" [ "$want" = $BIG_CONNS ] || return 1
	# the last connection's record came last: once it is applied, all are
	last=$(awk '$1 == "conn" { p = $3 } END { print p }' "$LIB_DIR/h7.r0")
	lib_wait_for 5 lb2_has_entry_of "$last"
	while read -r _ idx sport be; do
		want=$(be_addr4 "${be#b}")
		got=$(lb2_backend_of "$sport")
		if [ "$got" != "$want" ]; then
			diag "connection $idx from $CLIENT4:$sport: answered by $be ($want), LB2's entry: $got"
			bad=$((bad + 1))
		fi
	done < <(grep '^conn ' "$LIB_DIR/h7.r0")
	hold_stop h7
	check "every new connection's entry is on LB2, with the backend that answered ($bad of $BIG_CONNS wrong)" \
		[ $bad = 0 ]
}

lib_run
