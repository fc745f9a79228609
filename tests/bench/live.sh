#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# Live-traffic benchmark -> $BUILD/bench/live.json (docs/bench-live.md).
#
# Two namespaces. In GEN, the generator (tests/bench/live: live frames from
# BPF_PROG_TEST_RUN, redirected into a veth) and the far-side counter. In
# LB, the peers: lb0 runs chlb (chlbd started as a daemon, native XDP, the
# services `fwd l2dsr` to backends on lb0's own link, so chlb sends every
# frame back with XDP_TX); lb1 runs a bare XDP_TX program, the ceiling.
#
#   GEN  ga  <---- veth, 2 queues ---->  lb0  chlb (chlbd -m xdp)   LB
#        gc  <---- veth, 2 queues ---->  lb1  xdp_tx (the ceiling)
#
# Each case: the ceiling with the same frames and generator CPUs, the case
# through chlb, the ceiling again; ratio = case / mean of the two ceilings.
# Mpps are frames returned to the counter per second over LIVE_SECS (after
# 0.2 s of warm-up), and per CPU-second the generator threads got (the
# frames' whole way runs in their context): on a shared host, the latter. chlb's per-reason counter deltas over the case show
# which path the packets took; a case whose counters do not show the
# intended path fails the bench (after the JSON is written).
#
# LIVE_SECS (default 2), LIVE_ALGO (maglev), LIVE_CPU (the generator's CPU
# for one-CPU cases, 0), LIVE_CASES (names, default all) change the run.
# LIVE_PROG_STATS=1 adds each program's own ns per run (chlb's, the
# ceiling's: the kernel's BPF run-time statistics, on only while a case
# runs; off by default, since they slow every BPF program on the host).
# LIVE_PERF=DIR records each case through chlb with `perf record -a -g`
# into DIR/NAME.data (the window only), to see where the time goes, and
# writes DIR/chlb_xdp.lines: where each source line of chlb's program sits
# in its JIT image (tests/bench/prog_lines), for `perf script -F sym,symoff`.
. "$(dirname "$0")/../lib.sh"
lib_require_root
lib_require_bpffs
OUT=${1:-$BUILD/bench/live.json}
LIVE_BIN=$BUILD/tests/bench/live
LINES_BIN=$BUILD/tests/bench/prog_lines
XDP_TX_OBJ=$BUILD/xdp_tx.bpf.o
LIB_BIN_VARS+=(LIVE_BIN LINES_BIN XDP_TX_OBJ)
lib_require_bins "$CHLBD" "$CHLBCTL" "$LIVE_BIN" "$XDP_TX_OBJ"
SECS=${LIVE_SECS:-2}
ALGO=${LIVE_ALGO:-maglev}
CPU=${LIVE_CPU:-0}
NCPU=$(nproc)
CPU2=$CPU,$(((CPU + 1) % NCPU))
VIP=10.0.0.10
VIP2=10.0.0.20
VIP6=2001:db8::10

GEN=chlb-$LIB_ID-lgen
LB=chlb-$LIB_ID-llb
lib_ns_add "$GEN"
lib_ns_add "$LB"
# two queues a side: veth queues a frame on the peer's ring of the sending
# CPU (smp_processor_id() % queues), so two generator CPUs run two NAPIs
for p in "ga lb0" "gc lb1"; do
	set -- $p
	ip -n "$GEN" link add "$1" numtxqueues 2 numrxqueues 2 type veth peer name "$2" \
		numtxqueues 2 numrxqueues 2 netns "$LB" || die "veth $1-$2"
	ip -n "$GEN" link set "$1" up
	ip -n "$LB" link set "$2" up
done
ip -n "$LB" link set dev lb1 xdpdrv obj "$XDP_TX_OBJ" sec xdp || die "xdp_tx on lb1"
ip -n "$LB" addr add 10.2.0.1/16 dev lb0
ip -n "$LB" addr add 2001:db8:2::1/64 dev lb0 nodad
for i in 1 2 3 4; do
	ip -n "$LB" neigh replace "10.2.0.1$i" lladdr "02:00:00:00:02:0$i" dev lb0 nud permanent
	ip -n "$LB" neigh replace "2001:db8:2::1$i" lladdr "02:00:00:00:06:0$i" dev lb0 nud permanent
done

CONF=$LIB_DIR/lb.conf
{
	echo "service add $VIP:80/tcp algo $ALGO fwd l2dsr"
	for i in 1 2 3; do echo "backend add $VIP:80/tcp 10.2.0.1$i"; done
	echo "service add [$VIP6]:80/tcp algo $ALGO fwd l2dsr"
	for i in 1 2 3; do echo "backend add [$VIP6]:80/tcp 2001:db8:2::1$i"; done
} >"$CONF"
CHLBD_IF=lb0
CHLBD_NETNS=$LB
chlbd_start xdp -c "$CONF" || die "chlbd did not start"
STATS=$CHLBD_PIN/global_stats
[ -e "$STATS" ] || die "no $STATS"
ctl -j stats | jq -e '.ct_size' >/dev/null || die "chlbctl stats"
CT_SIZE=$(ctl -j stats | jq .ct_size)

if [ -n "${LIVE_PERF:-}" ]; then
	mkdir -p "$LIVE_PERF"
	"$LINES_BIN" "$(ip -n "$LB" -j link show lb0 | jq '.[0].xdp.prog.id')" >"$LIVE_PERF/chlb_xdp.lines" ||
		die "prog_lines"
fi
declare -A PROG_ID=()
if [ "${LIVE_PROG_STATS:-0}" = 1 ]; then
	PROG_ID[ga]=$(ip -n "$LB" -j link show lb0 | jq '.[0].xdp.prog.id')
	PROG_ID[gc]=$(ip -n "$LB" -j link show lb1 | jq '.[0].xdp.prog.id')
fi
# gen DEV CPUS FAMILY FLAGS VIP BASE MASK [SECS [WARM]]: one run of the tool, its JSON
gen() {
	"$LIVE_BIN" --netns "$GEN" --dev "$1" --cpus "$2" --family "$3" --flags "$4" --vip "$5" \
		--base "$6" --mask "$7" --secs "${8:-$SECS}" --warm "${9:-0.2}" --stats "$STATS" \
		${PROG_ID[$1]:+--prog-id "${PROG_ID[$1]}"}
}
# prep CPUS FAMILY FLAGS VIP BASE MASK: untimed traffic through chlb (a flow's SYN, its entry)
prep() { gen ga "$1" "$2" "$3" "$4" "$5" "$6" 0.1 0 >/dev/null || die "prep $*"; }

CASES_JSON=$LIB_DIR/cases.json
echo '{}' >"$CASES_JSON"
FAILED=()
# run_case NAME EXPECT CPUS FAMILY FLAGS VIP BASE MASK [DURING]: ceiling, case,
# ceiling; EXPECT a jq test of the chlb counter deltas (.chlb) and the case (.);
# DURING a command run in the background 1 s into the case.
run_case() {
	local name=$1 expect=$2 during=${9:-} c0 c1 r pid= perf=
	shift 2
	set -- "${@:1:6}"
	c0=$(gen gc "$@") || die "$name: ceiling"
	[ -n "$during" ] && { (sleep 1 && $during >/dev/null) & pid=$!; }
	if [ -n "${LIVE_PERF:-}" ]; then
		mkdir -p "$LIVE_PERF"
		(sleep 0.3 && perf record -q -a -g -o "$LIVE_PERF/$name.data" -- sleep "$SECS" \
			>/dev/null 2>&1) &
		perf=$!
	fi
	r=$(gen ga "$@") || die "$name: chlb"
	[ -n "$perf" ] && wait "$perf"
	[ -n "$pid" ] && wait "$pid"
	c1=$(gen gc "$@") || die "$name: ceiling"
	r=$(jq -c --argjson c0 "$c0" --argjson c1 "$c1" --argjson n "$(tr , ' ' <<<"$1" | wc -w)" '
		(($c0.mpps + $c1.mpps) / 2) as $ceil |
		{ mpps, ceiling_mpps: ($ceil * 1000 | round / 1000), ceiling_runs_mpps: [$c0.mpps, $c1.mpps],
		  ratio: (if $ceil > 0 then (.mpps / $ceil * 1000 | round / 1000) else null end),
		  cpu_ns_over_ceiling: (if .mpps > 0 and $ceil > 0
			then ($n * 1000 * (1 / .mpps - 1 / $ceil) * 10 | round / 10) else null end),
		  mpps_per_gen_cpu,
		  ceiling_mpps_per_gen_cpu: ((($c0.mpps_per_gen_cpu + $c1.mpps_per_gen_cpu) / 2) * 1000 | round / 1000),
		  ratio_per_gen_cpu: (if $c0.mpps_per_gen_cpu + $c1.mpps_per_gen_cpu > 0 then
			(.mpps_per_gen_cpu / (($c0.mpps_per_gen_cpu + $c1.mpps_per_gen_cpu) / 2) * 1000 | round / 1000) else null end),
		  ns_over_ceiling_per_gen_cpu: (if .mpps_per_gen_cpu > 0 and $c0.mpps_per_gen_cpu + $c1.mpps_per_gen_cpu > 0
			then (1000 * (1 / .mpps_per_gen_cpu - 2 / ($c0.mpps_per_gen_cpu + $c1.mpps_per_gen_cpu)) * 10 | round / 10) else null end),
		  generator_cpus: .cpus, per_cpu_mpps, gen_cpu_s, sent, returned, chlb,
		  host_cpu_busy, loadavg1 } +
		(if .prog_ns_per_run then { prog_ns_per_run, ceiling_prog_ns_per_run:
			((($c0.prog_ns_per_run // 0) + ($c1.prog_ns_per_run // 0)) / 2 * 10 | round / 10) } else {} end)' <<<"$r") || die "$name: $r"
	if jq -e "$expect" <<<"$r" >/dev/null; then
		r=$(jq -c '. + { path_ok: true }' <<<"$r")
	else
		r=$(jq -c '. + { path_ok: false }' <<<"$r")
		FAILED+=("$name")
	fi
	jq --arg k "$name" --argjson v "$r" '. + { ($k): $v }' "$CASES_JSON" >"$CASES_JSON.tmp" &&
		mv "$CASES_JSON.tmp" "$CASES_JSON"
	jq -r --arg k "$name" '"  \($k | . + " " * (22 - length)) \(.mpps) Mpps, ceiling \(.ceiling_mpps) -> \(.ratio); per generator CPU-second \(.mpps_per_gen_cpu) vs \(.ceiling_mpps_per_gen_cpu) -> \(.ratio_per_gen_cpu) (\(.ns_over_ceiling_per_gen_cpu) ns a packet more\(if .prog_ns_per_run then "; in the program \(.prog_ns_per_run) ns vs \(.ceiling_prog_ns_per_run)" else "" end)), path \(if .path_ok then "ok" else "WRONG" end): \(.chlb | tojson)"' <<<"$r"
}
want() { [ -z "${LIVE_CASES:-}" ] || [[ " $LIVE_CASES " == *" $1 "* ]]; }

# Each case's expected path, as shares of what chlb forwarded (f):
# small differences are the handful of packets a case's first moment or a
# concurrent ceiling run leaves in flight.
F='(.chlb.forwarded // 0) as $f | $f > 0 and (.chlb.drop_no_route // 0) == 0 and (.chlb.pass_no_neigh // 0) == 0'
echo "== live frames, $ALGO, ${SECS} s a case, generator on CPU $CPU (two-CPU case: $CPU2)"

# one flow, SYN: decided from the current table, SYN stamp written; nothing in conns
want syn_one && run_case syn_one "$F and (.chlb.ct_insert // 0) == 0 and (.chlb.ct_hit // 0) == 0" \
	"$CPU" 4 syn $VIP 0x10 0
# one flow, ACK after its SYN: the first ACK writes the entry, every other one hits it
want ack_one && { prep "$CPU" 4 syn $VIP 0x10 0; run_case ack_one \
	"$F and (.chlb.ct_hit // 0) >= 0.999 * \$f and (.chlb.ct_insert // 0) <= 1" \
	"$CPU" 4 ack $VIP 0x10 0; }
# fresh source per packet, ACK, on a service configured just before: its
# view still holds the tables of each step (service add, then one backend
# at a time), which disagree about every flow (the oldest has no backend):
# every packet is a miss that would write an entry, and the CPU's insert
# budget lets a bounded number do so (ct_insert + ct_no_budget = every
# packet). Before any SYN flood, so no SYN stamp is fresh: none of these is
# taken for a handshake ACK.
if want ack_flood_change; then
	ctl service add $VIP2:80/tcp algo "$ALGO" fwd l2dsr >/dev/null || die "service add $VIP2"
	for i in 1 2 3; do
		ctl backend add $VIP2:80/tcp "10.2.0.1$i" >/dev/null || die "backend add $VIP2"
	done
	run_case ack_flood_change \
		"$F and (.chlb.ct_miss // 0) >= 0.999 * \$f and (.chlb.ct_insert // 0) + (.chlb.ct_no_budget // 0) >= 0.99 * \$f" \
		"$CPU" 4 ack $VIP2 0x200000 0xffffffff
fi
# fresh source per packet, SYN: the connection filter read, a SYN stamp written, no entry
want syn_flood && run_case syn_flood "$F and (.chlb.ct_insert // 0) == 0" \
	"$CPU" 4 syn $VIP 0x400000 0xffffffff
# the same sources, ACK: each a handshake ACK (a fresh SYN stamp) that writes its
# entry into a table kept full by the runs before
want ack_after_syn && run_case ack_after_syn \
	"$F and (.chlb.ct_insert // 0) >= 0.99 * \$f and (.chlb.ct_hit // 0) <= 0.01 * \$f" \
	"$CPU" 4 ack $VIP 0x400000 0xffffffff
# 4096 established flows, ACKs round robin; 1 s in, a fourth backend is added
# (a change that moves a quarter of the flows): every packet still hits its entry
if want established_change; then
	prep "$CPU" 4 syn $VIP 0x600000 4095
	prep "$CPU" 4 ack $VIP 0x600000 4095
	run_case established_change "$F and (.chlb.ct_hit // 0) >= 0.999 * \$f and (.chlb.ct_insert // 0) == 0" \
		"$CPU" 4 ack $VIP 0x600000 4095 "$CHLBCTL -s $CHLBD_SOCK backend add $VIP:80/tcp 10.2.0.14"
fi
# IPv6, one flow, ACK after its SYN (entry hit): a 37-byte CRC, a 40-byte key
want ipv6_ack_one && { prep "$CPU" 6 syn $VIP6 0x10 0; run_case ipv6_ack_one \
	"$F and (.chlb.ct_hit // 0) >= 0.999 * \$f and (.chlb.ct_insert // 0) <= 1" \
	"$CPU" 6 ack $VIP6 0x10 0; }
# two generator CPUs at once, a flow each, ACK (entry hit); the ceiling on both CPUs too
want two_cpu_ack && { prep "$CPU2" 4 syn $VIP 0x800000 0; run_case two_cpu_ack \
	"$F and (.chlb.ct_hit // 0) >= 0.999 * \$f and (.chlb.ct_insert // 0) <= 2" \
	"$CPU2" 4 ack $VIP 0x800000 0; }
# two generator CPUs, fresh source per packet, SYN
want two_cpu_syn_flood && run_case two_cpu_syn_flood "$F and (.chlb.ct_insert // 0) == 0" \
	"$CPU2" 4 syn $VIP 0xa00000 0xffffffff

ct=$(ctl -j stats | jq '{ ct_entries, ct_size }')
jq --argjson meta "{\"algo\": \"$ALGO\", \"secs\": $SECS, \"kernel\": \"$(uname -r)\",
	\"host_cpus\": $NCPU, \"ct_size\": $CT_SIZE, \"frame_bytes\": {\"ipv4\": 64, \"ipv6\": 80},
	\"end\": $ct}" '{ meta: $meta, cases: . }' "$CASES_JSON" >"$OUT" || die "writing $OUT"
echo "  -> $OUT"
[ ${#FAILED[@]} = 0 ] || die "cases whose counters do not show the intended path: ${FAILED[*]}"
