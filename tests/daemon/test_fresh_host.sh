#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# chlbd on a fresh host: no bpffs at /sys/fs/bpf (no systemd to mount one).
# Every chlbd here runs in a private mount namespace of its own (unshare -m)
# whose /sys/fs/bpf has no bpffs, whatever the host has: chlbd must mount one,
# pin there and serve; failed starts (bad interface, an attach the device
# refuses) must leave no pins behind. The host's mounts are never touched,
# and the only interfaces are veths in this suite's network namespace.
. "$(dirname "$0")/../lib.sh"

lib_require_root
lib_require_bins "$CHLBD" "$CHLBCTL"

NS=chlb-$LIB_ID-fh
lib_ns_add "$NS"
lib_veth "$NS" v0 v1 || die "veth"
lib_veth "$NS" v2 v3 || die "veth"
PIN=/sys/fs/bpf/chlb-test-$LIB_ID-fh
NO_BPFFS='while mountpoint -q /sys/fs/bpf; do umount /sys/fs/bpf || exit 1; done'

# fresh_ns [SETUP]: a new private mount namespace without a bpffs on
# /sys/fs/bpf (then SETUP, a shell snippet, runs in it), held open by a
# sleep whose pid is FRESH; in_ns runs a command in it.
fresh_ns() {
	local n=$((${FRESH_N:-0} + 1)) ready
	FRESH_N=$n
	ready=$LIB_DIR/fresh-ns-$n.ready
	lib_bg "fresh-ns-$n" unshare -m --propagation private \
		sh -c "$NO_BPFFS && ${1:-:} && touch $ready && exec sleep 600"
	FRESH=$LIB_LASTPID
	lib_wait_up "fresh-ns-$n" test -e "$ready"
}
in_ns() { nsenter -t "$FRESH" -m "$@"; }
fstype() { in_ns stat -f -c %T "$1" 2>/dev/null; }

# chlbd_in_ns NAME PIN [ARGS]: chlbd -f in the namespace, in the background (pid
# CHLBD_PID, socket CHLBD_SOCK: ctl talks to it).
chlbd_in_ns() {
	local name=$1 pin=$2
	shift 2
	CHLBD_SOCK=$LIB_DIR/$name.sock
	lib_bg "$name" in_ns "$CHLBD" -f --netns "$NS" -s "$CHLBD_SOCK" --pin-dir "$pin" \
		--state "$LIB_DIR/$name.state" "$@"
	CHLBD_PID=$LIB_LASTPID
	lib_wait_up "$name" ctl_quiet service list
}

# failed RC OUT NEEDLE: a start failed (RC != 0) and said NEEDLE.
failed() { [ "$1" != 0 ] && grep -qF -- "$3" <<<"$2"; }
no_xdp_on() { ! ip -n "$NS" link show "$1" | grep -q xdp; }

test_starts_mounts_pins_serves() {
	local ifindex
	fresh_ns || return 1
	check "no bpffs before" [ "$(fstype /sys/fs/bpf)" != bpf_fs ] || return 1
	chlbd_in_ns fh1 "$PIN" -i v0 -m xdp-generic || return 1
	check "bpffs mounted on /sys/fs/bpf" [ "$(fstype /sys/fs/bpf)" = bpf_fs ] || return 1
	check "the mount logged" grep -q "bpffs: none was mounted .*mounted one on /sys/fs/bpf$" \
		"$LIB_DIR/fh1.log" || return 1
	# as under `ip netns exec`: the pins go with the namespace; say so (also
	# where pid 1's namespace can't be read, as in some sandboxes)
	check "warned: a private mount namespace" grep -q "bpffs: this is a private mount namespace" \
		"$LIB_DIR/fh1.log" || return 1
	ifindex=$(ip -n "$NS" -o link show v0 | cut -d: -f1)
	check "maps and link pinned: $(in_ns ls "$PIN" | tr '\n' ' ')" \
		in_ns sh -c "[ -e $PIN/vips ] && [ -e $PIN/conns ] && [ -e $PIN/link_$ifindex ]" || return 1
	check "the pins live in chlbd's mount namespace, not the host's" [ ! -e "$PIN" ] || return 1
	ctl service add 10.0.0.10:80/tcp algo maglev >/dev/null || return 1
	ctl backend add 10.0.0.10:80/tcp 10.1.0.2 >/dev/null || return 1
	check "chlbctl round trip" [ "$(ctl -j service list | jq '.services[0].backends')" = 1 ] ||
		return 1
	ctl shutdown --detach >/dev/null || return 1
	wait "$CHLBD_PID"
	check "shutdown --detach unpinned" in_ns [ ! -e "$PIN" ]
}

test_bad_interface_leaves_nothing() {
	local out rc
	fresh_ns || return 1
	out=$(in_ns "$CHLBD" -f -i nosuch0 --netns "$NS" -m xdp-generic -s "$LIB_DIR/bad.sock" \
		--pin-dir "$PIN-bad" --state "$LIB_DIR/bad.state" 2>&1)
	rc=$?
	check "bad interface: exit $rc, says so: $out" failed "$rc" "$out" "no interface 'nosuch0'" ||
		return 1
	check "no pin directory" in_ns [ ! -e "$PIN-bad" ] || return 1
	check "refused before mounting anything" [ "$(fstype /sys/fs/bpf)" != bpf_fs ]
}

# Native XDP: v2 takes it, lo refuses it, after the maps were loaded and pinned.
test_failed_attach_leaves_no_pins() {
	local out rc
	fresh_ns || return 1
	out=$(in_ns "$CHLBD" -f -i v2 -i lo --netns "$NS" -m xdp -s "$LIB_DIR/bad.sock" \
		--pin-dir "$PIN-att" --state "$LIB_DIR/bad.state" 2>&1)
	rc=$?
	check "attach refused: exit $rc: $out" failed "$rc" "$out" "XDP program on 'lo'" || return 1
	check "says what to do instead" grep -qF "its driver has no native XDP; use -m xdp-generic or -m tc" <<<"$out" || return 1
	check "it had mounted a bpffs" [ "$(fstype /sys/fs/bpf)" = bpf_fs ] || return 1
	check "no pins left: $(in_ns ls -A "$PIN-att" 2>&1)" in_ns [ ! -e "$PIN-att" ] || return 1
	check "v2 attached first, detached again" grep -q "attached to v2" <<<"$out" || return 1
	check "no program left on v2" no_xdp_on v2
}

# No /sys/fs/bpf directory at all (a /sys without it): chlbd creates it first.
test_no_sys_fs_bpf_directory() {
	fresh_ns 'mount -t tmpfs -o mode=0755 chlb-test /sys/fs' || return 1
	check "no /sys/fs/bpf" in_ns [ ! -e /sys/fs/bpf ] || return 1
	chlbd_in_ns fh2 "$PIN" -i v0 -m xdp-generic || return 1
	check "created and mounted" [ "$(fstype /sys/fs/bpf)" = bpf_fs ] || return 1
	ctl shutdown --detach >/dev/null || return 1
	wait "$CHLBD_PID"
}

# A pin dir outside /sys/fs/bpf: the bpffs goes on its parent, never over files.
test_pin_dir_elsewhere() {
	local out rc
	fresh_ns || return 1
	chlbd_in_ns fh3 "$LIB_DIR/bpf/chlb" -i v0 -m xdp-generic || return 1
	check "bpffs on the pin dir's parent" [ "$(fstype "$LIB_DIR/bpf")" = bpf_fs ] || return 1
	check "pins there" in_ns [ -e "$LIB_DIR/bpf/chlb/vips" ] || return 1
	ctl shutdown --detach >/dev/null || return 1
	wait "$CHLBD_PID"
	# $LIB_DIR holds files: mounting over it would hide them
	out=$(in_ns "$CHLBD" -f -i v0 --netns "$NS" -m xdp-generic -s "$LIB_DIR/bad.sock" \
		--pin-dir "$LIB_DIR/chlb" --state "$LIB_DIR/bad.state" 2>&1)
	rc=$?
	check "non-empty parent refused: exit $rc: $out" failed "$rc" "$out" "is not empty" || return 1
	check "nothing mounted over it" [ "$(fstype "$LIB_DIR")" != bpf_fs ] || return 1
	check "its files still there" [ -e "$LIB_DIR/fh3.log" ]
}

lib_run
