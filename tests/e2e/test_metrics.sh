#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# chlbd --metrics: Prometheus text exposition over HTTP, checked with the
# real tools. `promtool check metrics` passes on a scrape; the endpoint
# answers 200/404/405/400/431 as it should; Prometheus 2.42 (Debian's
# `prometheus` package: its own binary, config, data directory and port in
# the LB namespace, no system service) scrapes chlbd, and its HTTP API shows
# chlb_service_packets_total and chlb_service_new_flows_total for the VIP
# move with real TCP connections through chlbd; bad --metrics values exit 2,
# a port in use exits 1; clients that trickle or stall do not delay
# `chlbctl stats`, are dropped after 5 s, and past 8 at once get 503.
. "$(dirname "$0")/../lib.sh"

MPORT=9180 # chlbd's metrics port, inside the LB namespace
PPORT=9090 # Prometheus's own port, inside the LB namespace
VIP=$(vip_spec 4)

lib_require_e2e
for b in prometheus promtool curl jq python3; do
	command -v "$b" >/dev/null || die "no $b (make deps installs it: Debian packages prometheus, curl, jq, python3)"
done
topo_build 3
chlbd_start xdp-generic --metrics "[::1]:$MPORT" || die "chlbd did not start"
svc_setup 4 maglev l2dsr "1 2 3" || die "service setup"
ctl service add "[$VIP6]:80/tcp" algo ring fwd ipip >/dev/null || die "IPv6 service"
ctl backend add "[$VIP6]:80/tcp" "$(be_addr6 1)" >/dev/null || die "IPv6 backend"
ctl backend add "[$VIP6]:80/tcp" "$(be_addr6 2)" weight 0 >/dev/null || die "IPv6 backend"

# in_lb CMD...: CMD in the LB namespace, where chlbd's metrics port is.
in_lb() { ip netns exec "$NS_LB" "$@"; }
# scrape [CURL ARGS]: the metrics text (URL below), curl options first.
MURL="http://[::1]:$MPORT/metrics"
scrape() { in_lb curl -sS -m 5 "$@" "$MURL"; }
# status URL [CURL ARGS]: the HTTP status code only.
status() {
	local url=$1
	shift
	in_lb curl -s -m 5 -o /dev/null -w '%{http_code}' "$@" "$url"
}
# value FILE NAME [LABELS]: the sample NAME{LABELS} (exact label text) or NAME in FILE.
value() {
	local k=$2
	[ -z "${3:-}" ] || k="$2{$3}"
	awk -v k="$k" '$1 == k { print $2 }' "$1"
}
# has_line FILE REGEX: a line of FILE matches.
has_line() { grep -q -- "$2" "$1"; }

test_promtool_accepts_a_scrape() {
	local f=$LIB_DIR/scrape.txt hdr=$LIB_DIR/scrape.hdr out rc=0 name svcs swaps6 fp swaps ver sum nreasons
	client once -t "$VIP4" -n 20 -q >/dev/null
	scrape -D "$hdr" -o "$f" || return 1
	check "Content-Type is text/plain; version=0.0.4: $(grep -i '^content-type' "$hdr")" \
		grep -qi '^content-type: text/plain; version=0.0.4' "$hdr" || rc=1
	out=$(promtool check metrics <"$f" 2>&1)
	check "promtool check metrics: exit 0, no findings: $out" [ $? = 0 ] && [ -z "$out" ] || rc=1
	# every family docs/operations.md's table lists, with HELP and TYPE (those
	# for checked backends or sync peers only when configured: none here), and
	# no family in the scrape that the table does not list
	local documented always
	documented=$(sed -n 's/^| `\(chlb_[a-z_]*\)` | .*/\1/p' "$LIB_ROOT/docs/operations.md")
	always=$(grep -E '^\| `chlb_[a-z_]*` \|' "$LIB_ROOT/docs/operations.md" |
		grep -vE 'checked backends only|--sync-peer`:' | sed 's/^| `\(chlb_[a-z_]*\)` | .*/\1/')
	check "operations.md documents 20 or more families ($(echo "$documented" | wc -l))" \
		[ "$(echo "$documented" | wc -l)" -ge 20 ] || rc=1
	for name in $always; do
		check "$name has HELP and TYPE" grep -q "^# TYPE $name " "$f" || rc=1
		grep -q "^# HELP $name " "$f" || rc=1
	done
	for name in $(sed -n 's/^# TYPE \([a-z_]*\) .*/\1/p' "$f"); do
		check "$name is documented in operations.md" grep -qx "$name" <<<"$documented" || rc=1
	done
	# as many as chlbctl stats names (include/chlb_maps.h)
	nreasons=$(ctl -j stats | jq '.global | length')
	check "a sample per reason ($nreasons), drop_no_route among them" \
		[ "$(grep -c '^chlb_reason_packets_total{' "$f")" = "$nreasons" ] || rc=1
	has_line "$f" '^chlb_reason_packets_total{reason="drop_no_route"} ' || rc=1
	check "the IPv4 VIP forwarded packets" \
		[ "$(value "$f" chlb_service_packets_total "vip=\"$VIP\"")" -gt 0 ] || rc=1
	check "no allow-list: no drop_source for the VIP" \
		[ "$(value "$f" chlb_service_drop_source_packets_total "vip=\"$VIP\"")" = 0 ] || rc=1
	svcs=$(ctl -j service list) || return 1
	swaps6=$(jq --arg v "[$VIP6]:80/tcp" '.services[] | select(.service == $v) | .swaps' <<<"$svcs")
	check "the IPv6 VIP is labelled [ADDR]:PORT/proto, its swaps as in service list ($swaps6)" \
		[ "$(value "$f" chlb_swaps_total "vip=\"[$VIP6]:80/tcp\"")" = "$swaps6" ] || rc=1
	fp=$(jq -r --arg v "$VIP" '.services[] | select(.service == $v) | .fingerprint' <<<"$svcs")
	check "table info: algo and fingerprint $fp (as in service list)" \
		[ "$(value "$f" chlb_table_info "vip=\"$VIP\",algo=\"maglev\",fingerprint=\"$fp\"")" = 1 ] || rc=1
	check "weight-0 backend is draining" \
		[ "$(value "$f" chlb_backend_state "vip=\"[$VIP6]:80/tcp\",backend=\"$(be_addr6 2)\",state=\"draining\"")" = 1 ] || rc=1
	check "weight-100 backend is live" \
		[ "$(value "$f" chlb_backend_state "vip=\"[$VIP6]:80/tcp\",backend=\"$(be_addr6 1)\",state=\"live\"")" = 1 ] || rc=1
	# unchecked backends too: what their table holds, their weight (backend list's effective_weight)
	check "unchecked backends' effective weights are their weights (100, 0)" \
		[ "$(value "$f" chlb_backend_effective_weight "vip=\"[$VIP6]:80/tcp\",backend=\"$(be_addr6 1)\"")" = 100 ] &&
		[ "$(value "$f" chlb_backend_effective_weight "vip=\"[$VIP6]:80/tcp\",backend=\"$(be_addr6 2)\"")" = 0 ] || rc=1
	swaps=$(jq '[.services[].swaps] | add' <<<"$svcs")
	check "the swap histogram counted every swap ($swaps): $(value "$f" chlb_swap_duration_seconds_count)" \
		[ "$(value "$f" chlb_swap_duration_seconds_count)" = "$swaps" ] || rc=1
	check "its +Inf bucket too" \
		[ "$(value "$f" chlb_swap_duration_seconds_bucket 'le="+Inf"')" = "$swaps" ] || rc=1
	check "build info" grep -qE '^chlb_build_info\{version="[^"]*"(,commit="[^"]*")?\} 1$' "$f" || rc=1
	# "chlbd 0.2.0 (git COMMIT), bpf build id ID": version="0.2.0",commit="COMMIT" (no commit from a tarball)
	ver=$("$CHLBD" --version 2>/dev/null | sed -nE '1{s/^chlbd ([^ ,]+) \(git ([^)]+)\),.*/version="\1",commit="\2"/p
		t;s/^chlbd ([^ ,]+),.*/version="\1"/p}')
	[ -z "$ver" ] || check "build info names chlbd --version's $ver" \
		[ "$(value "$f" chlb_build_info "$ver")" = 1 ] || rc=1
	sum=$(awk -v p="chlb_backend_packets_total{vip=\"$VIP\"," 'index($1, p) == 1 { n += $2 } END { print n + 0 }' "$f")
	check "the backends' packets add up to the service's ($sum)" \
		[ "$sum" = "$(value "$f" chlb_service_packets_total "vip=\"$VIP\"")" ] || rc=1
	return $rc
}

test_conntrack_entries_match_chlbctl_conns() {
	local f=$LIB_DIR/ct.txt rc=0 live j i be n
	# long-lived connections: their entries stay live while we look
	hold_start mhold 4 30 || return 1
	scrape -o "$f" || return 1
	j=$(ctl -j conns "$VIP") || return 1
	live=$(jq '.services[0].live' <<<"$j")
	check "service live entries: metrics $(value "$f" chlb_service_conntrack_entries "vip=\"$VIP\",state=\"live\"") = conns $live (>= 30)" \
		[ "$(value "$f" chlb_service_conntrack_entries "vip=\"$VIP\",state=\"live\"")" = "$live" ] && [ "$live" -ge 30 ] || rc=1
	for i in 1 2 3; do
		be=$(be_addr4 "$i")
		n=$(jq --arg b "$be" '.services[0].backends[] | select(.address == $b) | .live' <<<"$j")
		check "backend $be live entries: metrics = conns ($n)" \
			[ "$(value "$f" chlb_backend_conntrack_entries "vip=\"$VIP\",backend=\"$be\",state=\"live\"")" = "$n" ] || rc=1
	done
	check "table entries = chlbctl conns entries ($(jq '.entries' <<<"$j"))" \
		[ "$(value "$f" chlb_conntrack_entries)" = "$(jq '.entries' <<<"$j")" ] || rc=1
	check "conntrack size = chlbctl conns ct_size" \
		[ "$(value "$f" chlb_conntrack_size)" = "$(jq '.ct_size' <<<"$j")" ] || rc=1
	hold_stop mhold
	return $rc
}

# raw TEXT: send TEXT (printf escapes) and EOF; the reply's status line.
raw() {
	printf '%b' "$1" | in_lb timeout 5 socat -t 5 - "TCP6:[::1]:$MPORT" | head -1 | tr -d '\r'
}

test_http_answers() {
	local rc=0 big
	check "GET /metrics?x=1: 200" [ "$(status "$MURL?x=1")" = 200 ] || rc=1
	check "HEAD /metrics: 200" [ "$(status "$MURL" -I)" = 200 ] || rc=1
	check "GET /: 404" [ "$(status "http://[::1]:$MPORT/")" = 404 ] || rc=1
	check "GET /metricsx: 404" [ "$(status "http://[::1]:$MPORT/metricsx")" = 404 ] || rc=1
	check "POST /metrics: 405" [ "$(status "$MURL" -X POST -d x=1)" = 405 ] || rc=1
	in_lb curl -s -m 5 -X DELETE -D "$LIB_DIR/405.hdr" -o /dev/null "$MURL"
	check "405 names the methods" grep -qi '^allow: GET, HEAD' "$LIB_DIR/405.hdr" || rc=1
	check "garbage: 400" [ "$(raw 'hello there\r\n\r\n')" = "HTTP/1.0 400 Bad Request" ] || rc=1
	big=$(head -c 9000 /dev/zero | tr '\0' a)
	check "9000 bytes of headers: 431" \
		[ "$(status "$MURL" -H "X-Big: $big")" = 431 ] || rc=1
	check "a request line alone, then EOF: 200" \
		[ "$(raw 'GET /metrics HTTP/1.0\r\n')" = "HTTP/1.0 200 OK" ] || rc=1
	check "a request line without a version: 400" \
		[ "$(raw 'GET /metrics\r\n\r\n')" = "HTTP/1.0 400 Bad Request" ] || rc=1
	return $rc
}

# The Prometheus server: its own config, data dir and port in the LB netns.
prom_start() {
	local d=$LIB_DIR/prom
	mkdir -p "$d/data"
	cat >"$d/prometheus.yml" <<-EOF
		global:
		  scrape_interval: 1s
		  scrape_timeout: 1s
		scrape_configs:
		  - job_name: chlb
		    static_configs:
		      - targets: ['[::1]:$MPORT']
	EOF
	promtool check config "$d/prometheus.yml" >/dev/null || return 1
	lib_bg prometheus ip netns exec "$NS_LB" prometheus --config.file="$d/prometheus.yml" \
		--storage.tsdb.path="$d/data" --web.listen-address="127.0.0.1:$PPORT" \
		--log.level=warn
	PROM_PID=$LIB_LASTPID
	lib_wait_up prometheus in_lb curl -sf -o /dev/null "http://127.0.0.1:$PPORT/-/ready"
}

# promq EXPR: the value of an instant query's first result ("" if none).
promq() {
	in_lb curl -sf -m 5 "http://127.0.0.1:$PPORT/api/v1/query" --data-urlencode "query=$1" |
		jq -r '.data.result[0].value[1] // empty'
}

# prom_at_least EXPR MIN: the query's value is >= MIN.
prom_at_least() {
	local v
	v=$(promq "$1")
	[ -n "$v" ] && awk -v v="$v" -v m="$2" 'BEGIN { exit !(v >= m) }'
}

test_prometheus_scrapes_traffic() {
	local rc=0 p0 f0 n=200 out sel="{job=\"chlb\",vip=\"$VIP\"}"
	prom_start || return 1
	check "Prometheus scrapes chlbd: up == 1" lib_wait_for 15 prom_at_least 'up{job="chlb"}' 1 ||
		return 1
	lib_wait_for 10 prom_at_least "chlb_service_packets_total$sel" 0 || {
		diag "no chlb_service_packets_total for $VIP in Prometheus"
		return 1
	}
	p0=$(promq "chlb_service_packets_total$sel")
	f0=$(promq "chlb_service_new_flows_total$sel")
	out=$(client once -t "$VIP4" -n "$n" -q)
	check "$n connections through chlbd" [ "$(summary_field <(echo "$out") ok)" = $n ] || rc=1
	# a connection is at least SYN, request, FIN and ACKs from the client
	check "chlb_service_packets_total moved by >= $((3 * n))" \
		lib_wait_for 15 prom_at_least "chlb_service_packets_total$sel" "$((p0 + 3 * n))" || rc=1
	check "chlb_service_new_flows_total moved by >= $n" \
		lib_wait_for 15 prom_at_least "chlb_service_new_flows_total$sel" "$((f0 + n))" || rc=1
	diag "Prometheus: packets $p0 -> $(promq "chlb_service_packets_total$sel"), new flows $f0 -> $(promq "chlb_service_new_flows_total$sel")"
	check "Prometheus computes a rate from it" \
		prom_at_least "sum(rate(chlb_service_packets_total{job=\"chlb\"}[30s]))" 0.001 || rc=1
	check "and reads the histogram" \
		prom_at_least 'chlb_swap_duration_seconds_count{job="chlb"}' 6 || rc=1
	lib_stop "$PROM_PID"
	return $rc
}

test_bad_metrics_values() {
	local rc=0 v want msg out code
	# value | exit | text the message must contain
	for v in "127.0.0.1|2|no port" "127.0.0.1:|2|no port" "[::1]|2|no port" \
		":9180|2|no address" "1.2.3.400:80|2|not an IPv4 address" "::1:9180|2|in brackets" \
		"[::1:9180|2|no ']'" "[fe80::zz]:80|2|not an IPv6 address" "127.0.0.1:0|2|1 to 65535" \
		"127.0.0.1:65536|2|1 to 65535" "127.0.0.1:http|2|1 to 65535" \
		"localhost:80|2|not an IPv4 address"; do
		IFS='|' read -r v want msg <<<"$v"
		out=$("$CHLBD" -i eth0 --netns "$NS_LB" -s "$LIB_DIR/bad.sock" --pin-dir "$LIB_DIR/nopins" \
			-f --metrics "$v" 2>&1)
		code=$?
		check "--metrics '$v' exits $want (got $code: $out)" [ "$code" = "$want" ] || rc=1
		check "--metrics '$v' says '$msg'" grep -qF -- "$msg" <<<"$out" || rc=1
	done
	# in use: chlbd's own port; refused before any pin or bpffs work
	out=$("$CHLBD" -i eth0 --netns "$NS_LB" -s "$LIB_DIR/bad.sock" --pin-dir "$LIB_DIR/nopins" \
		--state "$LIB_DIR/bad.state" -f -m xdp-generic --metrics "[::1]:$MPORT" 2>&1)
	code=$?
	check "a port in use exits 1 (got $code: $out)" [ "$code" = 1 ] || rc=1
	check "and says so" grep -q "metrics: couldn't listen on \[::1\]:$MPORT: Address already in use" <<<"$out" || rc=1
	check "no pin directory made" [ ! -e "$LIB_DIR/nopins" ] || rc=1
	check "the running chlbd still serves metrics" [ "$(status "$MURL")" = 200 ] || rc=1
	return $rc
}

# slowpoke: clients that stall. Prints "stalled N", "trickle", then for each
# connection when chlbd closed it: "closed KIND SECONDS".
SLOWPOKE='
import os, socket, sys, time, threading
addr = ("::1", int(sys.argv[1]))
n = int(sys.argv[2])
t0 = time.time()
def conn():
    s = socket.socket(socket.AF_INET6)
    s.connect(addr)
    return s
def wait_close(s, kind):
    s.settimeout(20)
    try:
        while s.recv(4096):
            pass
    except OSError:
        pass
    os.write(1, b"closed %s %.1f\n" % (kind.encode(), time.time() - t0))  # one write: threads
ths = []
stalled = [conn() for _ in range(n - 1)]
for s in stalled:
    s.sendall(b"GET /met")  # half a request line, then nothing
    ths.append(threading.Thread(target=wait_close, args=(s, "stalled")))
print("stalled %d" % len(stalled), flush=True)
tr = conn()
def trickle():
    try:
        for b in b"GET /metrics HTTP/1.0\r\nX-A: " + b"a" * 100:
            tr.send(bytes([b]))
            time.sleep(0.2)
    except OSError:
        pass
threading.Thread(target=trickle, daemon=True).start()
ths.append(threading.Thread(target=wait_close, args=(tr, "trickle")))
print("trickle", flush=True)
for t in ths:
    t.start()
for t in ths:
    t.join()
'

all_closed() { [ "$(grep -c '^closed' "$1")" -ge "$2" ]; }

test_slow_clients_stall_nothing() {
	local rc=0 log=$LIB_DIR/slowpoke.log t0 ms code closed
	lib_bg slowpoke ip netns exec "$NS_LB" python3 -c "$SLOWPOKE" "$MPORT" 8
	lib_wait_for 5 grep -q '^trickle' "$log" || {
		diag "slow clients did not connect: $(cat "$log")"
		return 1
	}
	sleep 0.3
	t0=$(date +%s%N)
	ctl_quiet stats || rc=1
	ms=$((($(date +%s%N) - t0) / 1000000))
	check "chlbctl stats answers in ${ms} ms with 8 stalled metrics clients (< 1000)" [ "$ms" -lt 1000 ] || rc=1
	code=$(status "$MURL")
	check "a 9th client gets 503 (got $code)" [ "$code" = 503 ] || rc=1
	# all dropped after 5 s (the trickler too: the time counts from accept)
	lib_wait_for 10 all_closed "$log" 8
	closed=$(grep -c '^closed' "$log")
	check "chlbd closed all 8 slow clients ($closed)" [ "$closed" = 8 ] || { rc=1; sed "s/^/#   /" "$log"; }
	check "each after 4.5..7 s: $(grep '^closed' "$log" | awk '{ print $3 }' | tr '\n' ' ')" \
		awk '$1 == "closed" && ($3 < 4.5 || $3 > 7) { bad = 1 } END { exit bad }' "$log" || rc=1
	check "then scrapes work again" [ "$(status "$MURL")" = 200 ] || rc=1
	return $rc
}

test_ipv4_listen_address() {
	local rc=0
	chlbd_stop || return 1
	chlbd_start xdp-generic --metrics "127.0.0.1:$MPORT" || return 1
	check "127.0.0.1:$MPORT serves metrics after a restart" \
		[ "$(status "http://127.0.0.1:$MPORT/metrics")" = 200 ] || rc=1
	in_lb curl -s -m 5 -o "$LIB_DIR/v4.txt" "http://127.0.0.1:$MPORT/metrics"
	check "the restarted chlbd reports the adopted services" \
		has_line "$LIB_DIR/v4.txt" "^chlb_table_info{vip=\"$VIP\",algo=\"maglev\"" || rc=1
	return $rc
}

lib_run
