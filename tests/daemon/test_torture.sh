#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# Atomic-swap torture: chlb-probe feeds packets through the attached program
# in a tight loop (bpf_prog_test_run) while chlbd changes the membership of
# three services (ring, jump, maglev) at least 1,000 times. Every packet must
# be forwarded (never dropped, never "no backend") to a backend of its own
# service that was LIVE just before or just after it was sent: never to one
# removed earlier.
. "$(dirname "$0")/../lib.sh"
daemon_fixture

CHANGES=${TORTURE_CHANGES:-1000}
SVCS=(10.0.0.10:80/tcp 10.0.0.10:81/tcp 10.0.0.10:82/tcp)

test_torture() {
	local stop=$LIB_DIR/stop i s b a n=0 swaps nb drops
	# short grace and history so 1,000 swaps fit in seconds; packets take microseconds
	chlbd_start xdp-generic --grace-ms 5 --history-ms 500 || return 1
	ctl service add "${SVCS[0]}" algo ring || return 1
	ctl service add "${SVCS[1]}" algo jump || return 1
	ctl service add "${SVCS[2]}" algo maglev table 65537 || return 1
	declare -A member
	# each service its own pool of 19 (last octets 2-20, 21-39, 40-58): a packet
	# must land in its own service's pool
	for s in 0 1 2; do
		for b in $(seq 2 20); do
			ctl backend add "${SVCS[$s]}" "10.1.0.$((b + 19 * s))" || return 1
			member[$s,$b]=1
		done
	done
	lib_bg probe nsenter --net="/var/run/netns/$D_NS" "$PROBE_BIN" torture "$CHLBD_PIN" "$D_IFINDEX" \
		"$stop" 10.0.0.10:80=2-20 10.0.0.10:81=21-39 10.0.0.10:82=40-58
	local probe_pid=$LIB_LASTPID
	sleep 0.2
	RANDOM=4242
	for i in $(seq "$CHANGES"); do
		s=$((RANDOM % 3))
		b=$((2 + RANDOM % 19))
		a=10.1.0.$((b + 19 * s))
		nb=0
		for x in $(seq 2 20); do nb=$((nb + ${member[$s,$x]:-0})); done
		if [ "${member[$s,$b]:-0}" = 1 ] && [ "$nb" -gt 5 ]; then
			ctl backend del "${SVCS[$s]}" "$a" || return 1
			member[$s,$b]=0
		elif [ "${member[$s,$b]:-0}" = 0 ]; then
			ctl backend add "${SVCS[$s]}" "$a" weight $((50 + RANDOM % 150)) || return 1
			member[$s,$b]=1
		else
			ctl backend set "${SVCS[$s]}" "$a" weight $((50 + RANDOM % 150)) || return 1
		fi
		n=$((n + 1))
	done
	touch "$stop"
	wait "$probe_pid"
	local rc=$?
	sed 's/^/# probe: /' "$LIB_DIR/probe.log"
	swaps=$(ctl -j service list | jq '[.services[].swaps] | add')
	diag "$n membership changes, $swaps swaps"
	diag "global counters: $(ctl -j stats | jq -c '.global | with_entries(select(.value > 0))')"
	check "probe saw no violation" [ "$rc" = 0 ] || return 1
	check "at least $CHANGES swaps" [ "$swaps" -ge "$CHANGES" ] || return 1
	check "packets flowed during the changes" \
		[ "$(awk '/^packets/ { print $2 }' "$LIB_DIR/probe.log")" -gt 1000 ] || return 1
	drops=$(ctl -j stats | jq '.global.drop_no_backend')
	check "no 'no backend' drops ($drops)" [ "$drops" = 0 ]
}

lib_run
