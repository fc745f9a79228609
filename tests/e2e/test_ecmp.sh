#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# Several LB hosts behind an ECMP router that learns the VIP from
# each over BGP through BIRD (tests/lib/ecmp.sh: a router, 3 LBs each with
# its own chlbd and BIRD, 4 backends, real TCP, native XDP, l2dsr).
#   a. route export: chlbd --route-table keeps a route per VIP it can serve
#      (a service with a backend of weight > 0), removes the route of a VIP
#      whose service goes or has no backend left, removes only routes of
#      its own protocol (adopting a previous chlbd's at start), removes all
#      on SIGTERM and none on SIGKILL; a bad --route-table is refused;
#   b. BGP: the router has an ECMP route with a nexthop per LB (IPv4 and
#      IPv6), an LB whose chlbd stops is withdrawn (its session stays up),
#      a killed one is not; `chlbctl route withdraw` / `announce` and
#      `birdc disable` / `enable` take an LB out and back with chlbd running;
#      a VIP whose backends are all down by health check (panic 0) is
#      withdrawn and comes back when one is up;
#   c. connections: LBs configured in one batch from the same file, 300
#      held connections; an LB dies silently, one is withdrawn for
#      maintenance, a new one joins: >= 99.9% survive each, for ring,
#      jump and maglev.
#   Readiness: a chlbd started without configuration adds no
#   route while services and backends are typed one at a time (`route
#   list` says why, chlb_ready is 0) until `route announce`; with -c FILE,
#   and after the first `apply`, the route comes once --ready-settle-ms has
#   passed, not before; a restart on its pins keeps its routes meanwhile.
#   The other cases run with --ready-settle-ms 0 (ECMP_CHLBD_ARGS).
# The cases after a rolling change (configured step by step, a rollout, a
# fresh LB after a change) need entry sync between the LBs; they use the
# same helpers (ecmp_each_lb for the rolling change, ecmp_lb_fresh,
# ecmp_survive) and belong to the sync work.
. "$(dirname "$0")/../lib.sh"
. "$(dirname "$0")/../lib/ecmp.sh"

HELD=${HELD:-300}
NBE=4
ecmp_require
ecmp_build 3 $NBE
CONF=$LIB_DIR/lbs.conf
# no settle time but where a readiness case asks for one (its -c ... after these)
# shellcheck disable=SC2034 # ecmp_chlbd_start reads it
ECMP_CHLBD_ARGS=(--ready-settle-ms 0)

# routes I: LB I's exported routes as "ADDR" words, sorted, on one line.
routes() { ecmp_table_routes "$1" | awk '{ print $2 }' | sort | tr '\n' ' ' | sed 's/ $//'; }

# routes_are I "ADDR...": LB I's table holds exactly those chlb routes.
routes_are() {
	local got
	got=$(routes "$1")
	[ "$got" = "$2" ] && return 0
	diag "table $ECMP_TABLE of LB $1: '$got', expected '$2'"
	return 1
}

# ---- a. route export (LB 1's chlbd alone; no BGP needed) ----
test_route_table_refused() {
	local out rc=0
	out=$("$CHLBD" -i eth0 --route-table 254 -f 2>&1)
	check "--route-table 254 (main) refused with exit 2 ($?)" [ $? = 2 ] || rc=1
	check "the error names the value and why: $out" grep -q "'254'.*main" <<<"$out" || rc=1
	out=$("$CHLBD" -i eth0 --route-table main -f 2>&1)
	check "--route-table main refused: $out" grep -q "'main': bad value for --route-table" \
		<<<"$out" || rc=1
	return $rc
}

test_route_export() {
	local ns rc=0
	ns=$(ns_lb 1)
	ecmp_conf_write "$CONF" ring "1 2 3 4"
	ecmp_chlbd_start 1 -c "$CONF" || return 1
	routes_are 1 "10.0.0.10" || rc=1
	# someone else's route in the table, and a stale one of chlb's protocol
	ip -n "$ns" route add blackhole 10.0.0.98/32 table "$ECMP_TABLE" proto static
	ip -n "$ns" route add blackhole 10.0.0.99/32 table "$ECMP_TABLE" proto 250
	# a service without backends: no route; the next commit drops the stale one
	lbctl 1 service add 10.0.0.11:80/tcp >/dev/null || return 1
	routes_are 1 "10.0.0.10" || rc=1
	check "someone else's route (proto static) left alone" \
		ip -n "$ns" route show table "$ECMP_TABLE" 10.0.0.98 proto static | grep -q . || rc=1
	lbctl 1 backend add 10.0.0.11:80/tcp "$(be_addr4 1)" weight 100 >/dev/null || return 1
	routes_are 1 "10.0.0.10 10.0.0.11" || rc=1
	lbctl 1 backend set 10.0.0.11:80/tcp "$(be_addr4 1)" weight 0 >/dev/null || return 1
	check "a service whose only backend has weight 0: no route" routes_are 1 "10.0.0.10" || rc=1
	lbctl 1 backend set 10.0.0.11:80/tcp "$(be_addr4 1)" weight 100 >/dev/null || return 1
	lbctl 1 service add 10.0.0.11:443/tcp >/dev/null || return 1
	routes_are 1 "10.0.0.10 10.0.0.11" || rc=1
	lbctl 1 backend del 10.0.0.11:80/tcp "$(be_addr4 1)" >/dev/null || return 1
	check "a VIP whose services have no backend left: no route" routes_are 1 "10.0.0.10" || rc=1
	lbctl 1 backend add 10.0.0.11:443/tcp "$(be_addr4 2)" >/dev/null || return 1
	check "the same address, another port with a backend: routed" \
		routes_are 1 "10.0.0.10 10.0.0.11" || rc=1
	lbctl 1 service del 10.0.0.11:443/tcp >/dev/null && lbctl 1 service del 10.0.0.11:80/tcp >/dev/null ||
		return 1
	check "services deleted: no route" routes_are 1 "10.0.0.10" || rc=1
	lbctl 1 service add "$(vip_spec 6)" >/dev/null &&
		lbctl 1 backend add "$(vip_spec 6)" "$(be_addr6 1)" >/dev/null || return 1
	routes_are 1 "10.0.0.10 fd00::10" || rc=1
	# SIGKILL: the data plane keeps serving, so the routes stay
	ecmp_chlbd_stop 1 KILL
	check "SIGKILL: the routes stay" routes_are 1 "10.0.0.10 fd00::10" || rc=1
	# a restart adopts them (no duplicate, no gap) and drops what it does not serve
	ip -n "$ns" route add blackhole 10.0.0.99/32 table "$ECMP_TABLE" proto 250
	ecmp_chlbd_start 1 || return 1
	check "a restart keeps its routes and removes the stale one" \
		routes_are 1 "10.0.0.10 fd00::10" || rc=1
	grep -q "route export: 10.0.0.99 removed" "$LIB_DIR/chlbd-lb1-${ECMP_STARTS[1]}.log" || {
		diag "the restart's log does not say it removed 10.0.0.99"
		rc=1
	}
	ecmp_chlbd_stop 1 TERM
	check "SIGTERM: every chlb route removed" routes_are 1 "" || rc=1
	check "SIGTERM: someone else's route left alone" \
		ip -n "$ns" route show table "$ECMP_TABLE" 10.0.0.98 proto static | grep -q . || rc=1
	ip -n "$ns" route del 10.0.0.98/32 table "$ECMP_TABLE"
	ecmp_chlbd_wipe 1
	return $rc
}

# ---- readiness: nothing announced before the LB is ready ----
routes_now() { [ "$(routes "$1")" = "$2" ]; }
# jq_ok JQ: the JSON on stdin satisfies JQ; route_json_is I JQ: LB I's `route list -j` does.
jq_ok() { jq -e "$1" >/dev/null; }
route_json_is() { lbctl "$1" -j route list | jq_ok "$2"; }
now_ms() { echo $(($(date +%s%N) / 1000000)); }
# lb_metric I NAME: the value of metric NAME (no labels) LB I's chlbd serves on 127.0.0.1:9180.
lb_metric() {
	ip netns exec "$(ns_lb "$1")" curl -sS -m 5 http://127.0.0.1:9180/metrics |
		awk -v m="$2" '$1 == m { print $2 }'
}

test_ready_typed_by_hand() {
	local rc=0 j out svc
	svc=$(vip_spec 4)
	ecmp_chlbd_wipe 1 || return 1
	ecmp_chlbd_start 1 --metrics 127.0.0.1:9180 || return 1
	check "chlb_ready 0 without configuration" [ "$(lb_metric 1 chlb_ready)" = 0 ] || rc=1
	lbctl 1 service add "$svc" algo ring fwd l2dsr >/dev/null &&
		lbctl 1 backend add "$svc" "$(be_addr4 1)" >/dev/null &&
		lbctl 1 backend add "$svc" "$(be_addr4 2)" >/dev/null || return 1
	sleep 0.3 # loop iterations, a readiness look: none may add the route
	check "services and backends typed one at a time: no route" routes_are 1 "" || rc=1
	j=$(lbctl 1 -j route list) || return 1
	check "route list: not ready, withheld: configuration not loaded, the VIP servable: $j" \
		jq_ok '(.ready | not) and (.withheld // "" | startswith("configuration not loaded"))
			and .servable == ["10.0.0.10"] and (.routes | length) == 0' <<<"$j" || rc=1
	out=$(lbctl 1 route list) || return 1
	check "route list says why: $out" grep -q "withheld: configuration not loaded" <<<"$out" ||
		rc=1
	check "stats: ready false" jq_ok '.ready == false' < <(lbctl 1 -j stats) || rc=1
	lbctl 1 route announce >/dev/null || return 1
	check "route announce: the route is there" routes_are 1 "10.0.0.10" || rc=1
	check "route list: ready, nothing withheld" \
		route_json_is 1 '.ready and (has("withheld") | not)' || rc=1
	check "chlb_ready 1 after route announce" [ "$(lb_metric 1 chlb_ready)" = 1 ] || rc=1
	check "stats: ready true" jq_ok .ready < <(lbctl 1 -j stats) || rc=1
	ecmp_chlbd_wipe 1
	return $rc
}

test_ready_after_settle() {
	local rc=0 t0 t
	ecmp_conf_write "$CONF" ring "1 2 3 4"
	ecmp_chlbd_wipe 1 || return 1
	t0=$(now_ms)
	ecmp_chlbd_start 1 -c "$CONF" --ready-settle-ms 1500 || return 1
	check "-c FILE: no route right after start" routes_are 1 "" || rc=1
	check "route list: settling" \
		route_json_is 1 '(.ready | not) and (.withheld // "" | startswith("settling"))' || rc=1
	check "-c FILE: the route comes after the settle time" \
		lib_wait_for 5 routes_now 1 "10.0.0.10" || rc=1
	t=$(($(now_ms) - t0))
	check "not before 1500 ms after the start ($t ms)" [ "$t" -ge 1500 ] || rc=1
	# killed: the routes stay; restarted on its pins with its state file, it
	# keeps them while it settles (withdrawing would move its flows away and back)
	ecmp_chlbd_stop 1 KILL
	ecmp_chlbd_start 1 --ready-settle-ms 1500 || return 1
	check "restarted on its pins: the adopted route kept while not ready" \
		routes_are 1 "10.0.0.10" || rc=1
	check "route list: settling" \
		route_json_is 1 '(.ready | not) and (.withheld // "" | startswith("settling"))' || rc=1
	check "ready after the settle time" lib_wait_for 5 route_json_is 1 .ready || rc=1
	routes_are 1 "10.0.0.10" || rc=1
	ecmp_chlbd_wipe 1
	return $rc
}

test_ready_after_apply() {
	local rc=0 t0 t
	ecmp_conf_write "$CONF" ring "1 2 3 4"
	ecmp_chlbd_wipe 1 || return 1
	# 3 s: the checks right after apply must land inside the settle time,
	# and a loaded 2-CPU VM took over 1 s for two chlbctl calls
	ecmp_chlbd_start 1 --ready-settle-ms 3000 || return 1
	lbctl 1 apply -f "$CONF" --dry-run >/dev/null || return 1
	check "apply --dry-run loads nothing" \
		route_json_is 1 '.withheld // "" | startswith("configuration not loaded")' || rc=1
	t0=$(now_ms)
	lbctl 1 apply -f "$CONF" >/dev/null || return 1
	check "apply: no route at once" routes_are 1 "" || rc=1
	check "apply: settling" route_json_is 1 '.withheld // "" | startswith("settling")' || rc=1
	check "apply: the route comes after the settle time" \
		lib_wait_for 8 routes_now 1 "10.0.0.10" || rc=1
	t=$(($(now_ms) - t0))
	check "not before 3000 ms after apply ($t ms)" [ "$t" -ge 3000 ] || rc=1
	ecmp_chlbd_wipe 1
	return $rc
}

# ---- b. BGP ----
# lbs_fresh ALGO: LBs 1-3 new, configured from one file (ALGO, backends
# 1-4), announcing; LB 4 (if it exists) gone; the router has 3 nexthops.
lbs_fresh() {
	local i
	ecmp_conf_write "$CONF" "$1" "1 2 3 4"
	if [ -n "${ECMP_PIN[4]:-}" ]; then
		ecmp_bird_stop 4
		ecmp_chlbd_wipe 4
	fi
	# all gone first, so the wait below cannot see a route about to be withdrawn
	for i in 1 2 3; do ecmp_chlbd_wipe "$i" || return 1; done
	ecmp_wait_nexthops 0 || return 1
	for i in 1 2 3; do ecmp_lb_up "$i" -c "$CONF" || return 1; done
	ecmp_wait_nexthops 3
}

# established: how many of the router's BGP sessions are up.
established() { rtbirdc show protocols | grep -c 'Established'; }

test_router_ecmp_from_each_lb() {
	local rc=0 gw
	lbs_fresh ring || return 1
	gw=$(ip -n "$NS_ER" -j route show exact "$ECMP_VIP" | jq -r '.[0].nexthops[].gateway' | sort | tr '\n' ' ')
	check "a nexthop per LB: $gw" [ "$gw" = "10.0.4.11 10.0.4.12 10.0.4.13 " ] || rc=1
	# IPv6: the same VIP route over the same sessions (the examples' ipv6 channels)
	ecmp_each_lb lbctl service add "$(vip_spec 6)" >/dev/null &&
		ecmp_each_lb lbctl backend add "$(vip_spec 6)" "$(be_addr6 1)" >/dev/null || return 1
	ecmp_wait_nexthops 3 20 "$VIP6" || rc=1
	ecmp_each_lb lbctl service del "$(vip_spec 6)" >/dev/null || return 1
	check "the IPv6 service deleted on every LB: the router's route is gone" \
		ecmp_wait_nexthops 0 10 "$VIP6" || rc=1
	return $rc
}

test_chlbd_stop_withdraws() {
	local rc=0 up
	up=$(established)
	check "3 BGP sessions up on the router ($up)" [ "$up" = 3 ] || return 1
	ecmp_chlbd_stop 3 TERM
	check "chlbd stopped on LB 3: the router's route drops to 2 nexthops" \
		ecmp_wait_nexthops 2 || rc=1
	check "by a withdrawal: LB 3's session is still up ($(established) sessions)" \
		[ "$(established)" = 3 ] || rc=1
	ecmp_chlbd_start 3 || return 1
	check "chlbd started again on LB 3: 3 nexthops" ecmp_wait_nexthops 3 || rc=1
	ecmp_chlbd_stop 3 KILL
	sleep 2
	check "chlbd killed on LB 3: its route stays (the data plane serves)" \
		[ "$(ecmp_nexthops)" = 3 ] || rc=1
	ecmp_chlbd_start 3 || return 1
	# maintenance with chlbd running (docs/operations.md): BIRD's session down
	lbbirdc 3 disable uplink >/dev/null || return 1
	check "birdc disable uplink on LB 3: 2 nexthops" ecmp_wait_nexthops 2 || rc=1
	lbbirdc 3 enable uplink >/dev/null || return 1
	check "birdc enable uplink on LB 3: 3 nexthops" ecmp_wait_nexthops 3 || rc=1
	return $rc
}

# chlbctl route withdraw / announce: maintenance with chlbd running
test_route_withdraw_announce() {
	local rc=0 j out
	lbctl 3 route withdraw >/dev/null || return 1
	check "route withdraw on LB 3: 2 nexthops" ecmp_wait_nexthops 2 || rc=1
	check "by a withdrawal: LB 3's session is still up" [ "$(established)" = 3 ] || rc=1
	check "LB 3's table is empty" routes_are 3 "" || rc=1
	# a change while withdrawn adds nothing
	lbctl 3 service add 10.0.0.12:80/tcp >/dev/null &&
		lbctl 3 backend add 10.0.0.12:80/tcp "$(be_addr4 1)" >/dev/null || return 1
	check "a change while withdrawn: still no route" routes_are 3 "" || rc=1
	j=$(lbctl 3 -j route list) || return 1
	check "route list: withdrawn, no routes, 2 servable VIPs: $j" \
		jq -e '.withdrawn and .route_table == '"$ECMP_TABLE"' and (.routes | length) == 0
			and (.servable | sort) == ["10.0.0.10", "10.0.0.12"]' <<<"$j" >/dev/null || rc=1
	lbctl 3 route announce >/dev/null || return 1
	check "route announce: LB 3's routes back" routes_are 3 "10.0.0.10 10.0.0.12" || rc=1
	check "route announce: 3 nexthops" ecmp_wait_nexthops 3 || rc=1
	lbctl 3 service del 10.0.0.12:80/tcp >/dev/null || return 1
	routes_are 3 "10.0.0.10" || rc=1
	out=$(lbctl 3 route frob 2>&1)
	check "route frob: exit 2 ($?), the word named: $out" [ $? = 2 ] || rc=1
	check "route frob: the word named" grep -q "'frob'" <<<"$out" || rc=1
	return $rc
}

# health checks: a VIP whose every backend is down (panic 0: no
# backend serves then) is withdrawn, and announced again when one is up
test_route_follows_health() {
	local rc=0 svc=10.0.0.11:80/tcp
	lbctl 3 service add $svc check tcp port 81 interval 100 timeout 50 rise 1 fall 1 \
		panic 0 >/dev/null && lbctl 3 backend add $svc "$(be_addr4 1)" >/dev/null || return 1
	check "its only backend down (nothing listens on port 81): no route to 10.0.0.11" \
		lib_wait_for 5 routes_now 3 "10.0.0.10" || rc=1
	# announced while its health was unknown (serves as up), withdrawn when down
	check "the route was removed by the health change (LB 3's log)" \
		grep -q "route export: 10.0.0.11 removed" "$LIB_DIR/chlbd-lb3-${ECMP_STARTS[3]}.log" ||
		rc=1
	lbctl 3 backend set $svc "$(be_addr4 1)" port 80 >/dev/null || return 1
	check "its check passes on port 80: 10.0.0.11 routed" \
		lib_wait_for 5 routes_now 3 "10.0.0.10 10.0.0.11" || rc=1
	check "and announced: the router has it from LB 3" ecmp_wait_nexthops 1 10 10.0.0.11 || rc=1
	lbctl 3 service del $svc >/dev/null || return 1
	check "service deleted: the router's route goes" ecmp_wait_nexthops 0 10 10.0.0.11 || rc=1
	return $rc
}

# ---- c. connections across LB events, configured in one batch ----
# One held set per algorithm, three events in a row: LB 3 dies silently
# (3 -> 2 LBs), LB 2 is withdrawn for maintenance (2 -> 1), LB 4 joins
# (1 -> 2). Each event moves flows between LBs (the router's hash-threshold
# remaps flows of the LBs that stay too); an LB that has no entry for a
# moved connection decides it from the same table as the others.
events() {
	local algo=$1 h=held$1 n3 n4 rc=0
	lbs_fresh "$algo" || return 1
	ecmp_hold_open "$h" "$HELD" || return 1
	n3=$(ecmp_lb_flows 3)
	diag "$algo: LB 1 carries $(ecmp_lb_flows 1), LB 2 $(ecmp_lb_flows 2), LB 3 $n3 of $HELD"
	check "$algo: LB 3 carries some connections ($n3)" [ "${n3:-0}" -gt 0 ] || rc=1
	ecmp_survive "$h" 2 "$algo: LB 3 died silently" ecmp_lb_die 3 || rc=1
	ecmp_survive "$h" 1 "$algo: LB 2 withdrawn for maintenance (chlbd stopped)" \
		ecmp_lb_withdraw 2 || rc=1
	ecmp_survive "$h" 2 "$algo: LB 4 joined" ecmp_lb_join 4 -c "$CONF" || rc=1
	n4=$(ecmp_lb_packets 4)
	check "$algo: connections moved to the new LB 4 (it forwarded $n4 packets)" \
		[ "${n4:-0}" -gt 0 ] || rc=1
	hold_stop "$h"
	return $rc
}
test_lb_events_ring() { events ring; }
test_lb_events_jump() { events jump; }
test_lb_events_maglev() { events maglev; }

# The control: the measurement can fail. LB 3 is configured without b4, so
# it decides differently from LB 1 and 2; when LB 1 and 2 are withdrawn and
# all flows go to LB 3, every connection on b4 and those LB 3 decides
# elsewhere break.
test_lb_disagreeing_breaks() {
	local h=control s n conf3=$LIB_DIR/lb3.conf
	lbs_fresh ring || return 1
	ecmp_conf_write "$conf3" ring "1 2 3"
	ecmp_chlbd_wipe 3 && ecmp_wait_nexthops 2 || return 1
	ecmp_lb_up 3 -c "$conf3" && ecmp_wait_nexthops 3 || return 1
	ecmp_hold_open "$h" "$HELD" || return 1
	ecmp_chlbd_stop 1 TERM && ecmp_chlbd_stop 2 TERM
	ecmp_wait_nexthops 1 || return 1
	ecmp_survivors_to s "$h" || return 1
	n=$(summary_field "$LIB_DIR/$h.r0" ok)
	hold_stop "$h"
	diag "LB 3 without b4 carries every flow: $s of $n connections survived"
	check "fewer than 99.9% survived on the LB that decides differently ($s of $n)" \
		[ $((s * 1000)) -lt $((n * 999)) ]
}

lib_run
