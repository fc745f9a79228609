#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# upgrade_check.sh OLD_BUILD [TERM|KILL]: the upgrade an operator makes
# (docs/operations.md, Restarts and upgrades), against real TCP: an older
# chlbd (OLD_BUILD/chlbd, OLD_BUILD/chlbctl, e.g. a `git worktree` of an
# older revision built with `make -j2`) serves two services with held
# connections and makes changes; it is stopped with SIGTERM (or SIGKILL) and
# this tree's chlbd ($BUILD) starts with the same options, pins and state;
# every held connection must still answer from its backend, the new chlbd's
# changes must keep them, and the counters must carry over. Then the
# downgrade (this chlbd -> the old one), which the docs do not promise:
# reported, not asserted beyond "held connections keep working".
#
# Not in `make test` (it needs an older tree built); run by hand:
#   git worktree add /tmp/old REV && make -C /tmp/old -j2   # REV: the release
#                                     # to upgrade from (its tag, vX.Y.Z)
#   sudo bash tests/tools/upgrade_check.sh /tmp/old/build TERM
. "$(dirname "$0")/../lib.sh"

OLD=${1:?usage: upgrade_check.sh OLD_BUILD [TERM|KILL]}
SIG=${2:-TERM}
MODE=${MODE:-xdp} # chlbd -m: xdp, xdp-generic or tc
case $OLD in /*) ;; *) OLD=$PWD/$OLD ;; esac
NEW_CHLBD=$CHLBD NEW_CHLBCTL=$CHLBCTL
OLD_CHLBD=$OLD/chlbd OLD_CHLBCTL=$OLD/chlbctl
lib_require_bins "$OLD_CHLBD" "$OLD_CHLBCTL"
N=150
# A short --history-ms, so that past it only connection entries keep a held
# connection on its backend (within it the replaced tables still would).
HIST=${HIST:-1000}

# start_chlbd: the suite's chlbd (tests/lib/daemon.sh), or with DAEMON=1
# daemonized as systemd's Type=notify-less runs would have it (no -f; it
# returns once serving; what it logged before detaching is in CHLBD_LOG).
start_chlbd() {
	[ -n "${DAEMON:-}" ] || {
		chlbd_start "$MODE" --history-ms "$HIST" ${START_EXTRA[@]+"${START_EXTRA[@]}"}
		return
	}
	[ -n "$CHLBD_PIN" ] || {
		lib_pindir lb
		CHLBD_PIN=$LIB_PINDIR
	}
	CHLBD_STARTS=$((CHLBD_STARTS + 1))
	CHLBD_LOG=$LIB_DIR/chlbd-$CHLBD_STARTS.log
	"$CHLBD" -i "$CHLBD_IF" --netns "$CHLBD_NETNS" -m "$MODE" -s "$CHLBD_SOCK" \
		--pin-dir "$CHLBD_PIN" --state "$CHLBD_STATE" --history-ms "$HIST" \
		${START_EXTRA[@]+"${START_EXTRA[@]}"} \
		--pid-file "$LIB_DIR/chlbd.pid" >"$CHLBD_LOG" 2>&1 || { cat "$CHLBD_LOG"; return 1; }
	CHLBD_PID=$(cat "$LIB_DIR/chlbd.pid")
	LIB_PIDS+=("$CHLBD_PID")
	ctl_quiet service list
}

# links: "PIN link-id prog-id" for every pinned link (the pinned XDP link
# the new program must replace its predecessor through, in place).
links() {
	local f
	for f in "$CHLBD_PIN"/link_*; do
		[ -e "$f" ] || continue
		bpftool -j link show pinned "$f" | jq -r --arg f "${f##*/}" '"\($f) \(.id) \(.prog_id)"'
	done
}

use_old() { CHLBD=$OLD_CHLBD CHLBCTL=$OLD_CHLBCTL; }
use_new() { CHLBD=$NEW_CHLBD CHLBCTL=$NEW_CHLBCTL; }

# counter NAME: a data-plane counter from `chlbctl -j stats` (0 if absent).
counter() { ctl -j stats 2>/dev/null | jq -r "[.. | objects | .\"$1\"? | numbers] | add // 0"; }
# nconns: the connection entries chlbctl conns counts (-1 without the command).
nconns() { ctl -j conns 2>/dev/null | jq '.entries // -1' 2>/dev/null || echo -1; }
# conns_view: live entries per service and backend address, as conns shows them.
conns_view() {
	ctl -j conns 2>/dev/null |
		jq -c '[.services[] | {service, b: [.backends[]? | {address, live}] | sort_by(.address)}] | sort_by(.service)' 2>/dev/null
}

# settled: wait past --history-ms, then a round: entries alone keep them.
settled() { sleep "$(awk -v h="$HIST" 'BEGIN { print h / 1000 + 0.5 }')"; rounds_intact; }

rounds_intact() {
	hold_round h4 && round_intact $N || { diag "v4: $(tail -1 "$HOLD_LAST")"; return 1; }
	hold_round h6 && round_intact $N || { diag "v6: $(tail -1 "$HOLD_LAST")"; return 1; }
}

lib_require_e2e
[ -z "${KEEP:-}" ] || mkdir -p "$KEEP" || die "KEEP=$KEEP"
topo_build 4
V4=$(vip_spec 4) V6=$(vip_spec 6)

test_old_serves() {
	use_old
	start_chlbd || return 1
	diag "old: $("$OLD_CHLBD" --version 2>&1 | head -1)"
	svc_setup 4 maglev l2dsr "1 2 3" && svc_setup 6 ring ipip "1 2 3" || return 1
	hold_start h4 4 $N && hold_start h6 6 $N || return 1
	# changes by the old daemon: weights, a drain, an add
	ctl backend set "$V4" "$(be_addr4 2)" weight 50 >/dev/null &&
		ctl backend set "$V6" "$(be_addr6 3)" weight 0 >/dev/null &&
		ctl backend add "$V4" "$(be_addr4 4)" >/dev/null || return 1
	rounds_intact && settled || return 1
	OLD_FWD=$(counter forwarded)
	OLD_CONNS=$(nconns)
	diag "old: forwarded $OLD_FWD, conns entries $OLD_CONNS"
	saved >"$LIB_DIR/old.saved"
	conns_view >"$LIB_DIR/old.conns" || true # an old chlbctl may have no conns
}

test_upgrade() {
	local before
	# installed but not restarted yet: the new chlbctl flags the running chlbd
	before=$("$NEW_CHLBCTL" -s "$CHLBD_SOCK" version 2>&1)
	diag "new chlbctl version, old chlbd: $(echo "$before" | tr '\n' '|')"
	check "version flags the running old chlbd (MISMATCH, or too old for 'version')" \
		grep -qE 'MISMATCH|older than this chlbctl' <<<"$before" || return 1
	local l_old l_new
	# CONFIG=1: the installed unit's way (-c /etc/chlb/chlb.conf): the old
	# chlbd's state saved as the config the new one starts from
	if [ -n "${CONFIG:-}" ]; then
		ctl save >"$LIB_DIR/chlb.conf" || return 1
		START_EXTRA=(-c "$LIB_DIR/chlb.conf")
	fi
	l_old=$(links)
	chlbd_stop "$SIG"
	use_new
	start_chlbd || return 1
	l_new=$(links)
	diag "pinned links (pin link prog): old [$l_old] new [$l_new]"
	if [ "$MODE" != tc ]; then
		check "the same pinned link" [ -n "$l_old" ] &&
			[ "$(cut -d' ' -f1,2 <<<"$l_old")" = "$(cut -d' ' -f1,2 <<<"$l_new")" ] || return 1
		check "... now runs another program" [ "$l_old" != "$l_new" ] || return 1
	fi
	grep -iE 'adopt|pinned|layout|recreat|rebuil' "$CHLBD_LOG" | head -20 | while read -r l; do diag "new log: $l"; done
	if [ -n "${DAEMON:-}" ] && ! grep -qi adopt "$CHLBD_LOG"; then
		diag "daemonized: the adoption log went to syslog (none listening here)"
	else
		check "the new chlbd adopted the pinned maps" grep -qi 'adopted pinned maps' "$CHLBD_LOG" || return 1
	fi
	check "held connections intact right after the upgrade" rounds_intact || return 1
	local ver fwd n
	ver=$(ctl version 2>&1)
	diag "chlbctl version: $(echo "$ver" | tr '\n' '|')"
	check "version shows no MISMATCH for the installed build" sh -c "! echo \"\$1\" | grep -q MISMATCH" _ "$ver" || return 1
	saved >"$LIB_DIR/new.saved"
	check "the services carried over" diff "$LIB_DIR/old.saved" "$LIB_DIR/new.saved" || return 1
	fwd=$(counter forwarded)
	n=$(nconns)
	diag "new: forwarded $fwd (old $OLD_FWD), conns entries $n (old $OLD_CONNS)"
	[ -z "${KEEP:-}" ] || ctl stats >"$KEEP/stats-after-upgrade.txt" 2>&1
	# counters carry over unless this release changed their layout: then they
	# restart at zero, and the log must say so (docs/operations.md)
	if [ "$fwd" -lt "$OLD_FWD" ]; then
		check "counters restarted: the log says so" grep -q 'counters .*restart' "$CHLBD_LOG" || FAILED_LATE=1
	fi
	check "conns lists the old entries" [ "$n" -ge $((2 * N)) ] || return 1
	conns_view >"$LIB_DIR/new.conns"
	if [ -s "$LIB_DIR/old.conns" ]; then
		diag "conns per backend: $(cat "$LIB_DIR/new.conns")"
		check "conns: the same live entries per backend as before" \
			diff "$LIB_DIR/old.conns" "$LIB_DIR/new.conns" || return 1
	fi
	ctl backend set "$V4" "$(be_addr4 3)" weight 30 >/dev/null &&
		ctl backend set "$V6" "$(be_addr6 3)" weight 100 >/dev/null &&
		ctl backend add "$V6" "$(be_addr6 4)" >/dev/null &&
		ctl service set "$V4" hash src >/dev/null || return 1
	check "held connections intact after the new chlbd's changes" rounds_intact || return 1
	check "... and past --history-ms" settled || return 1
	[ -z "${FAILED_LATE:-}" ]
}

test_downgrade() {
	# NEW_EXTRA="service set VIP ...": a change the older grammar may not know
	# (what does the older chlbd make of the state file then?)
	if [ -n "${NEW_EXTRA:-}" ]; then
		# shellcheck disable=SC2086
		ctl $NEW_EXTRA >/dev/null || return 1
		# NEW_EXTRA2: a second one, so that FILE.prev has the newer grammar too
		# shellcheck disable=SC2086
		[ -z "${NEW_EXTRA2:-}" ] || ctl $NEW_EXTRA2 >/dev/null || return 1
		check "held connections intact after NEW_EXTRA" rounds_intact || return 1
	fi
	chlbd_stop "$SIG"
	use_old
	# RM_STATS=1: the workaround docs/operations.md gives for a downgrade
	# across a counter layout change (the older chlbd makes fresh counters)
	[ -z "${RM_STATS:-}" ] || rm -f "$CHLBD_PIN"/global_stats "$CHLBD_PIN"/svc_stats "$CHLBD_PIN"/be_stats
	start_chlbd || {
		diag "old chlbd refused to start over the new pins: $(tail -3 "$CHLBD_LOG" | tr '\n' '|')"
		CHLBD_PID=
		rounds_intact && diag "held connections still answer (the pinned program forwards)"
		return 1
	}
	grep -iE 'adopt|pinned|layout|recreat|rebuil|error|warn' "$CHLBD_LOG" | head -20 | while read -r l; do diag "old log: $l"; done
	check "held connections intact after the downgrade" rounds_intact || return 1
	[ -z "${KEEP:-}" ] || ctl stats >"$KEEP/stats-after-downgrade.txt" 2>&1
	check "the old chlbd answers stats (and is still running)" ctl_quiet stats || return 1
	ctl backend set "$V4" "$(be_addr4 1)" weight 70 >/dev/null || return 1
	check "held connections intact after the old chlbd's change" rounds_intact || return 1
	check "... and past --history-ms" settled || return 1
}

# KEEP=DIR: keep the chlbd logs there (the scratch directory goes at exit).
keep_logs() { [ -z "${KEEP:-}" ] || { mkdir -p "$KEEP" && cp "$LIB_DIR"/chlbd-*.log "$KEEP"/; }; }
test_keep_logs() { keep_logs; }

lib_run
