#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# chlbctl's JSON and command line, and safe configuration, against a real
# chlbd started with -c FILE: JSON that stays valid for an interface named
# q"x, invalid UTF-8 and sim's names (json-c, no \/, fixed decimals);
# -j/-s after the command; exit 2 for a bad value chlbd finds; apply of an
# empty file refused without --force (and on SIGHUP); SIGHUP's log of what it changes
# (undoing chlbctl's changes marked); a VIP on one of chlbd's own addresses
# refused without force (requests, apply, SIGHUP, -c at start); a VIP
# without a port refused, naming :0. Every refused input changes nothing
# (`save` before and after).
. "$(dirname "$0")/../lib.sh"
daemon_fixture

CONF=$LIB_DIR/cli.conf
A=10.0.0.10:80/tcp
B=10.0.0.20:53/udp
cat >"$CONF" <<EOF
service add $A algo jump
backend add $A 10.1.0.2
backend add $A 10.1.0.3
EOF

# valid_json: stdin is one strictly valid JSON document (UTF-8 only, no NaN)
valid_json() {
	python3 -c '
import json, sys
data = sys.stdin.buffer.read()
def bad(c): raise ValueError("not JSON: " + c)
json.loads(data.decode("utf-8"), parse_constant=bad)
if b"\\/" in data: raise ValueError("escaped slash")'
}

# pyjson EXPR: EXPR over the JSON document on stdin (d), printed
pyjson() { python3 -c "import json, sys; d = json.load(sys.stdin); print($1)"; }

# raw TEXT: send TEXT (bytes, printf escapes) as one request; the reply on stdout
raw() {
	python3 - "$CHLBD_SOCK" "$1" <<'EOF'
import socket, sys
s = socket.socket(socket.AF_UNIX)
s.connect(sys.argv[1])
s.sendall(sys.argv[2].encode("utf-8", "surrogateescape").decode("unicode_escape").encode("latin-1"))
s.shutdown(socket.SHUT_WR)
out = b""
while True:
    b = s.recv(65536)
    if not b:
        break
    out += b
sys.stdout.buffer.write(out)
EOF
}

# expect CODE NEEDLE ARGS...: chlbctl ARGS exits CODE and says NEEDLE (stdout or stderr)
expect() {
	local code=$1 needle=$2 out rc
	shift 2
	out=$(ctl "$@" 2>&1)
	rc=$?
	check "'$*' exits $code (got $rc: $out)" [ "$rc" = "$code" ] || return 1
	check "'$*' says '$needle': $out" grep -qF -- "$needle" <<<"$out"
}

test_start() {
	chlbd_start xdp-generic -c "$CONF" || return 1
	check "config applied at start" [ "$(saved | wc -l)" = 3 ]
}

# a reload logs what it changes, and marks what undoes chlbctl's changes since
test_sighup_diff() {
	local log
	ctl backend set $A 10.1.0.2 weight 0 && ctl backend add $A 10.1.0.4 &&
		ctl service add $B && ctl service set $A hash src || return 1
	echo "backend add $A 10.1.0.5" >>"$CONF"
	kill -HUP "$CHLBD_PID"
	lib_wait_for 5 grep -q "SIGHUP: converged" "$CHLBD_LOG" || return 1
	log=$(grep "SIGHUP: " "$CHLBD_LOG")
	sed 's/^/#   /' <<<"$log"
	local u=" (undoes a change made since the last load)"
	for l in "service set $A hash src -> 5tuple$u" \
		"backend set $A 10.1.0.2 weight 0 -> 100$u" \
		"backend del $A 10.1.0.4$u" \
		"service del $B (0 backends)$u" \
		"backend add $A 10.1.0.5 weight 100" \
		"5 changes: services 0 added, 1 changed, 1 removed; backends 1 added, 1 changed, 1 removed"; do
		check "logged: $l" grep -qF -- "SIGHUP: $l" <<<"$log" || return 1
	done
	check "the file's own change is not marked" \
		nogrep -qF "10.1.0.5 weight 100 (undoes" <<<"$log" || return 1
	check "converged to the file" [ "$(saved | wc -l)" = 4 ] || return 1
	# a second reload: nothing changes, and it says so
	kill -HUP "$CHLBD_PID"
	lib_wait_for 5 grep -q "SIGHUP: nothing changes" "$CHLBD_LOG"
}

# sighup_refused WHAT EDIT WHY: a SIGHUP after EDIT (a command run on $CONF)
# is refused, the log names WHY, and nothing changes; $CONF is put back.
sighup_refused() {
	local before n rc=0
	before=$(saved)
	cp "$CONF" "$CONF.good"
	eval "$2"
	n=$(grep -c "nothing from the file applied" "$CHLBD_LOG")
	kill -HUP "$CHLBD_PID"
	lib_wait_for 5 bash -c "[ \$(grep -c 'nothing from the file applied' '$CHLBD_LOG') -gt $n ]" || rc=1
	check "SIGHUP refuses $1, naming it" grep -qF -- "$3" "$CHLBD_LOG" || rc=1
	check "nothing changed" [ "$before" = "$(saved)" ] || rc=1
	cp "$CONF.good" "$CONF"
	return $rc
}

test_sighup_refuses_own_address() {
	sighup_refused "an own address" 'echo "service add 10.1.0.1:22/tcp" >>"$CONF"' \
		"'10.1.0.1:22/tcp': 10.1.0.1 is an address of this host (v0)"
}

# an empty file (a config tool that wrote nothing) must not delete every service on a reload
test_sighup_refuses_empty_file() {
	sighup_refused "an empty file" ': >"$CONF"' "the file would delete every service (all"
}

# stats text: the counters line up under their header however long a row's
# name is (an IPv6 VIP and backend make the longest)
test_stats_columns_line_up() {
	local v6=[2001:db8::77]:8080/tcp out widths
	ctl service add "$v6" >/dev/null &&
		ctl backend add "$v6" 2001:db8:ffff:ffff:ffff:ffff:ffff:fff1 >/dev/null || return 1
	out=$(ctl stats) || return 1
	# the header (PACKETS ...) and every service and backend row: one length
	widths=$(awk '/PACKETS/ { on = 1 } /^(sync|entry sync)/ { on = 0 }
		on && !/^[a-z]/ { print length($0) }' <<<"$out" | sort -u)
	sed 's/^/#   /' <<<"$out" | grep -F -e PACKETS -e 2001:db8:ffff
	check "header and rows are as wide as each other: $(tr '\n' ' ' <<<"$widths")" \
		[ "$(wc -l <<<"$widths")" = 1 ] || return 1
	ctl service del "$v6" >/dev/null
}

test_decap_json_names() {
	local out dev
	# veth: the test kernel may have no dummy driver
	for dev in 'q"x' $'q\xff"x' 'a\b'; do
		ip -n "$D_NS" link add "$dev" type veth peer name qpeer || return 1
		out=$(nsenter --net="/var/run/netns/$D_NS" "$CHLBCTL" decap show "$dev" --json)
		check "decap show --json for $(printf %q "$dev") exits 0: $out" [ $? = 0 ] || return 1
		check "valid JSON: $out" valid_json <<<"$out" || return 1
		ip -n "$D_NS" link del "$dev"
	done
	ip -n "$D_NS" link add 'q"x' type veth peer name qpeer || return 1
	out=$(nsenter --net="/var/run/netns/$D_NS" "$CHLBCTL" -j decap show 'q"x')
	check "dev is q\"x: $out" [ "$(pyjson 'd["dev"], d["decap"]' <<<"$out")" = 'q"x detached' ] || return 1
	ip -n "$D_NS" link del 'q"x'
	out=$(nsenter --net="/var/run/netns/$D_NS" "$CHLBCTL" decap show 'no"such' -j)
	check "a missing interface: exit 1, JSON error: $out" [ $? = 1 ] || return 1
	valid_json <<<"$out"
}

test_sim_json() {
	local out
	out=$("$CHLBCTL" sim --algo maglev --backends 3 --names 'a/1,q"x,c' --flows 1000 --samples 1000 --json) || return 1
	check "sim --json is valid JSON: $out" valid_json <<<"$out" || return 1
	check "the removed name is q\"x" [ "$(pyjson 'd["removed"]' <<<"$out")" = 'q"x' ] || return 1
	check "fixed decimals: $out" \
		grep -qE '"balance_max":[0-9]+\.[0-9]{6},.*"disruption_add":[0-9]+\.[0-9]{7},.*"build_ms":[0-9]+\.[0-9]{3},' <<<"$out" || return 1
	out=$("$CHLBCTL" -j sim --algo ring --backends 3 --names $'a,q\xff\xfe,c' --flows 1000 --samples 1000) || return 1
	check "invalid UTF-8 in a name: valid JSON" valid_json <<<"$out" || return 1
	check "replaced by U+FFFD" [ "$(pyjson 'd["removed"] == "q\ufffd\ufffd"' <<<"$out")" = True ] || return 1
	out=$("$CHLBCTL" sim --algo nope --json)
	check "sim usage error: exit 2, JSON with kind usage: $out" \
		[ $? = 2 ] && [ "$(pyjson 'd["kind"]' <<<"$out")" = usage ]
}

test_options_after_command() {
	local a b
	a=$("$CHLBCTL" -s "$CHLBD_SOCK" --json service list) || return 1
	b=$("$CHLBCTL" service list --json -s "$CHLBD_SOCK") || return 1
	check "service list --json -s: same as before the command" [ "$a" = "$b" ] || return 1
	check "valid JSON, no \\/ (VIPs have slashes): $b" valid_json <<<"$b" || return 1
	check "'/tcp' unescaped" grep -qF "$A" <<<"$b" || return 1
	b=$("$CHLBCTL" service list -j --socket="$CHLBD_SOCK") && [ "$a" = "$b" ] || return 1
	b=$("$CHLBCTL" service list "-s$CHLBD_SOCK" --socket "$CHLBD_SOCK" -j) && [ "$a" = "$b" ] || return 1
	check "stats -s PATH" "$CHLBCTL" stats -s "$CHLBD_SOCK" >/dev/null || return 1
	check "stats -s PATH --json" bash -c "'$CHLBCTL' stats -s '$CHLBD_SOCK' --json | jq -e .global >/dev/null" || return 1
	check "backend list VIP -j" bash -c "'$CHLBCTL' backend list $A -j -s '$CHLBD_SOCK' | jq -e '.backends | length == 3' >/dev/null" || return 1
	# jump: every backend shows its bucket (desired state), one each, the column too
	check "backend list: one bucket per jump backend" bash -c "'$CHLBCTL' backend list $A -j -s '$CHLBD_SOCK' | jq -e '[.backends[].bucket] | (map(type == \"number\") | all) and (unique | length == 3)' >/dev/null" || return 1
	check "backend list: a BUCKET column" bash -c "'$CHLBCTL' backend list $A -s '$CHLBD_SOCK' | head -1 | grep -qE 'BUCKET +CONNS$'" || return 1
	check "conns -j (its own flag) and -s after" bash -c "'$CHLBCTL' conns -j -s '$CHLBD_SOCK' | jq -e .ct_size >/dev/null" || return 1
	# errors are JSON when --json comes after the command, too
	b=$("$CHLBCTL" -s "$CHLBD_SOCK" service add 10.0.0.300:80/tcp --json)
	check "usage error after the command: exit 2, JSON: $b" \
		[ $? = 2 ] && [ "$(pyjson 'd["kind"]' <<<"$b")" = usage ] || return 1
	b=$("$CHLBCTL" service list -s 2>&1)
	check "-s without a path: exit 2: $b" [ $? = 2 ] && grep -qF "'-s' needs a socket path" <<<"$b" || return 1
	b=$("$CHLBCTL" -s /nonexistent/sock service list 2>&1)
	check "unreachable: exit 3" [ $? = 3 ] || return 1
	# every JSON error has a kind: chlbctl's own ones had none
	b=$("$CHLBCTL" -j -s /nonexistent/sock service list)
	check "unreachable: exit 3, kind unreachable: $b" \
		[ $? = 3 ] && [ "$(pyjson 'd["kind"]' <<<"$b")" = unreachable ] || return 1
	b=$("$CHLBCTL" -j decap show chlb-no-such0)
	check "a failure of chlbctl's own: exit 1, kind failed: $b" \
		[ $? = 1 ] && [ "$(pyjson 'd["kind"]' <<<"$b")" = failed ] || return 1
	# -f FILE keeps its value even when it looks like an option
	cp "$CONF" "$LIB_DIR/-j"
	b=$(cd "$LIB_DIR" && "$CHLBCTL" apply -f -j -s "$CHLBD_SOCK" --dry-run)
	check "apply -f -j: '-j' is the file, not --json: $b" [ "$b" = "dry run: nothing would change" ]
}

# bad values exit 2 whoever finds them; conflicts with the state exit 1
test_exit_codes() {
	local before out
	before=$(saved)
	expect 2 "'65536': maglev table size must be prime" service add 10.0.0.11:80/tcp algo maglev table 65536 || return 1
	expect 2 "fwd l2dsr needs an IPv4 backend" batch -f <(printf 'service add 10.0.0.12:80/tcp fwd l2dsr\nbackend add 10.0.0.12:80/tcp 2001:db8::9\n') || return 1
	expect 2 "'10.0.0.300:80/tcp'" service add 10.0.0.300:80/tcp || return 1
	expect 1 "already exists" service add $A || return 1
	expect 1 "no such service" backend add 10.0.0.99:80/tcp 10.1.0.9 || return 1
	out=$(ctl -j service add 10.0.0.11:80/tcp algo maglev table 65536)
	check "JSON: kind usage: $out" [ "$(pyjson 'd["kind"]' <<<"$out")" = usage ] || return 1
	out=$(ctl -j backend del $A 10.1.0.77)
	check "JSON: kind conflict: $out" [ "$(pyjson 'd["kind"]' <<<"$out")" = conflict ] || return 1
	# what chlbd itself says, without chlbctl's checks
	out=$(raw 'service add 10.0.0.11:80/tcp algo maglev table 65536\n')
	check "chlbd: kind usage: $out" [ "$(pyjson 'd["kind"]' <<<"$out")" = usage ] || return 1
	out=$(raw 'service add 10.0.0.11:80/tcp algo rendezvous\n')
	check "chlbd: grammar error, kind usage: $out" [ "$(pyjson 'd["kind"]' <<<"$out")" = usage ] || return 1
	check "nothing changed" [ "$before" = "$(saved)" ]
}

# a file's errors name the file and its line, or the word that is wrong, and
# change nothing: batch once said "request:2:", a bare `service set VIP` did
# nothing with exit 0, apply's argument errors named no word, and a single
# statement's error from the transaction's last check began "request: "
test_errors_name_file_and_word() {
	local before f=$LIB_DIR/batch.conf
	before=$(saved)
	printf 'backend set %s 10.1.0.2 weight 55\nbackend add %s 10.1.0.3\n' $A $A >"$f"
	expect 1 "batch.conf:2: '10.1.0.3': backend already in the service (use backend set); nothing applied" \
		batch -f "$f" || return 1
	expect 2 "stdin:2: '99999': weight out of range (0-10000)" \
		batch -f - < <(printf 'backend set %s 10.1.0.2 weight 55\nbackend set %s 10.1.0.3 weight 99999\n' $A $A) || return 1
	printf 'backend set %s 10.1.0.2 weight 55\nservice list\n' $A >"$f"
	expect 2 "batch.conf:2: only service/backend add, set, del belong in a config file" batch -f "$f" || return 1
	expect 2 "'service set': nothing to set (expected at least one of algo" service set $A || return 1
	expect 2 "apply: unexpected argument '--frobnicate'" apply -f "$CONF" --frobnicate || return 1
	expect 2 "apply: unexpected argument 'x.conf'" apply x.conf || return 1
	expect 2 "batch: '--file' needs a file name" batch --file || return 1
	check "nothing changed" [ "$before" = "$(saved)" ] || return 1
	local c=10.0.0.41:80/tcp
	ctl service add $c algo jump && ctl backend add $c 10.1.0.2 bucket 0 && ctl backend add $c 10.1.0.3 || return 1
	expect 2 "chlbctl: $c: 'bucket 0': held by 10.1.0.2 (for 10.1.0.3)" backend set $c 10.1.0.3 bucket 0 || return 1
	ctl service del $c
}

# one argument is one word: chlbctl joins them into a statement, so an argument
# with a space became several words ("10.1.0.8 weight 7" was accepted as a
# backend with weight 7) and one starting with '#' a comment dropping the rest;
# -j without a command answers JSON
test_one_word_per_argument() {
	local before out
	before=$(saved)
	expect 2 "'10.1.0.8 weight 7': one word per argument" backend add $A "10.1.0.8 weight 7" || return 1
	expect 2 "'/a b': one word per argument" backend set $A 10.1.0.2 path "/a b" || return 1
	expect 2 "'#x': a word may not start with '#'" backend add $A 10.1.0.8 "#x" weight 7 || return 1
	expect 2 "'': an empty argument" backend set $A 10.1.0.2 weight "" || return 1
	expect 2 "'10.9.0.1:4000 10.0.0.10:80': one word per argument" which "10.9.0.1:4000 10.0.0.10:80" tcp || return 1
	out=$("$CHLBCTL" -j)
	check "-j alone: exit 2, a JSON usage error: $out" \
		[ $? = 2 ] && [ "$(pyjson 'd["kind"]' <<<"$out")" = usage ] || return 1
	check "nothing changed" [ "$before" = "$(saved)" ]
}

# read-only requests name what they did not find, with a kind, as changes do:
# `which` once said "no service for destination (VIP:PORT/PROTO)" without one
test_read_only_errors() {
	local out req
	expect 1 "'10.0.0.99:80/tcp': no such service (nor '10.0.0.99:*/tcp')" \
		which 10.9.0.1:4000 10.0.0.99:80 tcp || return 1
	for req in "which 10.9.0.1:4000 10.0.0.99:80 tcp" "service list 10.0.0.99:80/tcp" \
		"backend list 10.0.0.99:80/tcp" "conns 10.0.0.99:80/tcp" "conns --backend 10.9.9.9"; do
		# shellcheck disable=SC2086 # the words of the request
		out=$(ctl -j $req)
		check "'$req': exit 1, kind conflict: $out" \
			[ $? = 1 ] && [ "$(pyjson 'd["kind"]' <<<"$out")" = conflict ] || return 1
	done
}

# a batch holds changes only: one starting with `shutdown` once stopped chlbd
# with exit 0, and `stats` first answered stats and dropped the changes after
# it; chlbd itself takes no statement after a request that is not a change
test_batch_only_changes() {
	local before out
	before=$(saved)
	expect 2 "stdin:1: only service/backend add, set, del belong in a config file; nothing applied" \
		batch -f - < <(printf 'shutdown\n') || return 1
	expect 2 "stdin:3: only service/backend add, set, del belong in a config file" \
		batch -f - < <(printf '# drain\n\nstats\nservice del %s\n' $A) || return 1
	check "chlbd still runs" ctl version >/dev/null || return 1
	out=$(raw "stats\nservice del $A\n")
	check "chlbd: a change after stats refused, kind usage: $out" \
		[ "$(pyjson 'd["kind"]' <<<"$out")" = usage ] && grep -qF "'stats' is a request of its own" <<<"$out" || return 1
	out=$(raw "shutdown\nstats\n")
	check "chlbd: shutdown with more lines refused: $out" \
		[ "$(pyjson 'd["kind"]' <<<"$out")" = usage ] && ctl version >/dev/null || return 1
	check "nothing changed" [ "$before" = "$(saved)" ]
}

# a backend the service's table can't hold is named, with the table: it said
# "'3': maglev table size must be larger than the 3 backends of 10.1.0.4"
test_backend_beyond_table() {
	local before c=10.0.0.42:80/tcp
	ctl service add $c algo maglev table 3 && ctl backend add $c 10.1.0.2 &&
		ctl backend add $c 10.1.0.3 || return 1
	before=$(saved)
	expect 2 "'10.1.0.4': one backend too many for the service's table (table 3): it must be larger than the backend count (3 with this one)" \
		backend add $c 10.1.0.4 || return 1
	check "nothing changed" [ "$before" = "$(saved)" ] || return 1
	ctl service del $c
}

# which says why the current table decides: a new service's oldest table is
# empty, which it once called "the oldest names a removed backend"
test_which_says_why() {
	local c=10.0.0.43:80/tcp by
	ctl service add $c && by=$(ctl -j which 10.9.0.1:4000 10.0.0.43:80 tcp | pyjson 'd["established_by"]')
	check "no backend at all: '$by'" [ "$by" = "the tables (none has a backend for it)" ] || return 1
	ctl backend add $c 10.1.0.2 && by=$(ctl -j which 10.9.0.1:4000 10.0.0.43:80 tcp | pyjson 'd["established_by"]')
	check "the oldest table is the empty one: '$by'" \
		[ "$by" = "current table (the oldest has no backend for it)" ] || return 1
	ctl service del $c
}

# addresses no packet from the wire is for are refused as VIPs and backends,
# naming the token and why: 'backend add VIP 0.0.0.0' was accepted (exit 0)
test_unusable_addresses() {
	local before
	before=$(saved)
	expect 2 "'0.0.0.0:80/tcp': not usable as a VIP (unspecified address)" service add 0.0.0.0:80/tcp || return 1
	expect 2 "'[ff02::1]:80/tcp': not usable as a VIP (multicast address)" service add '[ff02::1]:80/tcp' || return 1
	expect 2 "'255.255.255.255': not usable as a backend (broadcast address)" backend add $A 255.255.255.255 || return 1
	expect 2 "'127.0.0.1': not usable as a backend (loopback address)" backend add $A 127.0.0.1 || return 1
	expect 2 "'239.1.1.1': not usable as a backend (multicast address)" \
		batch -f - < <(printf 'backend add %s 239.1.1.1\n' $A) || return 1
	check "nothing changed" [ "$before" = "$(saved)" ]
}

# a prefix never stops chlbd: 'chlbctl sh' (meant as "show") was taken for
# shutdown, exit 0; 'route w' for withdraw. Ambiguity names every candidate.
test_shutdown_only_in_full() {
	expect 2 "unknown command 'sh' ('shutdown' is taken only as the whole word)" sh || return 1
	expect 2 "unknown command 'shutd'" shutd --detach || return 1
	expect 2 "'w': unknown route command" route w || return 1
	check "chlbd still runs" ctl version >/dev/null || return 1
	expect 2 "ambiguous command 's': sim, service, stats, save?" s || return 1
}

# a dry run that drains every backend says new flows will be dropped, not
# only "100.00% of the keyspace moves" and every share -> 0.00%
test_dry_run_drain_all() {
	local out before c=10.0.0.44:80/tcp
	ctl service add $c && ctl backend add $c 10.1.0.2 && ctl backend add $c 10.1.0.3 || return 1
	before=$(saved)
	out=$(ctl batch -f - --dry-run < <(printf 'backend set %s 10.1.0.2 weight 0\nbackend set %s 10.1.0.3 weight 0\n' $c $c))
	check "says new flows are dropped: $out" \
		grep -qF "no backend takes new flows (every weight is 0): they are dropped (drop_no_backend)" <<<"$out" || return 1
	out=$(ctl backend set $c 10.1.0.2 weight 0 --dry-run)
	check "one of two drained: no such note: $out" bash -c "! grep -q 'no backend takes' <<<\"\$1\"" _ "$out" || return 1
	check "nothing changed" [ "$before" = "$(saved)" ] || return 1
	ctl service del $c
}

test_invalid_utf8() {
	local out before
	before=$(saved)
	out=$(raw 'service add 10.0.0.\xff:80/tcp algo r\xc3\xa9ng\xc3\n')
	check "reply is valid JSON: $(printf %q "$out")" valid_json <<<"$out" || return 1
	check "bytes replaced, valid ones kept: $out" \
		[ "$(pyjson '"\ufffd" in d["error"] and d["kind"]' <<<"$out")" = usage ] || return 1
	out=$(raw '\xfe\xff\n')
	check "an unknown word of bytes: valid JSON" valid_json <<<"$out" || return 1
	out=$(ctl -j service add $'10.0.0.1\xff:80/tcp')
	check "chlbctl's own error: valid JSON: $(printf %q "$out")" valid_json <<<"$out" || return 1
	out=$(ctl -j backend add $A $'10.1.0.\xe2\x82')
	check "exit 2, valid JSON" [ $? = 2 ] && valid_json <<<"$out" || return 1
	check "nothing changed" [ "$before" = "$(saved)" ]
}

test_vip_without_port() {
	local before out
	before=$(saved)
	expect 2 "'10.0.0.1/tcp': missing ':PORT' in VIP (every port of the address: '10.0.0.1:*/tcp')" \
		service add 10.0.0.1/tcp || return 1
	expect 2 "'[2001:db8::5]:*/udp'" service add '[2001:db8::5]/udp' || return 1
	out=$(raw 'service add 10.0.0.1/tcp\n')
	check "chlbd says the same, kind usage: $out" \
		[ "$(pyjson 'd["kind"]' <<<"$out")" = usage ] && grep -qF "'10.0.0.1:*/tcp'" <<<"$out" || return 1
	check "nothing changed" [ "$before" = "$(saved)" ] || return 1
	ctl service add 10.0.0.1:0/tcp && ctl service del 10.0.0.1:0/tcp
}

test_own_address() {
	local before out f=$LIB_DIR/own.conf
	before=$(saved)
	expect 1 "'10.1.0.1:22/tcp': 10.1.0.1 is an address of this host (v0)" service add 10.1.0.1:22/tcp || return 1
	expect 1 "add 'force'" service add 10.1.0.1:0/tcp algo jump || return 1
	expect 1 "2001:db8::1 is an address of this host" service add '[2001:db8::1]:443/tcp' || return 1
	out=$(ctl -j service add 10.1.0.1:22/tcp)
	check "JSON: kind refused: $out" [ "$(pyjson 'd["kind"]' <<<"$out")" = refused ] || return 1
	out=$(ctl service add 10.1.0.1:22/tcp --dry-run)
	check "dry run: exit 0, says --force is needed: $out" \
		[ $? = 0 ] && grep -qF "needs --force: '10.1.0.1:22/tcp'" <<<"$out" || return 1
	check "nothing changed" [ "$before" = "$(saved)" ] || return 1
	ctl service add 10.1.0.1:22/tcp algo jump --force || return 1
	ctl service add '[2001:db8::1]:443/tcp' force || return 1
	ctl backend add 10.1.0.1:22/tcp 10.1.0.2 || return 1
	check "save keeps force" saved | grep -qE "^service add 10\.1\.0\.1:22/tcp algo jump .*force$" || return 1
	# round trips: the saved state applies again, here and after the services are gone
	ctl save >"$f" || return 1
	check "apply -f of save: nothing changes" \
		bash -c "'$CHLBCTL' -s '$CHLBD_SOCK' apply -f '$f' --dry-run | grep -q 'nothing would change'" || return 1
	ctl apply -f "$f" || return 1
	ctl service del 10.1.0.1:22/tcp && ctl service del '[2001:db8::1]:443/tcp' || return 1
	ctl apply -f "$f" || return 1
	check "round trip: the same state" [ "$(saved)" = "$(grep -v '^#' "$f")" ] || return 1
	# force on an existing service is `service set`; without it a file is refused
	ctl service del 10.1.0.1:22/tcp || return 1
	sed -i 's/ force$//' "$f"
	expect 1 "is an address of this host" apply -f "$f" || return 1
	ctl service del '[2001:db8::1]:443/tcp'
}

test_apply_empty() {
	local before out empty=$LIB_DIR/empty.conf other=$LIB_DIR/other.conf
	ctl service add $B && ctl backend add $B 10.1.0.9 || return 1
	before=$(saved)
	printf '# nothing here\n' >"$empty"
	expect 1 "the file would delete every service (all 2 of them: it has none)" apply -f "$empty" || return 1
	expect 1 "--force" apply -f "$empty" || return 1
	check "nothing changed" [ "$before" = "$(saved)" ] || return 1
	out=$(ctl -j apply -f "$empty")
	check "JSON: kind refused: $out" [ "$(pyjson 'd["kind"]' <<<"$out")" = refused ] || return 1
	printf 'service add 10.0.0.77:80/tcp\n' >"$other"
	expect 1 "adding only others" apply -f "$other" || return 1
	# the dry run shows the plan as before, and that it needs --force
	out=$(ctl apply -f "$empty" --dry-run)
	check "dry run: exit 0" [ $? = 0 ] || return 1
	check "dry run: both deletions: $out" \
		[ "$(grep -cE "^($A|$B): delete, 100.00% of the keyspace moves" <<<"$out")" = 2 ] || return 1
	check "dry run: says --force is needed" grep -q "^needs --force: the file would delete every service" <<<"$out" || return 1
	check "dry run with --force: no note" \
		bash -c "! '$CHLBCTL' -s '$CHLBD_SOCK' apply -f '$empty' --dry-run --force | grep -q 'needs --force'" || return 1
	check "still nothing changed" [ "$before" = "$(saved)" ] || return 1
	ctl apply -f "$empty" --force || return 1
	check "--force: every service deleted" [ -z "$(saved)" ] || return 1
	check "logged" grep -qF "apply: service del $B (1 backends)" "$CHLBD_LOG" || return 1
	# from no services, an empty file is no deletion
	ctl apply -f "$empty" || return 1
	ctl apply -f "$CONF" --json | jq -e .ok >/dev/null
}

# health-check settings: bad values exit 2 naming the token, whether chlbctl
# or chlbd reads them, and change nothing; save shows what was set; a check-only
# change is no table change; save -> apply changes nothing
test_health_check_config() {
	local before out f=$LIB_DIR/check.conf
	before=$(saved)
	expect 2 "'99': check interval out of range (100-3600000)" service set $A interval 99 || return 1
	expect 2 "'timeout 3000': longer than 'interval 2000'" service set $A timeout 3000 || return 1
	expect 2 "'200-600': malformed status range" service set $A check http expect 200-600 || return 1
	expect 2 "'healthz': malformed HTTP path" service set $A path healthz || return 1
	expect 2 "'bad_host': malformed host name" backend set $A 10.1.0.2 host bad_host || return 1
	expect 2 "'udp': unknown check type (expected none, tcp or http)" backend set $A 10.1.0.2 check udp || return 1
	expect 2 "'panic': unknown backend option" backend set $A 10.1.0.2 panic 10 || return 1
	expect 2 "nothing to set (expected at least one of weight" backend set $A 10.1.0.2 || return 1
	expect 2 "'check tcp': 10.0.0.30:*/tcp is a VIP of every port" service add 10.0.0.30:0/tcp check tcp || return 1
	out=$(raw "service set $A panic 101\n")
	check "chlbd: kind usage, names the token: $out" \
		[ "$(pyjson 'd["kind"]' <<<"$out")" = usage ] && grep -qF "'101': panic threshold" <<<"$out" || return 1
	check "nothing changed" [ "$before" = "$(saved)" ] || return 1
	ctl service set $A check http path /healthz interval 1000 timeout 500 panic 25 on-down reset || return 1
	ctl backend set $A 10.1.0.3 check none || return 1
	out=$(saved)
	check "save shows the service's check: $out" \
		grep -qE "^service add $A algo jump .*hash 5tuple check http path /healthz interval 1000 timeout 500 on-down reset panic 25$" <<<"$out" || return 1
	check "save shows the backend's override, its weight kept" \
		grep -qE "^backend add $A 10\.1\.0\.3 weight 100 .*check none$" <<<"$out" || return 1
	out=$(ctl -j service list $A)
	check "service list --json: the check and policy: $out" \
		[ "$(pyjson '[d["services"][0]["check"][k] for k in ("type", "path", "interval_ms", "timeout_ms", "rise", "panic_pct", "on_down", "backend_overrides")]' <<<"$out")" = "['http', '/healthz', 1000, 500, 2, 25, 'reset', 1]" ] || return 1
	out=$(ctl service list $A)
	check "service list: a check line: $out" \
		grep -qF "  check http /healthz expect 200-399 via auto interval 1000 ms timeout 500 ms rise 2 fall 3; on-down reset, slow-start 0 s, panic 25%; 1 backend override(s)" <<<"$out" || return 1
	out=$(ctl service set $A rise 5 fall 4 --dry-run)
	check "dry run of a check change: no table change: $out" \
		grep -qF "health check settings change: no table change" <<<"$out" || return 1
	ctl save >"$f" || return 1
	check "apply -f of save: nothing changes" \
		bash -c "'$CHLBCTL' -s '$CHLBD_SOCK' apply -f '$f' --dry-run | grep -q 'nothing would change'" || return 1
	ctl apply -f "$CONF" || return 1
	check "apply of the config without checks: none left" bash -c "! '$CHLBCTL' -s '$CHLBD_SOCK' save | grep -q check"
}

# at start, -c FILE with a new service on an own address is not applied either
test_start_refuses_own_address() {
	local before bad=$LIB_DIR/own-start.conf
	before=$(saved)
	{ cat "$CONF"; echo "service add 10.1.0.1:0/tcp"; } >"$bad"
	chlbd_stop TERM
	chlbd_start xdp-generic -c "$bad" || return 1
	check "logged: nothing from the config applied" \
		grep -qF "'10.1.0.1:*/tcp': 10.1.0.1 is an address of this host (v0)" "$CHLBD_LOG" || return 1
	check "started from the state file" [ "$before" = "$(saved)" ] || return 1
	echo "service set 10.1.0.1:0/tcp force" >>"$bad"
	chlbd_stop TERM
	chlbd_start xdp-generic -c "$bad" || return 1
	check "with force it is" saved | grep -q "^service add 10.1.0.1:\*/tcp .*force$"
}

lib_run
