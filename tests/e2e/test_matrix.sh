#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# Case 1 (and 6): every algorithm x forwarding mode x attach mode carries real
# TCP (HTTP/1.1 GETs) from many source ports to every backend, spread as `chlbctl sim`
# predicts for those backend names, over IPv4 and IPv6 VIPs; `chlbctl which`
# names the backend that actually served sampled connections.
#
# One topology (3 backends) and one chlbd per attach mode; the service is
# recreated between algorithm/forwarding combinations.
. "$(dirname "$0")/../lib.sh"

FLOWS=${FLOWS:-300}
BACKENDS="1 2 3"

lib_require_e2e
topo_build 3

# combo MODE FWD ALGO: one matrix cell, IPv4 and IPv6.
combo() {
	local mode=$1 fwd=$2 algo=$3 fam out rc=0 sport be w n
	if [ "$CHLBD_MODE" != "$mode" ] || [ -z "$CHLBD_PID" ]; then
		chlbd_fresh "$mode" || return 1
	fi
	for fam in 4 6; do
		svc_setup "$fam" "$algo" "$fwd" "$BACKENDS" || {
			diag "service setup failed ($fam $algo $fwd)"
			return 1
		}
	done
	for fam in 4 6; do
		out=$LIB_DIR/$mode-$fwd-$algo-$fam.out
		# A dead path fails in seconds, not after FLOWS timeouts.
		client once -t "$(vip_addr "$fam")" -n 4 -k 4 -T 1500 -q >"$out"
		if [ "$(summary_field "$out" ok)" = 0 ]; then
			diag "IPv$fam: no answer at all through chlb; not trying $FLOWS flows"
			rc=1
			continue
		fi
		client once -t "$(vip_addr "$fam")" -n "$FLOWS" -k 16 -T 2000 -H >"$out"
		check "IPv$fam: all $FLOWS requests answered ($(summary_field "$out" fail) failed)" \
			[ "$(summary_field "$out" ok)" = "$FLOWS" ] || rc=1
		spread_ok "$out" "$algo" "$BACKENDS" "$fam" || rc=1
		diag "IPv$fam $mode $fwd $algo: $(backend_counts "$out" | sort | tr '\n' ' ')"
		# which: five sampled connections
		n=0
		while read -r _ _ sport be && [ $n -lt 5 ]; do
			n=$((n + 1))
			w=$(which_backend "$fam" "$sport")
			check "which for IPv$fam sport $sport says $w, served by $be" [ "$w" = "$be" ] ||
				rc=1
		done < <(grep '^conn ' "$out" | awk 'NR % 37 == 1')
	done
	return $rc
}

# chlbd_fresh MODE: (re)start chlbd attached in MODE with empty state.
chlbd_fresh() {
	if [ -n "$CHLBD_PID" ]; then
		ctl_quiet shutdown --detach
		chlbd_stop TERM
	fi
	[ -z "$CHLBD_PIN" ] || rm -rf "${CHLBD_PIN:?}"/*
	rm -f "$CHLBD_STATE"
	chlbd_start "$1"
}

TESTS=()
for mode in xdp xdp-generic tc; do
	for fwd in l2dsr ipip; do
		for algo in ring jump maglev; do
			f=${mode//-/_}
			eval "test_${f}_${fwd}_${algo}() { combo $mode $fwd $algo; }"
			TESTS+=("test_${f}_${fwd}_${algo}")
		done
	done
done

lib_run "${TESTS[@]}"
