#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# `chlbctl decap attach|detach|show DEV` on its own (no chlbd): the filter
# outlives chlbctl, attaching twice replaces rather than stacks, detach
# removes only chlb's filter, and errors are reported with a non-zero exit.
# (That it decapsulates real traffic is shown by every ipip e2e case.)
. "$(dirname "$0")/../lib.sh"

lib_require_root
lib_require_bins "$CHLBCTL"
NS=chlb-$LIB_ID-dc
lib_ns_add "$NS"
lib_veth "$NS" d0 d1 || die "veth"

dc() { ip netns exec "$NS" "$CHLBCTL" "$@"; }
nfilters() { ip netns exec "$NS" tc filter show dev d0 ingress | grep -c 'handle 0xc1b'; }

test_show_when_nothing_attached() {
	check "show says detached" [ "$(dc decap show d0)" = "decap detached on d0" ]
}

test_attach_persists_after_exit() {
	dc decap attach d0 >/dev/null || return 1
	check "filter present after chlbctl exited ($(nfilters))" [ "$(nfilters)" = 1 ] &&
		check "show says attached" [ "$(dc decap show d0)" = "decap attached on d0" ] &&
		check "JSON show" [ "$(dc -j decap show d0)" = '{"dev":"d0","decap":"attached"}' ]
}

test_attach_twice_replaces() {
	dc decap attach d0 >/dev/null && dc decap attach d0 >/dev/null || return 1
	check "one chlb filter, not two ($(nfilters))" [ "$(nfilters)" = 1 ]
}

test_detach_leaves_other_filters() {
	# Someone else's filter on the same hook must survive our detach.
	ip netns exec "$NS" tc filter add dev d0 ingress prio 7 u32 match u32 0 0 || return 1
	dc decap detach d0 >/dev/null || return 1
	check "our filter gone" [ "$(nfilters)" = 0 ] &&
		check "the other filter kept" \
			ip netns exec "$NS" sh -c 'tc filter show dev d0 ingress | grep -q u32'
}

test_errors_exit_nonzero() {
	local rc=0
	dc decap detach d0 2>/dev/null && {
		diag "detach with nothing attached succeeded"
		rc=1
	}
	dc decap attach nosuchdev 2>/dev/null && {
		diag "attach on a missing device succeeded"
		rc=1
	}
	check "JSON error" dc -j decap attach nosuchdev | grep -q '"error"' || rc=1
	return $rc
}

lib_run
