#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# Pins left by a chlbd of another release (docs/operations.md, Restarts and
# upgrades), made here by replacing one pin of a real chlbd's pin directory
# with a map of another shape (bpftool map create), as a release that
# changed that map would have left it:
#   - counters of another shape: chlbd starts, makes fresh ones and warns
#     that they restart at zero (an upgrade that added a drop reason once
#     reset every counter without a word);
#   - a map that carries decisions (views) of another shape: chlbd refuses
#     to start, naming the pin, and leaves every pin and the attached
#     program as they were (reusing it would load the program against a
#     layout it was not built for);
#   - a TC filter of a chlbd from before the TC record is taken as ours.
# The full upgrade against an older build, with held TCP connections, is
# tests/tools/upgrade_check.sh (by hand: it needs an older tree built).
. "$(dirname "$0")/../lib.sh"

daemon_fixture
command -v bpftool >/dev/null || die "needs bpftool (to pin maps of another shape)"

# replace_pin NAME TYPE KEY VALUE ENTRIES: NAME in the pin dir becomes a new
# map of that shape.
replace_pin() {
	rm -f "$CHLBD_PIN/$1" &&
		bpftool map create "$CHLBD_PIN/$1" type "$2" key "$3" value "$4" entries "$5" name "$1"
}

prog_id() { ip -n "$D_NS" -j link show v0 | jq -r '.[0].xdp.prog.id // empty'; }

test_counters_of_another_shape_restart_with_a_warning() {
	chlbd_start xdp-generic || return 1
	ctl service add 10.9.0.1:80/tcp >/dev/null && ctl backend add 10.9.0.1:80/tcp 10.1.0.2 >/dev/null ||
		return 1
	chlbd_stop TERM
	replace_pin global_stats percpu_array 4 8 1 || return 1
	chlbd_start xdp-generic || return 1
	check "the log says the counters restart at zero" \
		grep -q 'counters restart at zero: the pinned ones had another layout' "$CHLBD_LOG" ||
		return 1
	check "chlbd still adopted the rest (its service)" ctl service list 10.9.0.1:80/tcp >/dev/null ||
		return 1
	check "stats reads the fresh counters" ctl stats >/dev/null || return 1
	chlbd_stop TERM
	chlbd_start xdp-generic || return 1
	check "no counters warning with counters of this shape" \
		sh -c "! grep -q 'counters restart' '$CHLBD_LOG'" || return 1
	chlbd_stop TERM
}

# A TC filter attached by a chlbd from before the TC record (development
# builds before 0.1.0 had no tc_IFINDEX pin): ours by the maps it uses. The upgrade of
# such a chlbd in -m tc refused to start, taking its own filter for another
# chlbd's (the ownership test looked for the vips map, which no program
# has used since the VIP index).
test_tc_filter_without_record_is_ours() {
	local before
	chlbd_stop TERM
	chlbd_start tc || return 1
	before=$(ip netns exec "$D_NS" tc -j filter show dev v0 ingress | jq -r '[.[] | .options.prog.id? // empty][0]')
	chlbd_stop TERM
	rm -f "$CHLBD_PIN"/tc_* || return 1
	check "chlbd restarts over its record-less TC filter" chlbd_start tc || return 1
	check "and replaces that filter's program" [ "$before" != "$(ip netns exec "$D_NS" tc -j filter show dev v0 ingress | jq -r '[.[] | .options.prog.id? // empty][0]')" ] ||
		return 1
	chlbd_stop TERM
}

test_decision_map_of_another_shape_refused() {
	local before after rc=0 pins_before pins_after
	chlbd_stop TERM # a failed test before may have left it running
	chlbd_start xdp-generic || return 1
	before=$(prog_id)
	chlbd_stop TERM
	replace_pin views array 4 8 2560 || return 1
	pins_before=$(ls "$CHLBD_PIN" | sort | tr '\n' ' ')
	"$CHLBD" -i v0 --netns "$D_NS" -m xdp-generic -s "$CHLBD_SOCK" --pin-dir "$CHLBD_PIN" \
		--state "$CHLBD_STATE" -f >"$LIB_DIR/refused.log" 2>&1 || rc=$?
	pins_after=$(ls "$CHLBD_PIN" | sort | tr '\n' ' ')
	after=$(prog_id)
	diag "$(tail -1 "$LIB_DIR/refused.log")"
	check "chlbd refuses to start (exit != 0)" [ "$rc" -ne 0 ] || return 1
	check "the error names the pin and its layout" \
		grep -q "pinned map '$CHLBD_PIN/views' has another layout (key 4, value 8, 2560 entries" \
		"$LIB_DIR/refused.log" || return 1
	check "every pin is left as it was" [ "$pins_before" = "$pins_after" ] || return 1
	check "the attached program is left as it was ($before)" [ -n "$before" ] &&
		[ "$before" = "$after" ] || return 1
}

lib_run
