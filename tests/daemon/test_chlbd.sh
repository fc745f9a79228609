#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# chlbd + chlbctl for real: round trips, bad input, dry runs, `which` against
# the attached program, restarts (TERM and KILL) that adopt the pinned state
# without moving a flow, apply/converge, socket abuse, a corrupt state file,
# teardown.
. "$(dirname "$0")/daemon_lib.sh"

VIP=10.0.0.10:80/tcp

test_roundtrip() {
	d_start || return 1
	c service add $VIP algo ring vnodes 160 fwd ipip hash 5tuple || return 1
	for i in 2 3 4 5; do c backend add $VIP 10.1.0.$i weight 100 || return 1; done
	check "4 backends listed" \
		c -j service list | jq -e '.services[0].backends == 4 and .services[0].algo == "ring"' >/dev/null || return 1
	c backend set $VIP 10.1.0.3 weight 0 || return 1
	check "drained weight 0" [ "$(c -j backend list $VIP | jq '.backends[] | select(.address == "10.1.0.3") | .weight')" = 0 ] || return 1
	c backend del $VIP 10.1.0.5 || return 1
	check "3 backends after del" [ "$(c -j backend list $VIP | jq '.backends | length')" = 3 ] || return 1
	c service add '[2001:db8::10]:443/tcp' algo maglev table 65537 fwd l2dsr || return 1
	c backend add '[2001:db8::10]:443/tcp' 2001:db8::2 || return 1
	check "maglev fingerprint listed" \
		c -j service list '[2001:db8::10]:443/tcp' | jq -e '.services[0].fingerprint | length == 8' >/dev/null || return 1
	c service del '[2001:db8::10]:443/tcp' || return 1
	check "save shows the ring service" [ "$(saved | wc -l)" = 4 ] || return 1
	check "state file persisted" grep -q "10.1.0.3 weight 0" "$D_STATE"
}

# args | expected exit | text the message must contain
BAD=(
	"service add 10.0.0.300:80/tcp|2|'10.0.0.300:80/tcp'"
	"service add 10.0.0.11:80/sctp|2|'sctp'"
	"service add 10.0.0.11:80/tcp algo rendezvous|2|'rendezvous'"
	"service add 10.0.0.11:80/tcp vnodes 0|2|'0'"
	"service add 10.0.0.11:80/tcp algo maglev table 65536|1|'65536': maglev table size must be prime"
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
	"backend add 10.0.0.50:80/tcp 2001:db8::9|1|'2001:db8::9': fwd l2dsr needs an IPv4 backend"
	"service add [2001:db8::50]:80/tcp|0|"
	"backend add [2001:db8::50]:80/tcp 10.1.0.2|1|IPv6-in-IPv4 is not supported"
	"service del [2001:db8::50]:80/tcp|0|"
	"service set 10.0.0.50:80/tcp algo maglev table 2|1|'2': maglev table size must be larger than"
)

test_bad_input() {
	local before after e args code needle out rc
	c service add 10.0.0.50:80/tcp fwd l2dsr && c backend add 10.0.0.50:80/tcp 10.1.0.2 &&
		c backend add 10.0.0.50:80/tcp 10.1.0.3 || return 1
	before=$(saved)
	for e in "${BAD[@]}"; do
		IFS='|' read -r args code needle <<<"$e"
		# shellcheck disable=SC2086
		out=$(c $args 2>&1)
		rc=$?
		check "'$args' exits $code (got $rc: $out)" [ "$rc" = "$code" ] || return 1
		[ -z "$needle" ] || check "'$args' message names '$needle': $out" \
			grep -qF -- "$needle" <<<"$out" || return 1
	done
	# JSON mode: errors are JSON too
	c -j service add $VIP | jq -e '.error | test("already exists")' >/dev/null || return 1
	after=$(saved)
	check "rejected input changed nothing" [ "$before" = "$after" ] || return 1
	out=$("$CHLBD" -i v0 -m turbo 2>&1)
	check "chlbd: unknown mode named, exit 2 ($?): $out" grep -q "'turbo': unknown mode" <<<"$out" || return 1
	c service del 10.0.0.50:80/tcp
}

test_dry_run() {
	local before out
	before=$(saved)
	out=$(c backend del $VIP 10.1.0.2 --dry-run) || return 1
	check "dry run names the moving backend: $out" grep -q "10.1.0.2 .*-> *0.00%" <<<"$out" || return 1
	c -j backend add $VIP 10.1.0.9 --dry-run | jq -e '.dry_run and .services[0].moved > 0.1' >/dev/null || return 1
	check "dry run changed nothing" [ "$before" = "$(saved)" ]
}

# which_matches PORT N SEED: the decision `chlbctl which` reports == the one
# the attached program makes, for N random flows
which_matches() {
	local port=$1 src be n
	probe which "$D_PIN" "$D_IFINDEX" 10.0.0.10 "$port" "$2" "$3" >"$LIB_DIR/probe" || return 1
	n=$(wc -l <"$LIB_DIR/probe")
	check "$2 flows probed (got $n)" [ "$n" = "$2" ] || return 1
	while read -r src _ _; do
		c -j which "$src" "10.0.0.10:$port" tcp
	done <"$LIB_DIR/probe" | jq -r .new_flow.backend >"$LIB_DIR/which"
	awk '{ print $3 }' "$LIB_DIR/probe" | diff - "$LIB_DIR/which" >"$LIB_DIR/diff" && return 0
	diag "program vs which (port $port):"
	sed 's/^/#   /' "$LIB_DIR/diff" | head
	return 1
}

test_which_agrees() {
	c service add 10.0.0.10:81/tcp algo jump || return 1
	c service add 10.0.0.10:82/tcp algo maglev table 251 || return 1
	c service add 10.0.0.10:83/tcp algo jtable table 251 || return 1
	for i in 2 3 4 5 6 7; do
		c backend add 10.0.0.10:81/tcp 10.1.0.$i && c backend add 10.0.0.10:82/tcp 10.1.0.$i &&
			c backend add 10.0.0.10:83/tcp 10.1.0.$i weight $((i * 100)) || return 1
	done
	c backend del 10.0.0.10:83/tcp 10.1.0.4 || return 1
	check "jtable keeps its bucket order in the state" \
		saved | grep -q "10.0.0.10:83/tcp algo jtable table 251 buckets" || return 1
	which_matches 80 200 7 && which_matches 81 150 81 && which_matches 82 150 82 &&
		which_matches 83 150 83
}

# connection entries of the probed flows, as chlbctl which reports them
conns() {
	awk '{ print $1 }' <<<"$1" | head -60 | while read -r src; do
		c -j which "$src" 10.0.0.10:80 tcp
	done | jq -c '.conn'
}

prog_id() { bpftool -j link show pinned "$D_PIN/link_$D_IFINDEX" | jq .prog_id; }

restart_keeps_flows() {
	local sig=$1 fp_before fp_after before after conn_before prog_before
	before=$(probe which "$D_PIN" "$D_IFINDEX" 10.0.0.10 80 200 42)
	conn_before=$(conns "$before")
	prog_before=$(prog_id)
	fp_before=$(c -j service list | jq -c '[.services[] | [.service, .fingerprint]]')
	local state_before
	state_before=$(saved)
	d_stop "$sig"
	check "program still attached while chlbd is down" \
		ip -n "$D_NS" link show v0 | grep -q xdpgeneric || return 1
	check "still forwarding while chlbd is down" \
		[ "$(probe which "$D_PIN" "$D_IFINDEX" 10.0.0.10 80 200 42)" = "$before" ] || return 1
	d_start || return 1
	check "adopted pinned maps" grep -q "adopted pinned maps" "$D_LOG" || return 1
	after=$(probe which "$D_PIN" "$D_IFINDEX" 10.0.0.10 80 200 42)
	check "no flow re-hashed across the restart" [ "$before" = "$after" ] || return 1
	check "some probed flows have connection entries" grep -q slot <<<"$conn_before" || return 1
	check "connection entries survived" [ "$conn_before" = "$(conns "$before")" ] || return 1
	check "program replaced in place (prog $prog_before -> $(prog_id))" \
		[ "$(prog_id)" != "$prog_before" ] || return 1
	fp_after=$(c -j service list | jq -c '[.services[] | [.service, .fingerprint]]')
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
	c apply -f "$f" || return 1
	check "converged to exactly the file" [ "$(c -j service list | jq '.services | length')" = 2 ] || return 1
	if c service list $VIP >/dev/null 2>&1; then
		diag "$VIP survived an apply of a file without it"
		return 1
	fi
	swaps1=$(c -j service list | jq -c '[.services[].swaps]')
	c apply -f "$f" || return 1
	swaps2=$(c -j service list | jq -c '[.services[].swaps]')
	check "apply is idempotent (swaps $swaps1 -> $swaps2)" [ "$swaps1" = "$swaps2" ] || return 1
	c save >"$LIB_DIR/saved" && c apply -f "$LIB_DIR/saved" || return 1
	check "save | apply is a no-op" [ "$swaps1" = "$(c -j service list | jq -c '[.services[].swaps]')" ] || return 1
	sed -i '/10.1.0.5/d' "$f"
	check "dry run of the file shows the change" \
		c apply -f "$f" --dry-run | grep -q "10.0.0.21:53/udp: change" || return 1
	c apply -f "$f" || return 1
	check "one backend less" [ "$(c -j backend list 10.0.0.21:53/udp | jq '.backends | length')" = 1 ]
}

test_apply_bad_line() {
	local f=$LIB_DIR/bad.conf before out
	before=$(saved)
	printf 'service add 10.0.0.30:80/tcp\nbackend add 10.0.0.30:80/tcp 10.1.0.2\nbackend add 10.0.0.30:80/tcp 10.1.0.3 weight lots\n' >"$f"
	out=$(c apply -f "$f" 2>&1)
	check "exit 1" [ $? = 1 ] || return 1
	check "names file, line and token: $out" grep -qF "$f:3: 'lots'" <<<"$out" || return 1
	check "nothing from the file applied" [ "$before" = "$(saved)" ]
}

test_socket_abuse() {
	local out t0
	# oversized
	out=$(python3 - "$D_SOCK" <<-'EOF'
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
	out=$(printf 'service add 1.2.3.4:80/tcp\0junk' | socat -t 5 - UNIX-CONNECT:"$D_SOCK")
	check "NUL byte refused: $out" grep -q "NUL" <<<"$out" || return 1
	out=$(head -c 3000 /dev/urandom | tr -d '\0' | socat -t 5 - UNIX-CONNECT:"$D_SOCK")
	check "garbage gets a JSON error: ${out:0:80}" jq -e .error <<<"$out" >/dev/null || return 1
	# a client that connects and never finishes its request blocks nobody
	lib_bg hang bash -c "sleep 8 | socat - UNIX-CONNECT:$D_SOCK"
	lib_bg hang2 bash -c "(printf 'service li'; sleep 8) | socat - UNIX-CONNECT:$D_SOCK"
	sleep 0.3
	t0=$(date +%s%N)
	c service list >/dev/null || return 1
	check "answered within 1 s despite hanging clients" [ $(($(date +%s%N) - t0)) -lt 1000000000 ] || return 1
	check "socket is mode 0600" [ "$(stat -c %a "$D_SOCK")" = 600 ] || return 1
	check "chlbd still alive" kill -0 "$D_PID"
}

test_corrupt_state_file() {
	local n_now n_prev out
	n_now=$(saved | wc -l)
	c backend add 10.0.0.20:80/tcp 10.1.0.9 || return 1
	d_stop TERM
	truncate -s 50 "$D_STATE"
	d_start || return 1
	check "log says the last good copy was used" grep -q "last good copy" "$D_LOG" || return 1
	check "started from the previous state, not empty" [ "$(saved | wc -l)" = "$n_now" ] || return 1
	d_stop TERM
	truncate -s 50 "$D_STATE"
	echo "service add 10.0.0.1:80/tcp" >"$D_STATE.prev"
	out=$(timeout 10 "$CHLBD" -i v0 --netns "$D_NS" -m xdp-generic -s "$D_SOCK" --pin-dir "$D_PIN" \
		--state "$D_STATE" -f 2>&1)
	check "refuses to start without a good copy (exit $?)" [ $? != 0 ] || return 1
	check "says why: $out" grep -q "truncated or corrupt" <<<"$out" || return 1
	n_prev=$n_now
	# put a good state back for the next tests
	c_quiet save
	printf 'service add 10.0.0.20:80/tcp\nbackend add 10.0.0.20:80/tcp 10.1.0.2\n' >"$LIB_DIR/good"
	rm -f "$D_STATE" "$D_STATE.prev"
	d_start -c "$LIB_DIR/good" || return 1
	check "config file applied at start" [ "$(saved | wc -l)" = 2 ] || return 1
	: "$n_prev"
}

test_sighup_reloads_config() {
	printf 'service add 10.0.0.20:80/tcp\nbackend add 10.0.0.20:80/tcp 10.1.0.2\nbackend add 10.0.0.20:80/tcp 10.1.0.3\n' >"$LIB_DIR/good"
	kill -HUP "$D_PID"
	lib_wait_for 5 bash -c "[ \"\$($CHLBCTL -s $D_SOCK -j backend list | jq '.backends | length')\" = 2 ]"
}

test_bad_config_at_start() {
	local before
	before=$(saved)
	printf 'service add 10.0.0.20:80/tcp\nbackend add 10.0.0.20:80/tcp 10.1.0.2 weight heavy\n' >"$LIB_DIR/good"
	d_stop TERM
	d_start -c "$LIB_DIR/good" || return 1
	check "says nothing from the file was applied" grep -q "'heavy'.*nothing from it applied" "$D_LOG" || return 1
	check "kept the state it had" [ "$before" = "$(saved)" ]
}

forwards_to_99() { probe which "$D_PIN" "$D_IFINDEX" 10.0.0.60 80 3 5 | grep -q " 10.1.0.99$"; }

# a backend whose neighbour is unknown gets its next hop once the kernel knows it
test_nexthop_refresh() {
	c service add 10.0.0.60:80/tcp && c backend add 10.0.0.60:80/tcp 10.1.0.99 || return 1
	if forwards_to_99; then
		diag "forwarded before the neighbour was known"
		return 1
	fi
	ip -n "$D_NS" neigh replace 10.1.0.99 lladdr 02:00:00:00:01:99 dev v0 nud permanent
	check "next hop picked up within 5 s" lib_wait_for 5 forwards_to_99 || return 1
	c service del 10.0.0.60:80/tcp
}

# a backend shared by several services leaves in one batch: one swap per service
test_batch_burst() {
	local p before after
	for p in 90 91 92; do
		printf 'service add 10.0.0.40:%s/tcp\nbackend add 10.0.0.40:%s/tcp 10.1.0.2\nbackend add 10.0.0.40:%s/tcp 10.1.0.3\n' \
			$p $p $p
	done | c batch -f - || return 1
	before=$(c -j service list | jq -c '[.services[] | select(.service | startswith("10.0.0.40")) | .swaps]')
	for p in 90 91 92; do echo "backend del 10.0.0.40:$p/tcp 10.1.0.3"; done | c batch -f - || return 1
	after=$(c -j service list | jq -c '[.services[] | select(.service | startswith("10.0.0.40")) | .swaps]')
	check "one swap per service ($before -> $after)" \
		[ "$(jq -n "$after | add") " = "$(jq -n "$before | add + 3") " ] || return 1
	printf 'backend del 10.0.0.40:90/tcp 10.1.0.2\nbackend del 10.0.0.40:91/tcp 10.1.0.77\n' >"$LIB_DIR/b"
	if c batch -f "$LIB_DIR/b" 2>/dev/null; then
		diag "a batch with one bad line was accepted"
		return 1
	fi
	check "first line not applied" [ "$(c -j backend list 10.0.0.40:90/tcp | jq '.backends | length')" = 1 ]
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
	if c service list 10.9.9.9:80/tcp >/dev/null 2>&1; then
		diag "the first daemon sees the second one's service"
		rc=1
	fi
	check "both programs attached" ip -n "$ns2" link show v0 | grep -q xdpgeneric || rc=1
	"$CHLBCTL" -s "$sock2" shutdown --detach >/dev/null || rc=1
	wait "$pid2"
	check "first daemon unaffected" c service list >/dev/null || rc=1
	out=$(timeout 10 "$CHLBD" -i v0 --netns "$ns2" -m xdp-generic -s "$LIB_DIR/d3.sock" \
		--pin-dir "$D_PIN" --state "$LIB_DIR/d3.state" -f 2>&1)
	check "a second chlbd on the same pin dir refuses: $out" grep -q "in use by another chlbd" <<<"$out" || rc=1
	return $rc
}

test_shutdown_detach() {
	c shutdown --detach || return 1
	for _ in $(seq 50); do kill -0 "$D_PID" 2>/dev/null || break; sleep 0.1; done
	if kill -0 "$D_PID" 2>/dev/null; then
		diag "chlbd still running after shutdown"
		return 1
	fi
	D_PID=
	if ip -n "$D_NS" link show v0 | grep -q xdp; then
		diag "program still attached after shutdown --detach"
		return 1
	fi
	check "maps unpinned" [ -z "$(ls "$D_PIN" 2>/dev/null)" ]
}

lib_run
