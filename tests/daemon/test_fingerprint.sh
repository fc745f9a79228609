#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# Table fingerprints that show whether LB hosts agree, and
# `chlbctl which` after a restart:
#  - two chlbds (two network namespaces, pin directories, state files)
#    given the same services, one in one batch, the other in another order
#    (ring, maglev: statement by statement; jump, jtable: one batch) after
#    unrelated services that take other backend slots first: equal
#    fingerprints (service list and the chlb_table_info metric) for ring,
#    maglev, jump and jtable, and the attached programs send 200 probed
#    flows to the same backends; jump added one statement at a time in
#    another order (buckets in arrival order), a backend missing or another
#    weight on one host: another fingerprint, and flows differ;
#  - a restart (TERM and KILL) whose state differs from the pinned table
#    (the state file of before a removal put back while chlbd is down):
#    `which` names the table each packet meets, the rebuilt one for a new
#    flow and the adopted one for an established flow without an entry,
#    with their fingerprints, and the attached program agrees (SYNs and lone
#    ACKs through it); then the connection entry the ACK wrote.
. "$(dirname "$0")/../lib.sh"
daemon_fixture

MPORT=9181
NS2=chlb-$LIB_ID-d2
SOCK2=$LIB_DIR/chlbd2.sock
STATE2=$LIB_DIR/chlbd2.state
PIN2=
PID2=
IFX2=

# host 2: a namespace like topo_daemon's, its own chlbd
host2_up() {
	local i
	lib_ns_add "$NS2"
	lib_veth "$NS2" v0 v1 || die "veth"
	ip -n "$NS2" addr add 10.1.0.1/24 dev v0
	for i in $(seq 2 60); do
		ip -n "$NS2" neigh replace "10.1.0.$i" lladdr "02:00:00:00:01:$(printf %02x "$i")" \
			dev v0 nud permanent
	done
	IFX2=$(ip -n "$NS2" -o link show v0 | cut -d: -f1)
	lib_pindir d2
	PIN2=$LIB_PINDIR
	lib_bg chlbd2 "$CHLBD" -i v0 --netns "$NS2" -m xdp-generic -s "$SOCK2" --pin-dir "$PIN2" \
		--state "$STATE2" --metrics "127.0.0.1:$MPORT" -f
	PID2=$LIB_LASTPID
	lib_wait_up chlbd2 ctl2_quiet service list
}
ctl2() { "$CHLBCTL" -s "$SOCK2" "$@"; }
ctl2_quiet() { "$CHLBCTL" -s "$SOCK2" "$@" >/dev/null 2>&1; }
probe2() { nsenter --net="/var/run/netns/$NS2" "$PROBE_BIN" "$@"; }

# fps CTL: "service fingerprint" per service, sorted
fps() { "$@" -j service list | jq -r '.services[] | "\(.service) \(.fingerprint)"' | sort; }
fp_of() { "$1" -j service list "$2" | jq -r '.services[0].fingerprint'; }
# metric_fp VIP: the fingerprint label of chlb_table_info on host 2's metrics
metric_fp() {
	ip netns exec "$NS2" curl -sS -m 5 "http://127.0.0.1:$MPORT/metrics" |
		grep -F "chlb_table_info{vip=\"$1\"," | grep -oE 'fingerprint="[0-9a-f]{8}"' | cut -d'"' -f2
}

SVCS="10.0.0.20:80/tcp 10.0.0.21:80/tcp 10.0.0.22:80/tcp 10.0.0.23:80/tcp 10.0.0.24:80/tcp"
# host 1: one batch, backends in address order
HOST1="service add 10.0.0.20:80/tcp algo ring fwd ipip
backend add 10.0.0.20:80/tcp 10.1.0.2
backend add 10.0.0.20:80/tcp 10.1.0.3 weight 200
backend add 10.0.0.20:80/tcp 10.1.0.4
backend add 10.0.0.20:80/tcp 10.1.0.5
service add 10.0.0.21:80/tcp algo maglev fwd ipip
backend add 10.0.0.21:80/tcp 10.1.0.2
backend add 10.0.0.21:80/tcp 10.1.0.3
backend add 10.0.0.21:80/tcp 10.1.0.4 weight 50
backend add 10.0.0.21:80/tcp 10.1.0.5
service add 10.0.0.22:80/tcp algo jump fwd ipip
backend add 10.0.0.22:80/tcp 10.1.0.2
backend add 10.0.0.22:80/tcp 10.1.0.3
backend add 10.0.0.22:80/tcp 10.1.0.4 weight 300
service add 10.0.0.23:80/tcp algo jtable table 4099 fwd ipip
backend add 10.0.0.23:80/tcp 10.1.0.2
backend add 10.0.0.23:80/tcp 10.1.0.3
backend add 10.0.0.23:80/tcp 10.1.0.4
service add 10.0.0.24:80/tcp algo jump fwd ipip
backend add 10.0.0.24:80/tcp 10.1.0.2
backend add 10.0.0.24:80/tcp 10.1.0.3
backend add 10.0.0.24:80/tcp 10.1.0.4"

# host 2: unrelated services first (they take backend slots), then the same
# services in reverse order: ring and maglev one statement at a time,
# backends in reverse order; jump and jtable as one transaction (`batch`),
# statements in reverse order (a transaction numbers new buckets in address
# order; one statement at a time they are numbered in arrival order, which
# 10.0.0.24 shows: another table, and another fingerprint)
HOST2="service add 10.0.0.99:80/tcp algo maglev fwd ipip
backend add 10.0.0.99:80/tcp 10.1.0.30
backend add 10.0.0.99:80/tcp 10.1.0.31
backend add 10.0.0.99:80/tcp 10.1.0.32
service add 10.0.0.98:80/tcp fwd ipip
backend add 10.0.0.98:80/tcp 10.1.0.5
backend add 10.0.0.98:80/tcp 10.1.0.4
service add 10.0.0.24:80/tcp algo jump fwd ipip
backend add 10.0.0.24:80/tcp 10.1.0.4
backend add 10.0.0.24:80/tcp 10.1.0.3
backend add 10.0.0.24:80/tcp 10.1.0.2
service add 10.0.0.21:80/tcp algo maglev fwd ipip
backend add 10.0.0.21:80/tcp 10.1.0.5
backend add 10.0.0.21:80/tcp 10.1.0.4 weight 50
backend add 10.0.0.21:80/tcp 10.1.0.3
backend add 10.0.0.21:80/tcp 10.1.0.2
service add 10.0.0.20:80/tcp algo ring fwd ipip
backend add 10.0.0.20:80/tcp 10.1.0.5
backend add 10.0.0.20:80/tcp 10.1.0.4
backend add 10.0.0.20:80/tcp 10.1.0.3 weight 200
backend add 10.0.0.20:80/tcp 10.1.0.2"
HOST2_BATCH="service add 10.0.0.23:80/tcp algo jtable table 4099 fwd ipip
backend add 10.0.0.23:80/tcp 10.1.0.4
backend add 10.0.0.23:80/tcp 10.1.0.3
backend add 10.0.0.23:80/tcp 10.1.0.2
service add 10.0.0.22:80/tcp algo jump fwd ipip
backend add 10.0.0.22:80/tcp 10.1.0.4 weight 300
backend add 10.0.0.22:80/tcp 10.1.0.3
backend add 10.0.0.22:80/tcp 10.1.0.2"

test_hosts_agree() {
	local f=$LIB_DIR/host1.conf i a b line rc=0
	chlbd_start xdp-generic || return 1
	host2_up || return 1
	printf '%s\n' "$HOST1" >"$f"
	ctl apply -f "$f" || return 1
	while read -r line; do
		# shellcheck disable=SC2086
		ctl2 $line >/dev/null || return 1
	done < <(head -8 <<<"$HOST2")
	ctl2 batch -f - <<<"$HOST2_BATCH" >/dev/null || return 1
	while read -r line; do
		# shellcheck disable=SC2086
		ctl2 $line >/dev/null || return 1
	done < <(tail -n +9 <<<"$HOST2")
	a=$(ctl -j backend list 10.0.0.21:80/tcp | jq -c '[.backends[] | [.address, .slot]] | sort')
	b=$(ctl2 -j backend list 10.0.0.21:80/tcp | jq -c '[.backends[] | [.address, .slot]] | sort')
	check "the hosts gave the backends other slots: $a vs $b" [ "$a" != "$b" ] || return 1
	a=$(fps ctl | grep -E '10\.0\.0\.2[0-3]')
	b=$(fps ctl2 | grep -E '10\.0\.0\.2[0-3]')
	check "ring, maglev, jump, jtable: the same fingerprints on both hosts: $(tr '\n' ' ' <<<"$a")" \
		[ "$a" = "$b" ] && [ "$(grep -c ' [0-9a-f]\{8\}$' <<<"$a")" = 4 ] || return 1
	a=$(fp_of ctl 10.0.0.24:80/tcp)
	b=$(fp_of ctl2 10.0.0.24:80/tcp)
	check "jump configured one statement at a time in another order: buckets in another order, another fingerprint ($a vs $b)" \
		[ "$a" != "$b" ] && [ ${#a} = 8 ] && [ ${#b} = 8 ] || return 1
	a=$(probe which "$CHLBD_PIN" "$D_IFINDEX" 10.0.0.24 80 200 7)
	b=$(probe2 which "$PIN2" "$IFX2" 10.0.0.24 80 200 7)
	check "and the programs send $(diff <(echo "$a") <(echo "$b") | grep -c '^<') of 200 flows to 10.0.0.24 elsewhere" \
		[ "$a" != "$b" ] || return 1
	# the attached programs agree: SYNs of 200 flows to each VIP
	for i in 20 21 22 23; do
		a=$(probe which "$CHLBD_PIN" "$D_IFINDEX" 10.0.0.$i 80 200 7)
		b=$(probe2 which "$PIN2" "$IFX2" 10.0.0.$i 80 200 7)
		check "10.0.0.$i: 200 flows to the same backends on both hosts" \
			[ "$a" = "$b" ] && [ "$(grep -c ' 10\.1\.0\.' <<<"$a")" = 200 ] || rc=1
	done
	for i in $SVCS; do
		check "$i: host 2's metric has service list's fingerprint" \
			[ "$(metric_fp "$i")" = "$(fp_of ctl2 "$i")" ] || rc=1
	done
	return $rc
}

test_one_backend_missing() {
	local before i a b rc=0
	before=$(fps ctl2)
	ctl2 backend del 10.0.0.20:80/tcp 10.1.0.4 >/dev/null || return 1
	ctl2 backend del 10.0.0.21:80/tcp 10.1.0.4 >/dev/null || return 1
	ctl2 backend set 10.0.0.22:80/tcp 10.1.0.3 weight 50 >/dev/null || return 1
	ctl2 backend del 10.0.0.23:80/tcp 10.1.0.2 >/dev/null || return 1
	for i in 10.0.0.20:80/tcp 10.0.0.21:80/tcp 10.0.0.22:80/tcp 10.0.0.23:80/tcp; do
		a=$(fp_of ctl "$i")
		b=$(fp_of ctl2 "$i")
		check "$i: a backend missing (or another weight) on host 2: $a vs $b" [ "$a" != "$b" ] || rc=1
		check "$i: host 2's metric follows: $(metric_fp "$i")" [ "$(metric_fp "$i")" = "$b" ] || rc=1
	done
	a=$(probe which "$CHLBD_PIN" "$D_IFINDEX" 10.0.0.21 80 200 8)
	b=$(probe2 which "$PIN2" "$IFX2" 10.0.0.21 80 200 8)
	check "and the programs disagree on some flows ($(diff <(echo "$a") <(echo "$b") | grep -c '^<') of 200)" \
		[ "$a" != "$b" ] || rc=1
	check "the unrelated services' fingerprints did not move" \
		[ "$(grep 10.0.0.9 <<<"$before")" = "$(fps ctl2 | grep 10.0.0.9)" ] || rc=1
	# put back: equal again (the fingerprint is the current table's, whatever
	# the history), and a dry run says so before the change
	a=$(ctl2 -j backend add 10.0.0.20:80/tcp 10.1.0.4 --dry-run | jq -r '.services[0].fingerprint')
	b=$(ctl2 -j backend set 10.0.0.22:80/tcp 10.1.0.3 weight 100 --dry-run | jq -r '.services[0].fingerprint')
	check "--dry-run: the fingerprints after the change are host 1's ($a, $b)" \
		[ "$a" = "$(fp_of ctl 10.0.0.20:80/tcp)" ] && [ "$b" = "$(fp_of ctl 10.0.0.22:80/tcp)" ] || rc=1
	check "--dry-run (text): the fingerprint after" \
		ctl2 backend add 10.0.0.20:80/tcp 10.1.0.4 --dry-run | grep -qx "  table fingerprint after: $a" || rc=1
	ctl2 backend add 10.0.0.20:80/tcp 10.1.0.4 >/dev/null || return 1
	ctl2 backend add 10.0.0.21:80/tcp 10.1.0.4 weight 50 >/dev/null || return 1
	ctl2 backend set 10.0.0.22:80/tcp 10.1.0.3 weight 100 >/dev/null || return 1
	check "ring, maglev and jump agree again once the backend is back" \
		[ "$(fp_of ctl 10.0.0.20:80/tcp) $(fp_of ctl 10.0.0.21:80/tcp) $(fp_of ctl 10.0.0.22:80/tcp)" = \
			"$(fp_of ctl2 10.0.0.20:80/tcp) $(fp_of ctl2 10.0.0.21:80/tcp) $(fp_of ctl2 10.0.0.22:80/tcp)" ] || rc=1
	lib_stop "$PID2" TERM
	return $rc
}

VIP=10.0.0.30
# restart_which SIGNAL: chlbd comes back to a state that rebuilds another
# table than the pinned one; `which` must name the table each packet meets.
restart_which() {
	local sig=$1 fp_full fp_small i out syn ack tabs n=0 moved=0 rc=0
	# a fresh data plane: no SYN stamps of earlier probes (a lone ACK landing
	# on a fresh stamp is taken for a handshake ACK)
	ctl_quiet shutdown --detach
	chlbd_stop TERM
	rm -f "$CHLBD_STATE" "$CHLBD_STATE.prev"
	lib_pindir "r$sig"
	CHLBD_PIN=$LIB_PINDIR
	# history 1 s: the removal's table is alone in the view when chlbd stops
	chlbd_start xdp-generic --history-ms 1000 || return 1
	ctl service add $VIP:80/tcp algo ring fwd ipip >/dev/null || return 1
	for i in 2 3 4 5 6; do ctl backend add $VIP:80/tcp 10.1.0.$i >/dev/null || return 1; done
	fp_full=$(fp_of ctl $VIP:80/tcp)
	cp "$CHLBD_STATE" "$LIB_DIR/state.full"
	ctl backend del $VIP:80/tcp 10.1.0.6 >/dev/null || return 1
	fp_small=$(fp_of ctl $VIP:80/tcp)
	lib_wait_for 5 tables_are 1 || { diag "the replaced table never left the view"; return 1; }
	chlbd_stop "$sig"
	# while chlbd is down, its state file goes back to before the removal
	cp "$LIB_DIR/state.full" "$CHLBD_STATE"
	chlbd_start xdp-generic || return 1
	lib_wait_for 5 tables_are 2 || { diag "no rebuild after the restart"; return 1; }
	check "service list: the rebuilt table's fingerprint, as before the removal ($fp_full)" \
		[ "$(fp_of ctl $VIP:80/tcp)" = "$fp_full" ] || return 1
	tabs=$(ctl -j which 192.0.2.1:1000 $VIP:80 tcp | jq -c '[.tables[] | [.fingerprint, .adopted]]')
	check "which: the view's tables, rebuilt then adopted: $tabs" \
		[ "$tabs" = "[[\"$fp_full\",false],[\"$fp_small\",true]]" ] || return 1
	out=$(ctl which 192.0.2.1:1000 $VIP:80 tcp)
	check "which (text): the adopted table is marked, and named where it decides: $out" \
		grep -qE "^table 1: +slot [0-9]+ fingerprint $fp_small \(adopted\) -> 10\.1\.0\." <<<"$out" &&
		grep -qE "^established: +10\.1\.0\.[0-9]+ .*by oldest table in the view \(table 1, fingerprint $fp_small, adopted\)$" <<<"$out" &&
		grep -qE "^new flow: +10\.1\.0\.[0-9]+ .*\(table 0, fingerprint $fp_full\)$" <<<"$out" || return 1

	# 120 established flows without an entry: a lone ACK each through the program
	ack=$(probe ack "$CHLBD_PIN" "$D_IFINDEX" $VIP 80 120 11)
	while read -r src _ be; do
		n=$((n + 1))
		# the oldest table (the adopted one) decides an entry-less flow, as the
		# program did; where the rebuilt one agrees, no entry is written and
		# `which` says so, else the ACK wrote an entry and `which` follows it
		out=$(ctl -j which "$src" $VIP:80 tcp | jq -r --arg be "$be" '
			if .tables[-1].decision.backend != $be then "oldest table: \(.tables[-1].decision.backend)"
			elif .tables[0].decision.backend == $be then
				"agree \(.established_by) \(.established.backend) \(.established_table) \(.conn)"
			else "disagree \(.established_by) \(.established.backend) \(.conn.valid)" end')
		case $out in
		"agree oldest table in the view $be 1 null") ;;
		"disagree connection entry $be true") moved=$((moved + 1)) ;;
		*) diag "$src: the program sent the ACK to $be; which: $out"; rc=1 ;;
		esac
	done <<<"$ack"
	check "which: $n entry-less established flows as the program decides them (the adopted table), $moved where the tables disagree, each now with its entry" \
		[ $rc = 0 ] && [ "$n" = 120 ] && [ "$moved" -gt 0 ] || return 1
	# new flows: SYNs through the program, decided by the rebuilt table
	syn=$(probe which "$CHLBD_PIN" "$D_IFINDEX" $VIP 80 60 12)
	n=0
	while read -r src _ be; do
		out=$(ctl -j which "$src" $VIP:80 tcp | jq -r '"\(.new_flow.backend) \(.new_flow_table)"')
		[ "$out" = "$be 0" ] && n=$((n + 1)) || diag "$src: which says new flow -> $out, the program sent the SYN to $be"
	done <<<"$syn"
	check "which: $n of 60 new flows as the program decides SYNs (the rebuilt table)" [ "$n" = 60 ]
}
tables_are() { [ "$(ctl -j service list $VIP:80/tcp | jq .services[0].tables)" = "$1" ]; }

test_restart_which_sigterm() { restart_which TERM; }
test_restart_which_sigkill() { restart_which KILL; }

lib_run
