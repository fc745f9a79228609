#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# Control-plane benchmark -> $BUILD/bench/control.json:
#   swap_{ring_n1000_k160,jump_n1000,maglev_n1000_m65537}_ms: median time from a
#     membership change request to the pinned view naming the new table
#     (tests/bench/control.c), 21 changes each; the data plane serves the new
#     table from that instant;
#   durable_{ring,jump,maglev}_ms: the same changes, median time from the request
#     to chlbd's reply, sent once the change is durable (state file fsynced and
#     renamed, directory fsynced); durable_ms: the largest of the three;
#   swap_*_build_ms, swap_*_write_publish_ms: chlbd's own split of the swap (the
#     table build; the table's write into its map + the view's publication);
#     swap_*_stage_ms: the state file formatted, written and fsynced on chlbd's
#     second thread meanwhile;
#   swap_ring_s100_n80_ms: as swap_*, one backend of one of 100 ring services
#     of 80 backends each (8,000 in all): what a change costs beyond its own
#     table's build grows with every service's backends;
#   burst_100_services_ms: one backend shared by 100 services (ring, 80 backends
#     each) leaves in one `chlbctl batch`: request to reply, one swap per service;
#   restart_ms: chlbd start (TERM'd before) -> answering its socket, adopting
#     pinned state with 100 services x 80 backends (wall clock, polled every 2 ms);
#     8,000 (service, backend) pairs: a backend slot each, of CHLB_MAX_BACKENDS 8,192;
#     restart_ready_ms: the same as chlbd logs it (process start -> ready).
. "$(dirname "$0")/../lib.sh"
lib_require_root
OUT=${1:-$BUILD/bench/control.json}
BENCH=$BUILD/tests/bench/control
lib_require_bins "$CHLBD" "$CHLBCTL" "$BENCH"

NS=chlb-$LIB_ID-bench
lib_ns_add "$NS"
ip -n "$NS" link add v0 type veth peer name v1 || die veth
ip -n "$NS" link set v0 up
ip -n "$NS" link set v1 up
ip -n "$NS" addr add 10.2.0.1/16 dev v0
be() { echo "10.2.$(($1 / 250)).$(($1 % 250 + 2))"; }
for i in $(seq 0 999); do
	echo "neigh replace $(be "$i") lladdr 02:00:00:00:$(printf %02x:%02x $((i / 256)) $((i % 256))) dev v0 nud permanent"
done >"$LIB_DIR/neigh"
ip -n "$NS" -batch "$LIB_DIR/neigh" || die "neighbours"
lib_pindir bench
PIN=$LIB_PINDIR
SOCK=$LIB_DIR/sock
STATE=$LIB_DIR/state
c() { "$CHLBCTL" -s "$SOCK" "$@"; }
start() {
	lib_bg "chlbd$1" "$CHLBD" -i v0 --netns "$NS" -m xdp-generic -s "$SOCK" --pin-dir "$PIN" \
		--state "$STATE" -f
	PID=$LIB_LASTPID
}

start 1
lib_wait_for 10 c service list >/dev/null || die "chlbd did not start"
{
	echo "service add 10.0.0.10:80/tcp algo ring vnodes 160"
	echo "service add 10.0.0.10:81/tcp algo jump"
	echo "service add 10.0.0.10:82/tcp algo maglev table 65537"
	for p in 80 81 82; do
		for i in $(seq 0 999); do echo "backend add 10.0.0.10:$p/tcp $(be "$i")"; done
	done
} >"$LIB_DIR/n1000.conf"
c apply -f "$LIB_DIR/n1000.conf" || die "apply n1000"
sleep 0.3 # let the timer preallocate the next table slots
declare -A R DUR
for p in 80:swap_ring_n1000_k160_ms 81:swap_jump_n1000_ms 82:swap_maglev_n1000_m65537_ms; do
	out=$("$BENCH" "$SOCK" "$PIN" "10.0.0.10:${p%%:*}/tcp" "$(be 500)" 21) || die "$out"
	echo "  ${p#*:}: $out"
	R[${p#*:}]=$(awk '{ print $2 }' <<<"$out")
	DUR[${p%%:*}]=$(awk '{ print $8 }' <<<"$out")
done
# the commits' own lines (each follows its swap's): staged on the second thread
grep -E "service 10.0.0.10:8[012]/tcp: swapped|committed: " "$LIB_DIR/chlbd1.log" |
	awk '/swapped/ { p = $0; sub(/.*10.0.0.10:/, "", p); sub(/\/.*/, "", p); next }
	     p != "" { s = $0; sub(/.*staged on a second thread /, "", s); sub(/,.*/, "", s); print p, s; p = "" }' \
	>"$LIB_DIR/staged"

# the n1000 services go first: their 3,000 backend slots (one per service and
# backend) are free again once their tables are past the grace period
printf 'service del 10.0.0.10:%s/tcp\n' 80 81 82 | c batch -f - || die "del n1000"
sleep 0.5
# 100 services x 80 backends, then a restart that adopts them
{
	for s in $(seq 0 99); do
		echo "service add 10.0.1.$s:80/tcp algo ring vnodes 160"
		for i in $(seq 0 79); do echo "backend add 10.0.1.$s:80/tcp $(be "$i")"; done
	done
} >"$LIB_DIR/s100.conf"
c apply -f "$LIB_DIR/s100.conf" || die "apply s100"
sleep 0.5
out=$("$BENCH" "$SOCK" "$PIN" 10.0.1.50:80/tcp "$(be 40)" 21) || die "$out"
echo "  swap_ring_s100_n80_ms: $out"
S100=$(awk '{ print $2 }' <<<"$out")
# a burst: one backend shared by all 100 services leaves (one batch: one swap each)
for s in $(seq 0 99); do echo "backend del 10.0.1.$s:80/tcp $(be 50)"; done >"$LIB_DIR/burst"
swaps0=$(c -j service list | jq '[.services[].swaps] | add')
t0=$(date +%s%N)
c batch -f "$LIB_DIR/burst" || die "burst"
burst=$((($(date +%s%N) - t0) / 1000))
swaps1=$(c -j service list | jq '[.services[].swaps] | add')
echo "  burst_100_services_ms: $((burst / 1000)).$(printf %03d $((burst % 1000))) ($((swaps1 - swaps0)) swaps)"
sleep 0.3
kill -TERM "$PID"
wait "$PID"
t0=$(date +%s%N)
start 2
until c service list >/dev/null 2>&1; do sleep 0.002; done
restart=$((($(date +%s%N) - t0) / 1000))
ready=$(sed -n 's/.*ready: .*, \([0-9.]*\) ms after start.*/\1/p' "$LIB_DIR/chlbd2.log")
grep -q "adopted pinned maps" "$LIB_DIR/chlbd2.log" || die "restart did not adopt the pinned maps"
echo "  restart_ms: $((restart / 1000)).$(printf %03d $((restart % 1000))) (chlbd: ready after $ready ms)"
# chlbd's own split of each swap: build (the table builder) vs write + publish
median() { sort -n | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
split() {
	grep "service 10.0.0.10:$1/tcp: swapped" "$LIB_DIR/chlbd1.log" | tail -20 |
		sed 's/.*(build \([0-9.]*\), write \([0-9.]*\), publish \([0-9.]*\)).*/\1 \2 \3/' \
		>"$LIB_DIR/split"
	echo "$(awk '{ print $1 }' "$LIB_DIR/split" | median) $(awk '{ print $2 + $3 }' "$LIB_DIR/split" | median)"
}
read -r RB RW <<<"$(split 80)"
read -r JB JW <<<"$(split 81)"
read -r MB MW <<<"$(split 82)"
staged() { awk -v p="$1" '$1 == p { print $2 }' "$LIB_DIR/staged" | tail -20 | median; }
RS=$(staged 80) JS=$(staged 81) MS=$(staged 82)
DMAX=$(printf '%s\n' "${DUR[80]}" "${DUR[81]}" "${DUR[82]}" | sort -n | tail -1)
echo "  build / write+publish medians (ms): ring $RB / $RW, jump $JB / $JW, maglev $MB / $MW"
echo "  state staged meanwhile (ms): ring $RS, jump $JS, maglev $MS; durable: ring ${DUR[80]}, jump ${DUR[81]}, maglev ${DUR[82]}"
c shutdown --detach >/dev/null

cat >"$OUT" <<EOF
{
  "swap_ring_n1000_k160_ms": ${R[swap_ring_n1000_k160_ms]},
  "swap_jump_n1000_ms": ${R[swap_jump_n1000_ms]},
  "swap_maglev_n1000_m65537_ms": ${R[swap_maglev_n1000_m65537_ms]},
  "swap_ring_build_ms": ${RB:-null},
  "swap_ring_write_publish_ms": ${RW:-null},
  "swap_jump_build_ms": ${JB:-null},
  "swap_jump_write_publish_ms": ${JW:-null},
  "swap_maglev_build_ms": ${MB:-null},
  "swap_maglev_write_publish_ms": ${MW:-null},
  "swap_ring_stage_ms": ${RS:-null},
  "swap_jump_stage_ms": ${JS:-null},
  "swap_maglev_stage_ms": ${MS:-null},
  "durable_ring_n1000_k160_ms": ${DUR[80]},
  "durable_jump_n1000_ms": ${DUR[81]},
  "durable_maglev_n1000_m65537_ms": ${DUR[82]},
  "durable_ms": $DMAX,
  "swap_ring_s100_n80_ms": $S100,
  "burst_100_services_ms": $((burst / 1000)).$(printf %03d $((burst % 1000))),
  "burst_100_services_swaps": $((swaps1 - swaps0)),
  "restart_ms": $((restart / 1000)).$(printf %03d $((restart % 1000))),
  "restart_ready_ms": ${ready:-null},
  "restart_services": 100,
  "restart_backends_per_service": 80
}
EOF
echo "  -> $OUT"
