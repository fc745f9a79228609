#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# Entry-sync benchmark -> $BUILD/bench/sync.json:
#   sync_records_per_s_plain, sync_records_per_s_sealed, sync_seal_ns_per_record,
#     sync_wire_bytes_per_record, sync_handshake_us: tests/bench/sync_auth (one
#     CPU, no sockets, no maps: what each end does to a message of 256 records);
#   dump_1m_*: a whole dump between two chlbds, each in its own network
#     namespace (the data plane on a veth pair of its own, xdp-generic; the sync
#     link a veth pair between the namespaces; --sync-key): LB1's connection
#     table filled with 1,000,000 live entries and their filter bits, as
#     traffic would have left it (tests/tools/chlb-ctfill -F), then LB2
#     started fresh. As in production, LB1 connects back to LB2 once LB2
#     listens (its retry backoff, up to 5 s) and receives LB2's own dump
#     meanwhile - mostly LB1's entries coming back -
#     dump_1m_s: LB2's start (exec) -> LB2's stats show LB1 `synced` with
#       dump_entries >= 1,000,000 (`stats`, as `chlbctl -j stats` asks it,
#       polled every 50 ms); dump_1m_receiver_up_s: when LB2 first answered;
#     dump_1m_entries: LB2's dump_entries then;
#     dump_1m_recv_log_s: the same dump in LB2's log (authenticated -> "dump
#       received"), without LB2's start;
#     dump_1m_sender_log_s: LB1's "dump of N entries queued in X ms";
#     dump_1m_cpu_receiver_s: LB2's CPU time (utime + stime, /proc/PID/stat)
#       from its start to synced, its own start included
#       (dump_1m_cpu_receiver_startup_s: that part, at its first answer);
#     dump_1m_cpu_sender_s: LB1's CPU time over the same interval;
#     dump_1m_reverse_records: what LB1 had received of LB2's dump by then;
#     dump_1m_host_cpus_busy: the share of the host's CPUs busy then, and
#       dump_1m_host_other_cpu_s: the CPU seconds of it not the chlbds'
#       (/proc/stat): other work on the host disturbed the run when large;
#     dump_1m_wire_bytes_per_entry: the format's bytes per entry (80-byte
#       records, an 8-byte header and a 16-byte tag per 256);
#       dump_1m_link_bytes_per_entry: what LB1's end of the sync link sent
#       (TCP/IP and Ethernet headers included) per entry received.
#   The goal: a 1M-entry dump applied in under 5 s.
# Both chlbds run --ct-size 2097152, so that the million fits in either table
# without LRU evictions (at the default 1,048,576 a full table evicts).
. "$(dirname "$0")/../lib.sh"
lib_require_root
lib_require_bpffs
OUT=${1:-$BUILD/bench/sync.json}
AUTH_BENCH=$BUILD/tests/bench/sync_auth
CTFILL_BIN=$BUILD/tests/tools/chlb-ctfill
LIB_BIN_VARS+=(AUTH_BENCH CTFILL_BIN)
lib_require_bins "$CHLBD" "$CHLBCTL" "$AUTH_BENCH" "$CTFILL_BIN"
N=1000000
CT_SIZE=2097152
VIP=10.0.0.10
HZ=$(getconf CLK_TCK)

echo "  sync_auth (one CPU): encode + seal + open + decode"
AUTH=$("$AUTH_BENCH") || die "sync_auth failed"
jq -e . >/dev/null <<<"$AUTH" || die "sync_auth: not JSON: $AUTH"
sed 's/^/    /' <<<"$AUTH"

# Two namespaces: in each, v0-v1 for the data plane (10.2.0.1/16, the
# backends on-link with permanent neighbours) and sy0, the sync link
# (10.8.0.1 and 10.8.0.2).
NS1=chlb-$LIB_ID-sync1
NS2=chlb-$LIB_ID-sync2
for ns in "$NS1" "$NS2"; do
	lib_ns_add "$ns"
	lib_veth "$ns" v0 v1 || die "veth"
	ip -n "$ns" addr add 10.2.0.1/16 dev v0
	for i in 1 2 3; do
		ip -n "$ns" neigh replace "10.2.0.$((10 + i))" lladdr "02:00:00:00:02:0$i" dev v0 \
			nud permanent
	done
done
ip -n "$NS1" link add sy0 type veth peer name sy0 netns "$NS2" || die "veth sync"
ip -n "$NS1" addr add 10.8.0.1/24 dev sy0
ip -n "$NS2" addr add 10.8.0.2/24 dev sy0
ip -n "$NS1" link set sy0 up
ip -n "$NS2" link set sy0 up
KEY=$LIB_DIR/sync.key
(umask 077 && od -An -tx1 -N32 /dev/urandom | tr -d ' \n' >"$KEY" && echo >>"$KEY")
CONF=$LIB_DIR/lb.conf
{
	echo "service add $VIP:80/tcp algo ring"
	for i in 1 2 3; do echo "backend add $VIP:80/tcp 10.2.0.$((10 + i))"; done
} >"$CONF"

lib_pindir sync1
PIN1=$LIB_PINDIR
lib_pindir sync2
PIN2=$LIB_PINDIR
SOCK1=$LIB_DIR/lb1.sock
SOCK2=$LIB_DIR/lb2.sock
c1() { "$CHLBCTL" -s "$SOCK1" "$@"; }
c2() { "$CHLBCTL" -s "$SOCK2" "$@"; }
# lb_start I NS SOCK PIN ME PEER: chlbd I, its pid in $PID
lb_start() {
	lib_bg "lb$1" "$CHLBD" -i v0 --netns "$2" -m xdp-generic -s "$3" --pin-dir "$4" \
		--state "$LIB_DIR/lb$1.state" -c "$CONF" -f --ct-size $CT_SIZE \
		--sync-listen "$5:7070" --sync-peer "$6:7070" --sync-key "$KEY"
	PID=$LIB_LASTPID
}
# cpu_s PID: the process's CPU time so far (user + system), in seconds
cpu_s() {
	sed 's/.*) //' "/proc/$1/stat" | awk -v hz="$HZ" '{ printf "%.2f\n", ($12 + $13) / hz }'
}
now_ns() { date +%s%N; }
# log_ms FILE PATTERN: the time of FILE's last line matching PATTERN, in ms of the day
log_ms() {
	grep -E "$2" "$1" | tail -1 |
		awk '{ split($1, t, ":"); printf "%d\n", (t[1] * 3600 + t[2] * 60 + t[3]) * 1000 }'
}

lb_start 1 "$NS1" "$SOCK1" "$PIN1" 10.8.0.1 10.8.0.2
PID1=$PID
lib_wait_for 10 c1 service list >/dev/null || die "LB1 did not start"
slots=$(c1 -j backend list "$VIP:80/tcp" | jq -r '[.backends[] | "\(.slot):\(.gen)"] | join(" ")')
[ "$(wc -w <<<"$slots")" = 3 ] || die "LB1's backends: '$slots'"
# shellcheck disable=SC2086
fill=$("$CTFILL_BIN" -t -F "$PIN1/conns" $N "$VIP" 80 $slots) || die "chlb-ctfill"
echo "  LB1: $N entries written in $(awk '{ print $2 }' <<<"$fill") s (chlb-ctfill)"
lib_wait_for 20 bash -c "'$CHLBCTL' -s '$SOCK1' -j stats | jq -e '.ct_entries >= $N' >/dev/null" ||
	die "LB1 counts $(c1 -j stats | jq .ct_entries) entries, not $N"
# the bits chlb-ctfill set make LB1's filter look grown since its last
# rebuild: LB1 rebuilds it once (a walk of the table, checked every 5 s),
# and is then a host in its steady state
lib_wait_for 15 grep -q "connection filter rebuilt" "$LIB_DIR/lb1.log" ||
	die "LB1 did not rebuild its connection filter after the fill"

# poll ADDR: LB2's `stats` (what `chlbctl -j stats` asks: the statement,
# one JSON reply) every 50 ms from one python process, until LB2 shows the
# peer at ADDR synced with at least N entries, or 120 s. One process: a
# chlbctl and a jq per poll would cost ~55 ms of CPU each on this 2-CPU VM,
# a CPU's worth at 50 ms, taken from the two chlbds measured. Prints
# "S ENTRIES STATE UP_S UP_CPU2 CPU2 CPU1 BUSY OTHER BACK": the seconds from
# T0, the entries, the peer's state; when LB2 first answered and its CPU
# time then; both chlbds' CPU time at the end; the share of the host's CPUs
# busy over it, and the CPU seconds of it that were not the chlbds'
# (/proc/stat: other work on the host, which this bench does not control);
# the records LB1 had received from LB2 by then (LB2's dump to LB1).
poll() {
	python3 - "$SOCK2" "$1" "$N" "$t0" "$PID2" "$PID1" "$HZ" "$cpu1_0" "$SOCK1" "$2" <<'PY'
import json, socket, sys, time
sock, peer, n, t0, pid2, pid1, hz = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5], sys.argv[6], int(sys.argv[7])
cpu1_0, sock1, peer2 = float(sys.argv[8]), sys.argv[9], sys.argv[10]
def cpu(pid):
    f = open("/proc/%s/stat" % pid).read().rsplit(")", 1)[1].split()
    return (int(f[11]) + int(f[12])) / hz
def host():
    f = [int(x) for x in open("/proc/stat").readline().split()[1:]]
    return sum(f), f[3] + f[4]
def stats(sock=sock):
    s = socket.socket(socket.AF_UNIX)
    s.settimeout(5)
    s.connect(sock)
    s.sendall(b"stats\n")
    s.shutdown(socket.SHUT_WR)
    r = b""
    while True:
        d = s.recv(1 << 16)
        if not d:
            break
        r += d
    s.close()
    return json.loads(r)
h0 = host()
up = up_cpu = None
state, entries = "none", 0
while time.time_ns() - t0 < 120e9:
    try:
        st = stats()
    except (OSError, ValueError):
        st = None
    if st is not None:
        if up is None:
            up, up_cpu = (time.time_ns() - t0) / 1e9, cpu(pid2)
        for p in st.get("sync", {}).get("peers", []):
            if p["peer"] == peer:
                state, entries = p["receiving"].replace(" ", "_"), p["dump_entries"]
        if state == "synced" and entries >= n:
            break
    time.sleep(0.05)
t1 = time.time_ns()
c2, c1, h1 = cpu(pid2), cpu(pid1), host()
busy = 1 - (h1[1] - h0[1]) / max(1, h1[0] - h0[0])
other = ((h1[0] - h0[0]) - (h1[1] - h0[1])) / hz - c2 - (c1 - cpu1_0)
back = sum(p["records_received"] for p in stats(sock1)["sync"]["peers"] if p["peer"] == peer2)
print("%.3f %d %s %.3f %.2f %.2f %.2f %.2f %.2f %d" % ((t1 - t0) / 1e9, entries, state, up or 0, up_cpu or 0, c2, c1, busy, max(0, other), back))
PY
}

tx0=$(ip -n "$NS1" -j -s link show sy0 | jq '.[0].stats64.tx.bytes')
cpu1_0=$(cpu_s "$PID1")
t0=$(now_ns)
lb_start 2 "$NS2" "$SOCK2" "$PIN2" 10.8.0.2 10.8.0.1
PID2=$PID
read -r dump_s entries state up_s up_cpu cpu2 cpu1_1 busy other back <<<"$(poll 10.8.0.1:7070 10.8.0.2:7070)"
tx1=$(ip -n "$NS1" -j -s link show sy0 | jq '.[0].stats64.tx.bytes')
[ "$state" = synced ] && [ "$entries" -ge $N ] ||
	die "LB2 did not get the dump in 120 s: LB1 ${state:-?}, ${entries:-?} entries"
r0=$(log_ms "$LIB_DIR/lb2.log" "sync: connected to 10.8.0.1:7070: authenticated")
r1=$(log_ms "$LIB_DIR/lb2.log" "sync: 10.8.0.1:7070: dump received")
recv_s=$(awk -v a="$r0" -v b="$r1" 'BEGIN { printf "%.3f\n", (b - a) / 1000 }')
sent_line=$(grep -o "sync: 10.8.0.2:7070: dump of .*" "$LIB_DIR/lb1.log" | tail -1)
sent_s=$(sed -n 's/.* queued in \([0-9.]*\) ms.*/\1/p' <<<"$sent_line" | awk '{ printf "%.3f\n", $1 / 1000 }')
cpu_recv=$cpu2
cpu_send=$(awk -v a="$cpu1_0" -v b="$cpu1_1" 'BEGIN { printf "%.2f\n", b - a }')
wire=$(awk 'BEGIN { printf "%.4f\n", (8 + 256 * 80 + 16) / 256 }')
link=$(awk -v a="$tx0" -v b="$tx1" -v n="$entries" 'BEGIN { printf "%.2f\n", (b - a) / n }')
echo "  dump of $entries entries: ${dump_s} s from LB2's start to synced (goal: < 5 s)"
echo "    LB2's log: ${recv_s} s authenticated -> dump received; LB1: $sent_line"
echo "    CPU: LB2 ${cpu_recv} s (${up_cpu} s of it by its first answer, ${up_s} s after its start), LB1 ${cpu_send} s; the host's CPUs $(awk -v b="$busy" 'BEGIN { printf "%d", b * 100 }')% busy, $other CPU s of it other work"
echo "    LB2's dump to LB1 meanwhile: $back records (LB1 has them: kept)"
echo "    bytes per entry: ${wire} (format), ${link} (sync link, headers included)"
c2 -j stats | jq -c '.sync | {applied, kept, deferred, dropped}' | sed 's/^/    LB2 sync: /'
c1 -j stats | jq -c '.sync | {records_sent, dumps_sent, kept, dropped, from_lb2: (.peers[0] | {receiving, dump_entries})}' |
	sed 's/^/    LB1 sync: /'
c2 shutdown --detach >/dev/null
c1 shutdown --detach >/dev/null

jq --argjson d "{
  \"dump_1m_s\": $dump_s,
  \"dump_1m_entries\": $entries,
  \"dump_1m_recv_log_s\": ${recv_s:-null},
  \"dump_1m_sender_log_s\": ${sent_s:-null},
  \"dump_1m_cpu_receiver_s\": $cpu_recv,
  \"dump_1m_cpu_receiver_startup_s\": $up_cpu,
  \"dump_1m_receiver_up_s\": $up_s,
  \"dump_1m_host_cpus_busy\": $busy,
  \"dump_1m_host_other_cpu_s\": $other,
  \"dump_1m_cpu_sender_s\": $cpu_send,
  \"dump_1m_reverse_records\": $back,
  \"dump_1m_wire_bytes_per_entry\": $wire,
  \"dump_1m_link_bytes_per_entry\": $link,
  \"dump_1m_goal_s\": 5,
  \"dump_1m_ct_size\": $CT_SIZE
}" '. + $d' <<<"$AUTH" >"$OUT" || die "writing $OUT"
echo "  -> $OUT"
