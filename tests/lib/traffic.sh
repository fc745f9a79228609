#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# Traffic for the suites, from the test tools (tests/tools/): chlb-echo
# servers on the backends, chlb-client (one-shot, held and churning
# connections, ICMP), chlb-probe (packets through the attached program with
# BPF_PROG_TEST_RUN), chlb-flood and chlb-conn; and what the traffic shows:
# counts per backend, spreads against `chlbctl sim`. Sourced by tests/lib.sh
# after runner.sh, topo.sh and daemon.sh.

ECHO_BIN=$BUILD/tests/tools/chlb-echo
CLIENT_BIN=$BUILD/tests/tools/chlb-client
PROBE_BIN=$BUILD/tests/tools/chlb-probe
FLOOD_BIN=$BUILD/tests/tools/chlb-flood
CONN_BIN=$BUILD/tests/tools/chlb-conn
LIB_BIN_VARS+=(ECHO_BIN CLIENT_BIN PROBE_BIN FLOOD_BIN CONN_BIN)

# ---- servers ----
# echo_start I: chlb-echo named bI on port 80 (TCP and UDP) in backend I's namespace.
echo_start() {
	lib_bg "echo-b$1" ip netns exec "$(ns_b "$1")" "$ECHO_BIN" -n "b$1" -p 80
}

# tcp_probe NS ADDR PORT: a TCP connection from NS succeeds within 2 s.
tcp_probe() {
	ip netns exec "$1" timeout 2 bash -c "exec 3<>/dev/tcp/$2/$3" 2>/dev/null
}

# nstat_get NS COUNTER: absolute value of a kernel SNMP counter in NS.
nstat_get() {
	ip netns exec "$1" nstat -asz "$2" 2>/dev/null | awk -v k="$2" '$1 == k { print $2 }'
}

# ---- chlb-client ----
# client MODE ARGS...: chlb-client in the client namespace.
client() { ip netns exec "$NS_C" "$CLIENT_BIN" "$@"; }

# backend_counts FILE: "NAME COUNT" lines of the last summary in FILE.
backend_counts() { awk '/^backend /{ print $2, $3 }' "$1"; }

# summary_field FILE FIELD: a field of the last summary line (ok, fail, moved, total).
summary_field() {
	awk -v f="$2" '/^summary /{ for (i = 2; i < NF; i++) if ($i == f) v = $(i + 1) } END { print v + 0 }' "$1"
}

# ---- long-lived connections (chlb-client hold) ----
# hold_start NAME FAMILY N [CLIENT ARGS]: N connections kept open; round 0 done
# when this returns. Its "conn IDX SPORT BACKEND" lines are in $LIB_DIR/NAME.r0.
hold_start() {
	local name=$1 fam=$2 n=$3 fifo fd
	shift 3
	fifo=$LIB_DIR/$name.fifo
	mkfifo "$fifo"
	lib_bg "$name" bash -c "exec \"\$@\" <\"$fifo\"" _ ip netns exec "$NS_C" "$CLIENT_BIN" hold \
		-t "$(vip_addr "$fam")" -n "$n" "$@"
	exec {fd}>"$fifo"
	eval "HOLD_FD_$name=$fd HOLD_ROUND_$name=0"
	hold_wait "$name" 0
}

# hold_wait NAME R: wait (30 s at most) until round R is reported, then put
# its lines in $LIB_DIR/NAME.rR.
hold_wait() {
	local log=$LIB_DIR/$1.log
	lib_wait_for 30 grep -q "^summary round $2 " "$log" || {
		diag "hold $1: round $2 never finished"
		return 1
	}
	awk -v r="$2" 'BEGIN { cur = 0 } { if (cur == r) print } /^summary round /{ cur = $3 + 1 }' \
		"$log" >"$LIB_DIR/$1.r$2"
}

# hold_round NAME: one more exchange on every connection; the round's lines
# (moved/fail/backend/summary) end up in $LIB_DIR/NAME.rR, R in $HOLD_LAST.
hold_round() {
	local fd r
	eval "fd=\$HOLD_FD_$1 r=\$((HOLD_ROUND_$1 + 1))"
	echo >&"$fd"
	eval "HOLD_ROUND_$1=$r"
	HOLD_LAST=$LIB_DIR/$1.r$r
	hold_wait "$1" "$r"
}

# round_intact N: the last hold round ($HOLD_LAST) answered all N connections
# and none moved to another backend.
round_intact() {
	[ "$(summary_field "$HOLD_LAST" ok)" = "$1" ] && [ "$(summary_field "$HOLD_LAST" moved)" = 0 ]
}

# hold_stop NAME: close the connections (EOF on the client's stdin).
hold_stop() {
	local fd
	eval "fd=\${HOLD_FD_$1:-}"
	[ -n "$fd" ] && exec {fd}>&-
	eval "HOLD_FD_$1="
}

# ---- churning connections (chlb-client churn) ----
# churn_start NAME [ADDR]: open/request/close in the background until churn_stop.
churn_start() {
	lib_bg "$1" ip netns exec "$NS_C" "$CLIENT_BIN" churn -t "${2:-$VIP4}" -d 600 -k 24 -q -T 3000
	eval "CHURN_PID_$1=$LIB_LASTPID"
}

# churn_stop NAME: stop it (in-flight exchanges finish) and wait for its report.
churn_stop() {
	local pid
	eval "pid=\$CHURN_PID_$1"
	# ip netns exec execs the client: the pid is the client's.
	kill -USR1 "$pid"
	lib_wait_for 10 grep -q '^summary ' "$LIB_DIR/$1.log" || diag "churn $1 did not report"
}

# ---- single connections and floods ----
# conn_from SPORT fin|rst: one connection from the client's SPORT to the
# IPv4 VIP, closed by FIN or RST; prints the backend that answered (empty if
# it failed).
conn_from() {
	ip netns exec "$NS_C" "$CONN_BIN" -t "$VIP4" -s "$1" -c "$2" | awk '$1 == "conn" { print $4 }'
}

# tx_dropped: frames the client's veth dropped (a flood must arrive whole).
tx_dropped() { ip -n "$NS_C" -j -s link show eth0 | jq '.[0].stats64.tx.dropped'; }

# flood ARGS...: chlb-flood in the client namespace, toward the IPv4 VIP;
# every packet handed to the device and none dropped there. Prints what it
# sent.
flood() {
	local d0 d1 out
	d0=$(tx_dropped)
	out=$(ip netns exec "$NS_C" "$FLOOD_BIN" -t "$VIP4" "$@") || {
		diag "chlb-flood $*: $out"
		return 1
	}
	d1=$(tx_dropped)
	diag "chlb-flood $*: $out, $((d1 - d0)) dropped by the client's veth"
	[ $((d1 - d0)) = 0 ]
}

# probe ARGS...: chlb-probe in chlbd's network namespace, the host's mount
# namespace (the pins visible).
probe() { nsenter --net="/var/run/netns/$CHLBD_NETNS" "$PROBE_BIN" "$@"; }

# ---- spread ----
# sim_shares ALGO FAMILY "I J K" -> "MIN MAX": lowest and highest keyspace
# share of one backend (fractions of all flows), as `chlbctl sim` computes
# them for exactly these backends' names (addresses, see be_addr).
sim_shares() {
	local algo=$1 names="" n out i
	for i in $3; do names="$names,$(be_addr "$2" "$i")"; done
	names=${names#,}
	n=$(echo $3 | wc -w)
	out=$("$CHLBCTL" sim --algo "$algo" --backends "$n" --names "$names" --flows 10000 --samples 1000 --json) ||
		return 1
	printf '%s\n' "$out" | awk -v n="$n" '{
		match($0, /"balance_max": *[0-9.]+/); mx = substr($0, RSTART, RLENGTH); sub(/.*: */, "", mx)
		match($0, /"balance_min": *[0-9.]+/); mn = substr($0, RSTART, RLENGTH); sub(/.*: */, "", mn)
		printf "%.6f %.6f\n", mn / n, mx / n }'
}

# within_share COUNT TOTAL MIN MAX: COUNT of TOTAL independent flows is
# consistent with a share in [MIN, MAX]: binomial, 4 standard deviations
# (a false alarm once in ~15,000 checks).
within_share() {
	awk -v c="$1" -v n="$2" -v lo="$3" -v hi="$4" 'BEGIN {
		p = (lo + hi) / 2; sd = sqrt(n * p * (1 - p))
		ok = c >= n * lo - 4 * sd && c <= n * hi + 4 * sd
		if (!ok) printf "# %d of %d outside [%.1f, %.1f] (shares %.4f..%.4f, sd %.1f)\n", c, n, n * lo - 4 * sd, n * hi + 4 * sd, lo, hi, sd
		exit !ok }'
}

# spread_ok FILE ALGO "I J K" FAMILY: every backend's count in FILE is within
# what sim predicts for that backend set.
spread_ok() {
	local file=$1 algo=$2 list=$3 fam=$4 i total shares c rc=0
	shares=$(sim_shares "$algo" "$fam" "$list") || return 1
	list=${list//r/}
	total=$(summary_field "$file" ok)
	for i in $list; do
		c=$(awk -v b="b$i" '$1 == "backend" && $2 == b { print $3 }' "$file")
		# shellcheck disable=SC2086
		within_share "${c:-0}" "$total" $shares || {
			diag "b$i: ${c:-0} of $total flows"
			rc=1
		}
	done
	return $rc
}
