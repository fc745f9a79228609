#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# Control-plane integrity (docs/operations.md, "Durability and atomicity"):
# a change is durable
# before it is acknowledged, or not applied at all (a full 64 KiB tmpfs and
# a read-only bind mount as the state directory, in a private mount
# namespace); a replacement that needs more backend slots than are free is
# refused before anything is touched, and its dry run says so; a 100k-line
# apply (its time and the latency of a `stats` sent meanwhile, printed); a
# SIGKILL at several points of a large apply (all old or all new after the
# restart, in the file and the data plane); both state files corrupt, and
# the recovery the message names; a planted STATE.tmp symlink; a state
# directory others can write to.
. "$(dirname "$0")/../lib.sh"
daemon_fixture

VIP=10.0.0.10:80/tcp
HOLDER=

ms_since() { echo $((($(date +%s%N) - $1) / 1000000)); }

# a process whose private mount namespace holds the test's mounts (gone with it)
holder_start() {
	lib_bg holder unshare -m --propagation private sleep 3600
	HOLDER=$LIB_LASTPID
	lib_wait_for 5 bash -c "[ \"\$(readlink /proc/$HOLDER/ns/mnt)\" != \"\$(readlink /proc/self/ns/mnt)\" ]" ||
		die "no private mount namespace"
}
in_ns() { nsenter -t "$HOLDER" -m -- "$@"; }

# chlbd_start_ns STATE [ARGS]: the suite's chlbd in the holder's mount namespace (it sees
# the mounts there), with STATE as its state file this time
chlbd_start_ns() {
	# shellcheck disable=SC2034 # both read by chlbd_start
	local CHLBD_STATE=$1 CHLBD_WRAP=(nsenter -t "$HOLDER" -m --)
	shift
	chlbd_start xdp-generic "$@"
}

# what serves: options, fingerprints, table counts, backends with weight, slot, generation
dataplane() {
	ctl -j service list | jq -c '[.services[] | del(.last_swap_ms)]'
	ctl -j backend list | jq -c '[.backends[] | {service, address, weight, slot, gen, state}]'
}

# a fresh chlbd for the next test, even after one that failed halfway
fresh() { [ -z "$CHLBD_PID" ] || teardown; }

# the last test leaves nothing behind: the next one starts from an empty pin dir
teardown() {
	ctl shutdown --detach >/dev/null 2>&1
	for _ in $(seq 50); do kill -0 "$CHLBD_PID" 2>/dev/null || break; sleep 0.1; done
	chlbd_stop TERM
}

setup_small() {
	ctl service add $VIP algo ring || return 1
	for i in 2 3 4; do ctl backend add $VIP 10.1.0.$i || return 1; done
}

# $1: what the state directory refuses (after it was made so); checks nothing changed
refused_change() {
	local why=$1 before_state before_dp out rc
	before_state=$(saved)
	before_dp=$(dataplane)
	out=$(ctl backend set $VIP 10.1.0.3 weight 0 2>&1)
	rc=$?
	check "drain refused (exit $rc): $out" [ "$rc" = 1 ] || return 1
	check "says the directory $why and that nothing changed" \
		grep -qE "state directory .* $why .*nothing changed" <<<"$out" || return 1
	out=$(ctl backend del $VIP 10.1.0.4 2>&1)
	check "delete refused: $out" [ $? = 1 ] || return 1
	out=$(ctl service add 10.0.0.11:80/tcp 2>&1)
	check "add refused: $out" [ $? = 1 ] || return 1
	printf 'service add %s\nbackend add %s 10.1.0.9\n' "$VIP" "$VIP" >"$LIB_DIR/small.conf"
	out=$(ctl apply -f "$LIB_DIR/small.conf" 2>&1)
	check "apply refused: $out" [ $? = 1 ] || return 1
	check "save unchanged" [ "$(saved)" = "$before_state" ] || return 1
	check "data plane unchanged" [ "$(dataplane)" = "$before_dp" ] || return 1
	out=$(ctl backend set $VIP 10.1.0.3 weight 0 2>&1)
	check "a retry is refused the same way (not 'already' anything): $out" \
		grep -q "nothing changed" <<<"$out"
}

test_full_state_dir() {
	local sd=$LIB_DIR/full before_state before_dp
	fresh
	holder_start
	mkdir -m 0700 "$sd"
	in_ns mount -t tmpfs -o size=64k,mode=0700 tmpfs "$sd" || return 1
	chlbd_start_ns "$sd/state" || return 1
	setup_small || return 1
	in_ns dd if=/dev/zero of="$sd/filler" bs=4k 2>/dev/null
	diag "tmpfs: $(in_ns df -k "$sd" | tail -1 | awk '{ print $3 " KiB used, " $4 " KiB free" }')"
	refused_change "is full" || return 1
	before_state=$(saved)
	before_dp=$(dataplane)
	chlbd_stop KILL
	chlbd_start_ns "$sd/state" || return 1
	check "restart (state dir still full) shows the old state" [ "$(saved)" = "$before_state" ] || return 1
	check "and serves it" [ "$(dataplane | head -1 | jq -c '[.[] | del(.swaps, .tables)]')" = \
		"$(head -1 <<<"$before_dp" | jq -c '[.[] | del(.swaps, .tables)]')" ] || return 1
	in_ns rm -f "$sd/filler"
	ctl backend set $VIP 10.1.0.3 weight 0 || return 1
	check "with room again the change is made and persisted" \
		grep -q "10.1.0.3 weight 0" "$(in_ns cat "$sd/state" >"$LIB_DIR/st" && echo "$LIB_DIR/st")" || return 1
	teardown
}

test_readonly_state_dir() {
	local sd=$LIB_DIR/ro before_state
	fresh
	[ -n "$HOLDER" ] || holder_start
	mkdir -m 0700 "$sd"
	in_ns mount --bind "$sd" "$sd" || return 1
	chlbd_start_ns "$sd/state" || return 1
	setup_small || return 1
	in_ns mount -o remount,bind,ro "$sd" || return 1
	refused_change "is read-only" || return 1
	before_state=$(saved)
	chlbd_stop TERM
	chlbd_start_ns "$sd/state" || return 1
	check "restart (read-only) shows the old state" [ "$(saved)" = "$before_state" ] || return 1
	check "the log says why the state was not written back" grep -q "not written back" "$CHLBD_LOG" || return 1
	in_ns mount -o remount,bind,rw "$sd" || return 1
	ctl backend set $VIP 10.1.0.3 weight 0 || return 1
	check "writable again: persisted" grep -q "10.1.0.3 weight 0" "$sd/state" || return 1
	teardown
}

# gen_conf NSVC NBE NET [SETS]: ring services x backends NET.x.y, SETS weight changes per backend
gen_conf() {
	awk -v ns="$1" -v nb="$2" -v net="$3" -v sets="${4:-0}" 'BEGIN {
		for (s = 0; s < ns; s++) {
			vip = sprintf("10.100.%d.1:80/tcp", s)
			printf "service add %s algo ring\n", vip
			for (b = 0; b < nb; b++) {
				a = sprintf("%s.%d.%d", net, int(b / 250), 2 + b % 250)
				printf "backend add %s %s weight 100\n", vip, a
				for (k = 0; k < sets; k++)
					printf "backend set %s %s weight %d\n", vip, a, 50 + k
			}
		}
	}'
}

test_capacity_checked_first() {
	local before_state before_dp out rc
	fresh
	CHLBD_STATE=$LIB_DIR/cap.state
	ip -n "$D_NS" route add 10.2.0.0/16 via 10.1.0.2
	ip -n "$D_NS" route add 10.3.0.0/16 via 10.1.0.2
	chlbd_start xdp-generic || return 1
	gen_conf 2 2500 10.2 >"$LIB_DIR/old.conf"
	gen_conf 2 2500 10.3 >"$LIB_DIR/new.conf"
	ctl apply -f "$LIB_DIR/old.conf" || return 1
	check "5,000 backends serve" [ "$(ctl -j backend list | jq '.backends | length')" = 5000 ] || return 1
	before_state=$(saved)
	before_dp=$(dataplane)
	out=$(ctl apply -f "$LIB_DIR/new.conf" --dry-run 2>&1)
	rc=$?
	diag "dry run: $out"
	check "the dry run predicts the refusal (exit $rc)" [ "$rc" = 1 ] || return 1
	check "with the capacity message" grep -q "not enough backend slots: the change needs 5000 new" <<<"$out" || return 1
	local dry=$out
	out=$(ctl apply -f "$LIB_DIR/new.conf" 2>&1)
	rc=$?
	diag "apply: $out"
	check "replacing all 5,000 is refused up front (exit $rc)" [ "$rc" = 1 ] || return 1
	check "the same message as the dry run" [ "$out" = "$dry" ] || return 1
	check "nothing changed: save" [ "$(saved)" = "$before_state" ] || return 1
	check "nothing changed: data plane" [ "$(dataplane)" = "$before_dp" ] || return 1
	check "nothing changed: state file" [ "$(grep -c '^backend add .* 10\.3\.' "$CHLBD_STATE")" = 0 ] || return 1
	# old + new within 8,192: 3,000 replaced (2,000 kept) fits
	{ gen_conf 2 1000 10.2; gen_conf 2 1500 10.3 | grep '^backend'; } >"$LIB_DIR/part.conf"
	ctl apply -f "$LIB_DIR/part.conf" || return 1
	check "a replacement that fits is made" [ "$(ctl -j backend list | jq '.backends | length')" = 5000 ] || return 1
	teardown
}

test_big_apply_and_stats() {
	local t0 t1 st rc out n
	fresh
	CHLBD_STATE=$LIB_DIR/big.state
	chlbd_start xdp-generic || return 1
	# 100,100 lines: more (service, backend) pairs than slots; parsed, then refused
	gen_conf 100 1000 10.4 >"$LIB_DIR/big.conf"
	n=$(wc -l <"$LIB_DIR/big.conf")
	t0=$(date +%s%N)
	out=$(ctl apply -f "$LIB_DIR/big.conf" 2>&1)
	diag "$n lines, 100 x 1,000 (over the 8,192 slots): refused after $(ms_since "$t0") ms: ${out:0:90}"
	check "refused for its size" grep -q "too many backends" <<<"$out" || return 1
	# 96,100 lines that fit: 100 services x 80 backends, each weight set 11 times
	for spec in "100 80 10.1 0" "100 80 10.1 11"; do
		# shellcheck disable=SC2086
		gen_conf $spec >"$LIB_DIR/big.conf"
		n=$(wc -l <"$LIB_DIR/big.conf")
		t0=$(date +%s%N)
		(ctl apply -f "$LIB_DIR/big.conf" >"$LIB_DIR/apply.out" 2>&1; echo "rc=$?" >>"$LIB_DIR/apply.out") &
		local ap=$!
		sleep 0.05
		t1=$(date +%s%N)
		ctl -j stats >"$LIB_DIR/stats.json"
		rc=$?
		st=$(ms_since "$t1")
		wait "$ap"
		diag "$n lines ($spec): apply $(ms_since "$t0") ms; a stats sent 50 ms in answered after $st ms"
		check "apply succeeded: $(cat "$LIB_DIR/apply.out")" grep -q "rc=0" "$LIB_DIR/apply.out" || return 1
		check "stats answered meanwhile (exit $rc)" jq -e '.global' "$LIB_DIR/stats.json" >/dev/null || return 1
	done
	check "8,000 backends serve" [ "$(ctl -j backend list | jq '.backends | length')" = 8000 ] || return 1
	check "with the last weights" [ "$(saved | grep -c 'weight 60$')" = 8000 ] || return 1
	teardown
}

# SIGKILL while a 100-service apply is under way, at several points: after the
# restart the state file is all old or all new, and the data plane forwards
# exactly the VIPs the state file has.
test_crash_mid_apply() {
	local delay n v out
	fresh
	CHLBD_STATE=$LIB_DIR/crash.state
	for delay in 0.15 0.5 1.0 4; do
		rm -f "$CHLBD_STATE" "$CHLBD_STATE.prev"
		chlbd_start xdp-generic || return 1
		setup_small || return 1
		# backends 10.1.0.2-51: neighbours known, so a VIP's flows are forwarded, never passed
		{ saved; gen_conf 100 50 10.1; } >"$LIB_DIR/crash.conf"
		lib_bg crash-apply "$CHLBCTL" -s "$CHLBD_SOCK" apply -f "$LIB_DIR/crash.conf"
		local ap=$LIB_LASTPID
		sleep "$delay"
		chlbd_stop KILL
		wait "$ap" 2>/dev/null
		chlbd_start xdp-generic || return 1
		n=$(saved | grep -c '^service add 10\.100\.')
		diag "killed ${delay} s into the apply: the restart has $n of the 100 new services"
		check "all old or all new ($n)" test "$n" = 0 -o "$n" = 100 || return 1
		saved | grep -q "^service add $VIP" || { diag "the old service is gone"; return 1; }
		for v in 0 37 99; do
			out=$(probe which "$CHLBD_PIN" "$D_IFINDEX" 10.100.$v.1 80 3 7)
			if [ "$n" = 100 ]; then
				check "10.100.$v.1 forwarded: $out" nogrep -q verdict <<<"$out" || return 1
			else
				check "10.100.$v.1 not a VIP any more: $out" grep -q verdict <<<"$out" || return 1
			fi
		done
		teardown
	done
}

start_out() {
	timeout 10 "$CHLBD" -i v0 --netns "$D_NS" -m xdp-generic -s "$CHLBD_SOCK" --pin-dir "$CHLBD_PIN" \
		--state "$1" -f 2>&1
}

test_both_state_files_corrupt() {
	local out
	fresh
	CHLBD_STATE=$LIB_DIR/corrupt.state
	chlbd_start xdp-generic || return 1
	setup_small || return 1
	ctl backend set $VIP 10.1.0.2 weight 50 || return 1 # a .prev exists now
	chlbd_stop TERM
	check ".prev was written" [ -f "$CHLBD_STATE.prev" ] || return 1
	truncate -s 30 "$CHLBD_STATE"
	truncate -s 30 "$CHLBD_STATE.prev"
	out=$(start_out "$CHLBD_STATE")
	check "refuses to start (exit $?)" [ $? != 0 ] || return 1
	diag "$out"
	check "names both files to remove" grep -q "remove both files" <<<"$out" || return 1
	rm -f "$CHLBD_STATE"
	out=$(start_out "$CHLBD_STATE")
	check "state file gone, .prev still bad: refused (exit $?)" [ $? != 0 ] || return 1
	check "the message names .prev: $out" grep -q "is missing and its last good copy '$CHLBD_STATE.prev' is bad" <<<"$out" || return 1
	rm -f "$CHLBD_STATE.prev"
	chlbd_start xdp-generic || return 1
	check "both removed, as the message says: starts with no services" [ -z "$(saved)" ] || return 1
	teardown
}

test_planted_tmp_symlink() {
	local sd=$LIB_DIR/sym victim
	fresh
	victim=$(mktemp /tmp/chlb-victim-XXXXXX)
	echo "root's precious file" >"$victim"
	chmod 0644 "$victim"
	mkdir -m 0700 "$sd"
	CHLBD_STATE=$sd/state
	chlbd_start xdp-generic || return 1
	ln -s "$victim" "$sd/state.tmp"
	setup_small || return 1
	ctl backend set $VIP 10.1.0.2 weight 7 || return 1
	check "victim unchanged" [ "$(cat "$victim")" = "root's precious file" ] || return 1
	check "state is a regular file with the change" grep -q "10.1.0.2 weight 7" "$sd/state" || return 1
	check "no symlink left" [ ! -L "$sd/state.tmp" ] || return 1
	ln -s "$victim" "$sd/state.tmp"
	chlbd_stop KILL
	chlbd_start xdp-generic || return 1
	ctl backend set $VIP 10.1.0.2 weight 8 || return 1
	check "victim unchanged after a restart and a change" [ "$(cat "$victim")" = "root's precious file" ] || return 1
	rm -f "$victim"
	teardown
}

test_writable_state_dir_refused() {
	local sd=$LIB_DIR/open out
	fresh
	mkdir -m 0700 "$sd"
	CHLBD_STATE=$sd/state
	chmod 0777 "$sd"
	out=$(start_out "$CHLBD_STATE")
	check "world-writable: refuses to start (exit $?)" [ $? != 0 ] || return 1
	check "says why: $out" grep -q "is writable by others (mode 0777)" <<<"$out" || return 1
	chmod 0770 "$sd"
	out=$(start_out "$CHLBD_STATE")
	check "group-writable: refused: $out" grep -q "is writable by its group" <<<"$out" || return 1
	chmod 0700 "$sd"
	chown nobody "$sd"
	out=$(start_out "$CHLBD_STATE")
	check "another user's: refused: $out" grep -q "is owned by uid" <<<"$out" || return 1
	chown root "$sd"
	chlbd_start xdp-generic || return 1
	setup_small || return 1
	chmod 0777 "$sd"
	out=$(ctl backend set $VIP 10.1.0.2 weight 9 2>&1)
	check "made writable while running: changes refused: $out" \
		grep -q "writable by others.*nothing changed" <<<"$out" || return 1
	chmod 0700 "$sd"
	check "and nothing changed" [ "$(grep -c "weight 9" "$CHLBD_STATE")" = 0 ] || return 1
	teardown
}

lib_run
