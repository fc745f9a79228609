#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# Ownership of the interface and local abuse (docs/operations.md,
# "Ownership of the interface"):
#  - a restart with another -m or -i moves the attachment as asked (ip link,
#    tc filter, the pins), and `shutdown --detach` removes every attachment;
#    chlbd loads the entry point its mode attaches, not the other (each is
#    ~0.5 s of verifier at start), both when it bridges XDP modes through TC;
#  - a second chlbd in the other mode on the same interface is refused, and
#    the first keeps its traffic; a shared --state or socket is refused,
#    naming the holder's pid; failed starts leave no pins;
#  - a restart with another --ct-size resizes the pinned connection table
#    and keeps its entries (the live ones first when it shrinks);
#  - -s naming a regular file or the state file is refused, the file intact;
#  - at a small file-descriptor limit, flooded with idle connections, chlbd
#    answers at once and does not spin; a client trickling its request is
#    dropped; chlbctl gives up on a stopped chlbd after --timeout (exit 3).
. "$(dirname "$0")/../lib.sh"
daemon_fixture

lib_veth "$D_NS" v2 v3 || die "veth v2"
ip -n "$D_NS" link add d0 type bridge && ip -n "$D_NS" link set d0 up || die "bridge d0"
IF0=$D_IFINDEX
IF2=$(ip -n "$D_NS" -o link show v2 | cut -d: -f1)
VIP=10.0.0.10:80/tcp

# o_start NAME ARGS...: another chlbd in the background (pid O_PID), its own
# socket $LIB_DIR/NAME.sock unless ARGS give one; waits until it answers.
o_start() {
	local name=$1
	shift
	O_SOCK=$LIB_DIR/$name.sock
	lib_bg "$name" "$CHLBD" --netns "$D_NS" -s "$O_SOCK" -f "$@"
	O_PID=$LIB_LASTPID
	lib_wait_up "$name" o_quiet service list
}
o_quiet() { "$CHLBCTL" -s "$O_SOCK" "$@" >/dev/null 2>&1; }

# try_start ARGS...: a chlbd that must fail to start; its output in $OUT, status in $RC.
try_start() {
	OUT=$(timeout 20 "$CHLBD" --netns "$D_NS" -f "$@" 2>&1)
	RC=$?
}

xdp_of() { ip -n "$D_NS" link show "$1" | grep -oE ' xdp[a-z]* |prog/xdp id [0-9]+' | tr -d '\n'; }
tc_of() { tc -n "$D_NS" filter show dev "$1" ingress 2>/dev/null | grep -oE 'chlb_tc[^ ]* .*id [0-9]+'; }
# has_xdp IF generic|native, has_tc IF: chlb's program is there in that mode
has_xdp() {
	case $2 in
	generic) xdp_of "$1" | grep -q '^ xdpgeneric prog/xdp id' ;;
	*) xdp_of "$1" | grep -q '^ xdp prog/xdp id' ;;
	esac
}
has_tc() { tc_of "$1" | grep -q chlb_tc; }
no_xdp() { ! ip -n "$D_NS" link show "$1" | grep -q 'prog/xdp'; }
no_tc() { [ -z "$(tc -n "$D_NS" filter show dev "$1" ingress 2>/dev/null)" ]; }
pins() { ls "$CHLBD_PIN" 2>/dev/null | tr '\n' ' '; }
# loaded NAME: how many programs named NAME use this data plane's views map
# (chlbd's own, and an old chlbd's still attached or pinned)
loaded() {
	local views
	views=$(bpftool -j map show pinned "$CHLBD_PIN/views" | jq .id) || return 1
	bpftool -j prog show | jq --arg n "$1" --argjson v "$views" \
		'[.[] | select(.name == $n and ((.map_ids // []) | index($v) != null))] | length'
}
# entries X T: X programs chlb_xdp and T chlb_tc are loaded (loaded())
entries() { [ "$(loaded chlb_xdp)" = "$1" ] && [ "$(loaded chlb_tc)" = "$2" ]; }
no_pins() { [ -z "$(ls "$1" 2>/dev/null)" ]; }

# ---- 5: a restart moves the attachment as asked; detach removes every one ----
test_restart_moves_mode_and_iface() {
	local before
	chlbd_start xdp-generic || return 1
	ctl service add $VIP algo jump >/dev/null && ctl backend add $VIP 10.1.0.2 >/dev/null &&
		ctl backend add $VIP 10.1.0.3 >/dev/null || return 1
	before=$(probe which "$CHLBD_PIN" "$IF0" 10.0.0.10 80 50 5)
	check "xdp-generic on v0: $(xdp_of v0)" has_xdp v0 generic || return 1
	check "loaded chlb_xdp, not chlb_tc ($(loaded chlb_xdp), $(loaded chlb_tc))" entries 1 0 || return 1
	chlbd_stop TERM
	# -m tc: TC filter attached, the XDP link gone (record tc_N, no link_N)
	chlbd_start tc || return 1
	check "moved to tc: log" grep -q "moved v0 (ifindex $IF0) from xdp-generic to tc" "$CHLBD_LOG" || return 1
	check "tc filter on v0: $(tc_of v0)" has_tc v0 || return 1
	check "no XDP left on v0" no_xdp v0 || return 1
	check "pins: tc_$IF0, no link_$IF0 ($(pins))" \
		bash -c "[ -e $CHLBD_PIN/tc_$IF0 ] && [ ! -e $CHLBD_PIN/link_$IF0 ]" || return 1
	check "state carried over" [ "$(ctl -j backend list $VIP | jq '.backends | length')" = 2 ] || return 1
	check "loaded chlb_tc, not chlb_xdp (the old one gone)" lib_wait_for 5 entries 0 1 || return 1
	chlbd_stop TERM
	# back to XDP, native this time: TC goes
	chlbd_start xdp || return 1
	check "native XDP on v0: $(xdp_of v0)" has_xdp v0 native || return 1
	check "the TC filter went" no_tc v0 || return 1
	check "record went" [ ! -e "$CHLBD_PIN/tc_$IF0" ] || return 1
	chlbd_stop TERM
	# native -> generic (the kernel takes one XDP mode at a time: bridged through TC)
	chlbd_start xdp-generic || return 1
	check "generic XDP on v0: $(xdp_of v0)" has_xdp v0 generic || return 1
	check "no TC left behind" no_tc v0 || return 1
	check "loaded chlb_tc too: it bridged ($(loaded chlb_xdp), $(loaded chlb_tc))" entries 1 1 || return 1
	check "same decisions after the moves" \
		[ "$(probe which "$CHLBD_PIN" "$IF0" 10.0.0.10 80 50 5)" = "$before" ] || return 1
	chlbd_stop TERM
	# -i v2 instead of v0: v0 let go
	lib_bg "chlbd-v2" "$CHLBD" -i v2 --netns "$D_NS" -m xdp-generic -s "$CHLBD_SOCK" \
		--pin-dir "$CHLBD_PIN" --state "$CHLBD_STATE" -f
	CHLBD_PID=$LIB_LASTPID
	lib_wait_up chlbd-v2 ctl_quiet service list || return 1
	check "detached from v0: log" grep -q "detached from v0 (ifindex $IF0, xdp-generic): not asked for" \
		"$LIB_DIR/chlbd-v2.log" || return 1
	check "v0 carries nothing" no_xdp v0 || return 1
	check "v2 carries XDP: $(xdp_of v2)" has_xdp v2 generic || return 1
	check "link_$IF0 unpinned, link_$IF2 pinned ($(pins))" \
		bash -c "[ ! -e $CHLBD_PIN/link_$IF0 ] && [ -e $CHLBD_PIN/link_$IF2 ]" || return 1
	chlbd_stop TERM
	# both, in tc; then shutdown --detach removes every attachment
	lib_bg "chlbd-both" "$CHLBD" -i v0 -i v2 --netns "$D_NS" -m tc -s "$CHLBD_SOCK" \
		--pin-dir "$CHLBD_PIN" --state "$CHLBD_STATE" -f
	CHLBD_PID=$LIB_LASTPID
	lib_wait_up chlbd-both ctl_quiet service list || return 1
	check "tc on v0 and v2" has_tc v0 && check "tc on v2" has_tc v2 || return 1
	check "no XDP on v2 any more" no_xdp v2 || return 1
	ctl shutdown --detach >/dev/null || return 1
	lib_wait_for 5 bash -c "! kill -0 $CHLBD_PID 2>/dev/null" || return 1
	CHLBD_PID=
	check "detach: no XDP on v0" no_xdp v0 && check "detach: no TC on v0" no_tc v0 &&
		check "detach: no XDP on v2" no_xdp v2 && check "detach: no TC on v2" no_tc v2 || return 1
	check "detach: no pins left ($(pins))" no_pins "$CHLBD_PIN" || return 1
	check "bpftool net: nothing of chlb" \
		bash -c "! ip netns exec $D_NS bpftool net show | grep -q chlb" || return 1
}

# A previous chlbd in tc mode on v2 and XDP on v0, restarted with -i v0 only:
# shutdown --detach after a restart that did not name v2 still finds nothing left.
test_detach_after_partial_restart() {
	o_start p1 -i v0 -i v2 -m tc --pin-dir "$CHLBD_PIN" --state "$LIB_DIR/p.state" || return 1
	lib_stop "$O_PID" KILL
	o_start p2 -i v0 -m xdp-generic --pin-dir "$CHLBD_PIN" --state "$LIB_DIR/p.state" || return 1
	check "v2's filter went at the restart" no_tc v2 || return 1
	check "v0 moved to XDP" has_xdp v0 generic || return 1
	"$CHLBCTL" -s "$O_SOCK" shutdown --detach >/dev/null || return 1
	lib_wait_for 5 bash -c "! kill -0 $O_PID 2>/dev/null" || return 1
	check "nothing on v0" no_xdp v0 && check "no TC on v0" no_tc v0 &&
		check "no TC on v2" no_tc v2 || return 1
	check "no pins ($(pins))" no_pins "$CHLBD_PIN"
}

# ---- 6: a second chlbd in the other mode on the same interface is refused ----
test_other_mode_refused() {
	local pin2 xdp_before before
	kill -0 "$CHLBD_PID" 2>/dev/null || chlbd_start xdp-generic || return 1
	ctl_quiet service add $VIP algo jump
	ctl_quiet backend add $VIP 10.1.0.2
	before=$(probe which "$CHLBD_PIN" "$IF0" 10.0.0.10 80 50 6)
	xdp_before=$(xdp_of v0)
	lib_pindir second
	pin2=$LIB_PINDIR
	try_start -i v0 -m tc -s "$LIB_DIR/second.sock" --pin-dir "$pin2" --state "$LIB_DIR/second.state"
	check "tc over another chlbd's XDP refused (exit $RC): $OUT" \
		bash -c "[ $RC != 0 ] && grep -q \"'v0' carries chlb's XDP program (prog id [0-9]*) of another chlbd\" <<<\"\$1\"" _ "$OUT" || return 1
	check "no TC filter put on v0" no_tc v0 || return 1
	check "the first's program still attached: $(xdp_of v0)" [ "$(xdp_of v0)" = "$xdp_before" ] || return 1
	check "the second left no pins ($(ls "$pin2"))" no_pins "$pin2" || return 1
	check "the first still decides the same" \
		[ "$(probe which "$CHLBD_PIN" "$IF0" 10.0.0.10 80 50 6)" = "$before" ] || return 1
	check "the first still answers" ctl service list $VIP >/dev/null || return 1
	try_start -i v0 -m xdp-generic -s "$LIB_DIR/second.sock" --pin-dir "$pin2" --state "$LIB_DIR/second.state"
	check "XDP over another chlbd's XDP refused: $OUT" \
		bash -c "[ $RC != 0 ] && grep -q 'of another chlbd' <<<\"\$1\"" _ "$OUT" || return 1
	# and the other way round: a chlbd in tc on v2, a second one in XDP
	o_start tcfirst -i v2 -m tc --pin-dir "$pin2" --state "$LIB_DIR/tcfirst.state" || return 1
	local tc_before
	tc_before=$(tc_of v2)
	lib_pindir third
	try_start -i v2 -m xdp-generic -s "$LIB_DIR/third.sock" --pin-dir "$LIB_PINDIR" \
		--state "$LIB_DIR/third.state"
	check "XDP over another chlbd's TC refused (exit $RC): $OUT" \
		bash -c "[ $RC != 0 ] && grep -q \"'v2' carries chlb's TC filter (clsact ingress, handle 0xc1a, prog id [0-9]*) of another chlbd\" <<<\"\$1\"" _ "$OUT" || return 1
	check "no XDP put on v2" no_xdp v2 || return 1
	check "the TC chlbd's filter unchanged" [ "$(tc_of v2)" = "$tc_before" ] || return 1
	check "the third left no pins" no_pins "$LIB_PINDIR" || return 1
	"$CHLBCTL" -s "$O_SOCK" shutdown --detach >/dev/null
	lib_wait_for 5 bash -c "! kill -0 $O_PID 2>/dev/null"
}

# ---- 7, 8: shared state file or socket refused; failed starts leave no pins ----
test_shared_state_and_socket_refused() {
	local sum pin2=/sys/fs/bpf/chlb-test-$LIB_ID-shared
	LIB_PINS+=("$pin2")
	kill -0 "$CHLBD_PID" 2>/dev/null || chlbd_start xdp-generic || return 1
	ctl service add 10.0.0.11:80/tcp >/dev/null || return 1
	sum=$(md5sum <"$CHLBD_STATE")
	try_start -i v2 -m xdp-generic -s "$LIB_DIR/other.sock" --pin-dir "$pin2" --state "$CHLBD_STATE"
	check "shared --state refused, naming pid $CHLBD_PID (exit $RC): $OUT" \
		bash -c "[ $RC != 0 ] && grep -qF \"state file '$CHLBD_STATE' is in use by another chlbd (pid $CHLBD_PID\" <<<\"\$1\"" _ "$OUT" || return 1
	check "the state file untouched" [ "$(md5sum <"$CHLBD_STATE")" = "$sum" ] || return 1
	check "no pins, no pin dir" [ ! -e "$pin2" ] || return 1
	check "nothing attached to v2" no_xdp v2 || return 1
	try_start -i v2 -m xdp-generic -s "$CHLBD_SOCK" --pin-dir "$pin2" --state "$LIB_DIR/other.state"
	check "shared socket refused, naming pid $CHLBD_PID (exit $RC): $OUT" \
		bash -c "[ $RC != 0 ] && grep -qF \"control socket '$CHLBD_SOCK' is in use by another chlbd (pid $CHLBD_PID\" <<<\"\$1\"" _ "$OUT" || return 1
	check "no pins, no pin dir" [ ! -e "$pin2" ] || return 1
	check "the first still answers on its socket" ctl service list 10.0.0.11:80/tcp >/dev/null || return 1
	try_start -i v2 -m xdp-generic -s "$LIB_DIR/other.sock" --pin-dir "$CHLBD_PIN" --state "$LIB_DIR/other.state"
	check "shared pin dir refused, naming pid $CHLBD_PID: $OUT" \
		grep -qF "pin directory '$CHLBD_PIN' is in use by another chlbd (pid $CHLBD_PID)" <<<"$OUT" || return 1
	check "the first's pins untouched" [ -e "$CHLBD_PIN/vips" ] && [ -e "$CHLBD_PIN/link_$IF0" ] || return 1
	ctl service del 10.0.0.11:80/tcp >/dev/null
}

test_failed_starts_leave_no_pins() {
	local pin=/sys/fs/bpf/chlb-test-$LIB_ID-fail
	LIB_PINS+=("$pin")
	try_start -i nosuch0 -s "$LIB_DIR/f.sock" --pin-dir "$pin" --state "$LIB_DIR/f.state"
	check "no such interface: exit $RC, no pin dir" \
		bash -c "[ $RC != 0 ] && grep -q \"no interface 'nosuch0'\" <<<\"\$1\" && [ ! -e $pin ]" _ "$OUT" || return 1
	printf 'garbage\n' >"$LIB_DIR/f.state"
	try_start -i v2 -m xdp-generic -s "$LIB_DIR/f.sock" --pin-dir "$pin" --state "$LIB_DIR/f.state"
	check "bad state file: exit $RC, no pin dir: $OUT" bash -c "[ $RC != 0 ] && [ ! -e $pin ]" || return 1
	rm -f "$LIB_DIR/f.state"
	# native XDP on a bridge device (no driver XDP): the kernel refuses the attach
	try_start -i d0 -m xdp -s "$LIB_DIR/f.sock" --pin-dir "$pin" --state "$LIB_DIR/f.state"
	check "attach refused: exit $RC, no pin dir: $OUT" \
		bash -c "[ $RC != 0 ] && grep -q \"couldn't attach XDP program on 'd0'\" <<<\"\$1\" && [ ! -e $pin ]" _ "$OUT" || return 1
	# an existing, empty pin dir stays empty
	mkdir -p "$pin"
	try_start -i d0 -m xdp -s "$LIB_DIR/f.sock" --pin-dir "$pin" --state "$LIB_DIR/f.state"
	check "attach refused: the existing pin dir left empty ($(ls "$pin" 2>/dev/null))" \
		bash -c "[ $RC != 0 ] && [ -z \"\$(ls $pin 2>/dev/null)\" ]" || return 1
	check "no XDP on d0 from the failed starts" no_xdp d0 || return 1
	# a restart that fails on a second interface leaves the first serving and no new link pin
	kill -0 "$CHLBD_PID" 2>/dev/null || chlbd_start xdp-generic || return 1
	chlbd_stop TERM
	try_start -i v0 -i d0 -m xdp -s "$CHLBD_SOCK" --pin-dir "$CHLBD_PIN" --state "$CHLBD_STATE"
	check "restart on v0 + d0 (native) refused: exit $RC" [ "$RC" != 0 ] || return 1
	check "no link pinned for d0 ($(pins))" [ ! -e "$CHLBD_PIN/link_$(ip -n "$D_NS" -o link show d0 | cut -d: -f1)" ] || return 1
	check "v0 still carries chlb's program" has_xdp v0 native || return 1
	check "maps still pinned" [ -e "$CHLBD_PIN/vips" ] && [ -e "$CHLBD_PIN/conns" ]
}

# ---- 9: --ct-size on a restart resizes the pinned table, entries kept ----
ct_max() { bpftool -j map show pinned "$CHLBD_PIN/conns" | jq .max_entries; }
conn_counts() { ctl -j conns $VIP | jq -c '.services[0] | [.entries, .live, .ended]'; }

test_ct_size_change() {
	local est fin conn_before got
	kill -0 "$CHLBD_PID" 2>/dev/null && chlbd_stop TERM
	chlbd_start xdp-generic --ct-size 4096 || return 1
	ctl service add $VIP algo jump >/dev/null 2>&1
	ctl backend add $VIP 10.1.0.2 >/dev/null 2>&1
	ctl backend add $VIP 10.1.0.3 >/dev/null 2>&1
	check "conns max_entries 4096" [ "$(ct_max)" = 4096 ] || return 1
	est=$(probe connect "$CHLBD_PIN" "$IF0" 10.0.0.10 80 200 91) &&
		fin=$(probe connect "$CHLBD_PIN" "$IF0" 10.0.0.10 80 100 92 fin) || return 1
	conn_before=$(ctl -j conns $VIP | jq -c '[.conns[] | [.client, .backend, .slot, .gen, .state]] | sort')
	check "300 entries, 200 live, 100 ended: $(conn_counts)" [ "$(conn_counts)" = "[300,200,100]" ] || return 1
	chlbd_stop TERM
	chlbd_start xdp-generic --ct-size 8192 || return 1
	check "grown: conns max_entries $(ct_max)" [ "$(ct_max)" = 8192 ] || return 1
	check "stats ct_size 8192" [ "$(ctl -j stats | jq .ct_size)" = 8192 ] || return 1
	check "log says so" grep -q "connection table resized from 4096 to 8192 entries (--ct-size): 300 of 300 entries copied" "$CHLBD_LOG" || return 1
	got=$(ctl -j conns $VIP | jq -c '[.conns[] | [.client, .backend, .slot, .gen, .state]] | sort')
	check "the same 300 entries" [ "$got" = "$conn_before" ] || return 1
	check "the attached program reads the new table" \
		[ "$(probe connect "$CHLBD_PIN" "$IF0" 10.0.0.10 80 200 91)" = "$est" ] || return 1
	check "no new entries for flows that had one: $(conn_counts)" [ "$(conn_counts)" = "[300,200,100]" ] || return 1
	chlbd_stop KILL
	# shrink below the entries: the live ones are kept first
	chlbd_start xdp-generic --ct-size 256 || return 1
	check "shrunk: conns max_entries $(ct_max)" [ "$(ct_max)" = 256 ] || return 1
	got=$(conn_counts)
	diag "after shrinking to 256: [entries, live, ended] $got"
	check "every live entry kept, ended ones dropped first: $got" \
		jq -e '.[1] == 200 and .[0] <= 256 and .[0] >= 200' <<<"$got" >/dev/null || return 1
	check "log warns of the entries that did not fit" grep -q "entries did not fit in 256" "$CHLBD_LOG" || return 1
	chlbd_stop TERM
	# no --ct-size: the pinned table keeps its size
	chlbd_start xdp-generic || return 1
	check "kept at 256 without --ct-size" [ "$(ct_max)" = 256 ] || return 1
	ctl service del $VIP >/dev/null
}

# ---- 11: -s naming a file that is not a stale socket is refused ----
test_socket_path_not_removed() {
	local f=$LIB_DIR/precious sum nopin=/sys/fs/bpf/chlb-test-$LIB_ID-nopin
	LIB_PINS+=("$nopin")
	printf 'precious data\n' >"$f"
	sum=$(md5sum <"$f")
	try_start -i v2 -m xdp-generic -s "$f" --pin-dir "$nopin" --state "$LIB_DIR/s.state"
	check "-s on a regular file refused (exit $RC): $OUT" \
		bash -c "[ $RC != 0 ] && grep -qF \"'$f' exists and is not a socket (a regular file): refusing to remove it\" <<<\"\$1\"" _ "$OUT" || return 1
	check "the file intact" [ "$(md5sum <"$f")" = "$sum" ] || return 1
	kill -0 "$CHLBD_PID" 2>/dev/null && chlbd_stop TERM
	sum=$(md5sum <"$CHLBD_STATE")
	try_start -i v0 -m xdp-generic -s "$CHLBD_STATE" --pin-dir "$CHLBD_PIN" --state "$CHLBD_STATE"
	check "-s equal to --state refused (exit $RC): $OUT" \
		bash -c "[ $RC != 0 ] && grep -q 'is the state file' <<<\"\$1\"" _ "$OUT" || return 1
	check "the state file intact, no .prev socket" \
		bash -c "[ \"\$(md5sum <$CHLBD_STATE)\" = '$sum' ] && [ ! -S $CHLBD_STATE.prev ]" || return 1
	ln -s "$f" "$LIB_DIR/link.sock"
	try_start -i v2 -m xdp-generic -s "$LIB_DIR/link.sock" --pin-dir "$nopin" --state "$LIB_DIR/s.state"
	check "-s on a symlink refused: $OUT" grep -q "a symbolic link" <<<"$OUT" || return 1
	check "the symlink's target intact" [ "$(md5sum <"$f")" = "$(md5sum <"$f")" ] && [ -L "$LIB_DIR/link.sock" ] || return 1
	# a stale socket (nobody listening) is removed and replaced
	python3 -c 'import socket,sys; s=socket.socket(socket.AF_UNIX); s.bind(sys.argv[1])' "$CHLBD_SOCK.x" || return 1
	rm -f "$CHLBD_SOCK" && mv "$CHLBD_SOCK.x" "$CHLBD_SOCK"
	chlbd_start xdp-generic || return 1
	check "a stale socket replaced: chlbd answers" ctl service list >/dev/null
}

# ---- 12: the file-descriptor limit, trickling clients ----
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }

test_fd_limit_flood() {
	local t0 ms ticks0 ticks1 hz pid out flood n
	kill -0 "$CHLBD_PID" 2>/dev/null && chlbd_stop TERM
	lib_bg chlbd-fd prlimit --nofile=128 "$CHLBD" -i v0 --netns "$D_NS" -m xdp-generic -s "$CHLBD_SOCK" \
		--pin-dir "$CHLBD_PIN" --state "$CHLBD_STATE" -f
	CHLBD_PID=$LIB_LASTPID
	lib_wait_up chlbd-fd ctl_quiet service list || return 1
	pid=$CHLBD_PID
	# 400 silent connections held open (far beyond the limit), non-blocking connects
	cat >"$LIB_DIR/flood.py" <<-'EOF'
		import socket, sys, time
		held, t0 = [], time.time()
		while len(held) < 400 and time.time() - t0 < 3:
		    s = socket.socket(socket.AF_UNIX)
		    s.setblocking(False)
		    try:
		        s.connect(sys.argv[1])
		        held.append(s)
		    except BlockingIOError:  # the backlog is full: chlbd is still accepting
		        s.close()
		        time.sleep(0.001)
		print("connected", len(held), flush=True)
		time.sleep(30)
	EOF
	lib_bg flood python3 "$LIB_DIR/flood.py" "$CHLBD_SOCK"
	flood=$LIB_LASTPID
	lib_wait_for 10 grep -q connected "$LIB_DIR/flood.log" || return 1
	diag "flood: $(cat "$LIB_DIR/flood.log")"
	sleep 0.5
	ticks0=$(cpu_ticks "$pid")
	t0=$(date +%s%N)
	out=$(ctl --timeout 5 service list 2>&1) || { diag "no answer: $out"; return 1; }
	ms=$((($(date +%s%N) - t0) / 1000000))
	diag "answered in $ms ms"
	check "answered within 2 s at the descriptor limit (${ms} ms)" [ "$ms" -lt 2000 ] || return 1
	sleep 3
	ticks1=$(cpu_ticks "$pid")
	hz=$(getconf CLK_TCK)
	diag "chlbd CPU over ~3 s under the flood: $((ticks1 - ticks0)) ticks (${hz}/s); fds $(ls /proc/$pid/fd | wc -l)"
	check "does not spin (< 1 s of CPU in ~3.5 s)" [ $((ticks1 - ticks0)) -lt "$hz" ] || return 1
	check "the limit logged" grep -q "file-descriptor limit" "$LIB_DIR/chlbd-fd.log" || return 1
	check "still answers" ctl service list >/dev/null || return 1
	lib_stop "$flood"
	# the limit itself (EMFILE at accept, as when other descriptors fill it):
	# lowered under the running chlbd to what it holds now plus a few
	lib_wait_for 5 bash -c "[ \$(ls /proc/$pid/fd | wc -l) -lt 40 ]"
	n=$(($(ls "/proc/$pid/fd" | wc -l) + 8))
	prlimit --pid "$pid" --nofile="$n:$n" || return 1
	lib_bg flood2 python3 "$LIB_DIR/flood.py" "$CHLBD_SOCK"
	flood=$LIB_LASTPID
	lib_wait_for 10 grep -q connected "$LIB_DIR/flood2.log" || return 1
	diag "RLIMIT_NOFILE $n: flood: $(cat "$LIB_DIR/flood2.log")"
	ticks0=$(cpu_ticks "$pid")
	t0=$(date +%s%N)
	out=$(ctl --timeout 5 service list 2>&1) || { diag "no answer: $out"; return 1; }
	ms=$((($(date +%s%N) - t0) / 1000000))
	diag "answered in $ms ms"
	check "answered within 2 s at EMFILE (${ms} ms)" [ "$ms" -lt 2000 ] || return 1
	sleep 3
	ticks1=$(cpu_ticks "$pid")
	diag "chlbd CPU over ~3 s at EMFILE: $((ticks1 - ticks0)) ticks; fds $(ls /proc/$pid/fd | wc -l)"
	check "does not spin at EMFILE (< 1 s of CPU in ~3.5 s)" [ $((ticks1 - ticks0)) -lt "$hz" ] || return 1
	lib_stop "$flood"
	check "still answers" ctl service list >/dev/null || return 1
	chlbd_stop TERM
	return 0
}

test_trickling_client_dropped() {
	local out
	kill -0 "$CHLBD_PID" 2>/dev/null || chlbd_start xdp-generic || return 1
	out=$(python3 - "$CHLBD_SOCK" <<-'EOF'
		import socket, sys, time
		s = socket.socket(socket.AF_UNIX)
		s.connect(sys.argv[1])
		t0 = time.time()
		try:
		    while time.time() - t0 < 20:
		        s.send(b"s")  # never a whole request: no shutdown(SHUT_WR)
		        time.sleep(0.3)
		        s.setblocking(False)
		        try:
		            if s.recv(1) == b"":
		                break
		        except BlockingIOError:
		            pass
		        s.setblocking(True)
		except OSError:
		    pass
		print("%.1f" % (time.time() - t0))
	EOF
	)
	check "a client trickling a byte every 0.3 s is dropped after ~5 s (${out} s)" \
		awk -v t="$out" 'BEGIN { exit !(t >= 4 && t <= 8) }' || return 1
	check "chlbd still answers" ctl service list >/dev/null
}

# ---- 13: chlbctl against a stopped chlbd ----
test_chlbctl_timeout() {
	local t0 ms out rc
	kill -0 "$CHLBD_PID" 2>/dev/null || chlbd_start xdp-generic || return 1
	kill -STOP "$CHLBD_PID"
	t0=$(date +%s%N)
	out=$(ctl --timeout 1 service list 2>&1)
	rc=$?
	ms=$((($(date +%s%N) - t0) / 1000000))
	kill -CONT "$CHLBD_PID"
	check "exit 3 after --timeout 1 (exit $rc, ${ms} ms): $out" [ "$rc" = 3 ] && [ "$ms" -lt 3000 ] || return 1
	check "says why: $out" grep -q "did not answer within 1 s (--timeout)" <<<"$out" || return 1
	out=$(ctl -j --timeout 0.2 stats 2>&1 >/dev/null; kill -STOP "$CHLBD_PID"; ctl -j --timeout 0.2 stats; echo "rc=$?"; kill -CONT "$CHLBD_PID")
	check "JSON mode: an error object, exit 3: $out" grep -q '"error":.*did not answer.*rc=3' <<<"$(tr '\n' ' ' <<<"$out")" || return 1
	out=$(ctl --timeout soon stats 2>&1)
	check "a bad --timeout is a usage error (exit $?): $out" grep -q "'soon': bad value for --timeout" <<<"$out" || return 1
	check "chlbctl help documents --timeout" grep -q -- "--timeout SECS" <<<"$("$CHLBCTL" help)" || return 1
	check "answers again once continued" ctl service list >/dev/null
}

lib_run
