# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# Shared by tests/daemon/test_*.sh: one network namespace with a veth pair,
# chlbd attached (xdp-generic) to v0 joining only that netns, pins in the
# host bpffs under a per-run directory. Backends 10.1.0.2-60 are on-link
# with permanent neighbour entries, so next hops resolve without traffic.
. "$(dirname "$0")/../lib.sh"

lib_require_root
lib_require_bpffs
PROBE=$BUILD/tests/tools/chlb-probe
lib_require_bins "$CHLBD" "$CHLBCTL" "$PROBE"

D_NS=chlb-$LIB_ID-d
lib_ns_add "$D_NS"
lib_veth "$D_NS" v0 v1 || die "veth"
ip -n "$D_NS" addr add 10.1.0.1/24 dev v0
ip -n "$D_NS" addr add 2001:db8::1/64 dev v0 nodad
for i in $(seq 2 60); do
	ip -n "$D_NS" neigh replace "10.1.0.$i" lladdr "02:00:00:00:01:$(printf %02x "$i")" \
		dev v0 nud permanent
done
D_IFINDEX=$(ip -n "$D_NS" -o link show v0 | cut -d: -f1)
lib_pindir d
D_PIN=$LIB_PINDIR
D_SOCK=$LIB_DIR/d.sock
D_STATE=$LIB_DIR/d.state
D_PID=
D_STARTS=0

c() { "$CHLBCTL" -s "$D_SOCK" "$@"; }
c_quiet() { "$CHLBCTL" -s "$D_SOCK" "$@" >/dev/null 2>&1; }

# d_start [ARGS]: chlbd in the background; waits until it answers.
d_start() {
	D_STARTS=$((D_STARTS + 1))
	D_LOG=$LIB_DIR/chlbd-$D_STARTS.log
	lib_bg "chlbd-$D_STARTS" "$CHLBD" -i v0 --netns "$D_NS" -m xdp-generic -s "$D_SOCK" \
		--pin-dir "$D_PIN" --state "$D_STATE" -f "$@"
	D_PID=$LIB_LASTPID
	lib_wait_up "chlbd-$D_STARTS" c_quiet service list
}

# d_stop [SIGNAL]: stop chlbd (TERM by default) and wait for it to exit.
d_stop() {
	[ -n "$D_PID" ] || return 0
	lib_stop "$D_PID" "${1:-TERM}"
	D_PID=
}

# probe ARGS: chlb-probe in the daemon's netns, host mount namespace (pins visible).
probe() { nsenter --net="/var/run/netns/$D_NS" "$PROBE" "$@"; }

# state text without comments
saved() { c save | grep -v '^#'; }
