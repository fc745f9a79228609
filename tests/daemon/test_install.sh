#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# `make install` / `make uninstall` into a DESTDIR, the systemd unit, the
# example config and /etc/default/chlbd, the bash completion, and what a
# unit needs from chlbd: --version and `chlbctl version` (same build id as
# the running daemon; a differing one flagged), --log-level, "<N>" journal
# priorities when stderr is the journal (JOURNAL_STREAM), and sd_notify
# READY=1 once the socket answers, with the config applied.
# shellcheck disable=SC2016 # $CHLBD_OPTS, $MAINPID, jq programs: literal
. "$(dirname "$0")/../lib.sh"
daemon_fixture

DEST=$LIB_DIR/dest
PREFIX_DIR=/usr/local
UNIT=$DEST$PREFIX_DIR/lib/systemd/system/chlbd.service
CONF=$DEST/etc/chlb/chlb.conf
DEFAULTS=$DEST/etc/default/chlbd
COMPLETION=$DEST$PREFIX_DIR/share/bash-completion/completions/chlbctl
# path and mode of everything `make install` lays out
LAYOUT=(
	"$PREFIX_DIR/sbin/chlbd 755"
	"$PREFIX_DIR/sbin/chlbctl 755"
	"$PREFIX_DIR/share/man/man8/chlbd.8 644"
	"$PREFIX_DIR/share/man/man8/chlbctl.8 644"
	"$PREFIX_DIR/share/man/man5/chlb.5 644"
	"$PREFIX_DIR/lib/systemd/system/chlbd.service 644"
	"$PREFIX_DIR/share/bash-completion/completions/chlbctl 644"
	"/etc/chlb/chlb.conf 644"
	"/etc/default/chlbd 644"
	"$PREFIX_DIR/share/doc/chlb/README.md 644"
	"$PREFIX_DIR/share/doc/chlb/NEWS.md 644"
	"$PREFIX_DIR/share/doc/chlb/docs/operations.md 644"
	"$PREFIX_DIR/share/doc/chlb/docs/examples/bird-lb.conf 644"
)
# and every other docs/*.md and docs/examples file (what the man pages name),
# laid out as in the tree, so README's links work where it is installed
for f in "$LIB_ROOT"/docs/*.md "$LIB_ROOT"/docs/examples/*.conf; do
	f=${f#"$LIB_ROOT"/}
	case $f in docs/operations.md | docs/examples/bird-lb.conf) ;; *) LAYOUT+=("$PREFIX_DIR/share/doc/chlb/$f 644") ;; esac
done
VIP=10.0.0.80:80/tcp

# mk TARGET ARGS: the top Makefile, with the build directory the suite uses
# (relative, as `make` names it, so nothing is rebuilt), outside any make
# that runs the suite.
mk() {
	env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -s --no-print-directory -C "$LIB_ROOT" \
		BUILD="${BUILD#"$LIB_ROOT"/}" "$@"
}

# laid_out DIR: every LAYOUT file is in DIR with its mode
laid_out() {
	local e path mode got ok=0
	for e in "${LAYOUT[@]}"; do
		read -r path mode <<<"$e"
		got=$(stat -c %a "$1$path" 2>/dev/null)
		[ "$got" = "$mode" ] || {
			diag "$1$path: mode '${got:-missing}', expected $mode"
			ok=1
		}
	done
	return $ok
}

# clear_services: delete every service of the running chlbd (the state carries over)
clear_services() {
	local vip
	for vip in $(saved | awk '$1 == "service" && $2 == "add" { print $3 }'); do
		ctl service del "$vip" >/dev/null || return 1
	done
}

# files_left DIR: the regular files under DIR
files_left() { find "$1" -type f | sort; }

test_install_lays_out_files() {
	local out
	out=$(mk install DESTDIR="$DEST" 2>&1)
	check "make install DESTDIR=: $out" [ $? = 0 ] || return 1
	check "every file in place, with its mode" laid_out "$DEST" || return 1
	check "nothing else installed: $(files_left "$DEST")" \
		[ "$(files_left "$DEST" | wc -l)" = ${#LAYOUT[@]} ] || return 1
	check "installed chlbd is the build's" cmp -s "$DEST$PREFIX_DIR/sbin/chlbd" "$BUILD/chlbd" ||
		return 1
	check "installed chlbctl is the build's" \
		cmp -s "$DEST$PREFIX_DIR/sbin/chlbctl" "$BUILD/chlbctl" || return 1
	check "man pages are the docs'" cmp -s "$DEST$PREFIX_DIR/share/man/man8/chlbd.8" \
		"$LIB_ROOT/docs/chlbd.8" || return 1
	check "the installed chlbd runs: --version" \
		"$DEST$PREFIX_DIR/sbin/chlbd" --version >/dev/null || return 1
	# a package build: PREFIX=/usr puts the unit where Debian 12 packages do
	out=$(mk install DESTDIR="$LIB_DIR/pkg" PREFIX=/usr 2>&1)
	check "PREFIX=/usr: unit in /lib/systemd/system: $out" \
		[ -f "$LIB_DIR/pkg/lib/systemd/system/chlbd.service" ] || return 1
	check "PREFIX=/usr: ExecStart=/usr/sbin/chlbd" \
		grep -qx 'ExecStart=/usr/sbin/chlbd -f $CHLBD_OPTS' \
		"$LIB_DIR/pkg/lib/systemd/system/chlbd.service" || return 1
	check "PREFIX=/usr: completion in /usr/share/bash-completion/completions" \
		[ -f "$LIB_DIR/pkg/usr/share/bash-completion/completions/chlbctl" ]
}

# key LINE: the unit has exactly this line
key() { grep -qxF -- "$1" "$UNIT"; }

test_unit() {
	local cap verify=$LIB_DIR/verify/chlbd.service out
	for line in 'Type=notify' "ExecStart=$PREFIX_DIR/sbin/chlbd -f \$CHLBD_OPTS" \
		'EnvironmentFile=-/etc/default/chlbd' 'ExecReload=/bin/kill -HUP $MAINPID' \
		'Restart=on-failure' 'NoNewPrivileges=yes' 'ProtectSystem=strict' 'ProtectHome=yes' \
		'ReadWritePaths=/var/lib/chlb /run/chlb /sys/fs/bpf' 'RuntimeDirectory=chlb' \
		'StateDirectory=chlb' 'LimitMEMLOCK=infinity' 'WantedBy=multi-user.target'; do
		check "unit has '$line'" key "$line" || return 1
	done
	for cap in CAP_BPF CAP_NET_ADMIN CAP_SYS_ADMIN CAP_PERFMON CAP_SYS_RESOURCE CAP_CHOWN; do
		check "CapabilityBoundingSet has $cap" \
			grep -qE "^CapabilityBoundingSet=(.* )?$cap( |$)" "$UNIT" || return 1
	done
	check "no @PLACEHOLDER@ left" nogrep -q @ "$UNIT" || return 1
	if ! command -v systemd-analyze >/dev/null; then
		diag "systemd-analyze not installed: unit checked by its keys only"
		return 0
	fi
	# verify wants ExecStart's binary to exist: point it into DESTDIR
	mkdir -p "$(dirname "$verify")"
	sed "s|^ExecStart=$PREFIX_DIR/|ExecStart=$DEST$PREFIX_DIR/|" "$UNIT" >"$verify"
	out=$(systemd-analyze verify --man=no "$verify" 2>&1)
	check "systemd-analyze verify: $out" [ $? = 0 ] && [ -z "$out" ]
}

# The unit's sandbox, as far as it is about privilege: chlbd with only the
# unit's CapabilityBoundingSet, NoNewPrivileges and root's groups cleared (as
# systemd runs root) serves with the options /etc/default/chlbd documents.
# (--socket-group once failed there: chown of the socket needs CAP_CHOWN,
# "couldn't listen on '/run/chlb/chlb.sock': Operation not permitted".)
test_unit_capabilities_serve_documented_options() {
	local caps bset=-all cap rc
	caps=$(sed -n 's/^CapabilityBoundingSet=//p' "$UNIT")
	check "the unit has a CapabilityBoundingSet" [ -n "$caps" ] || return 1
	for cap in $caps; do
		cap=${cap#CAP_}
		bset+=",+${cap,,}"
	done
	# shellcheck disable=SC2034 # chlbd_start reads it
	local CHLBD_WRAP=(setpriv --no-new-privs --clear-groups --bounding-set="$bset")
	(umask 077 && od -An -tx1 -N32 /dev/urandom | tr -d ' \n' >"$LIB_DIR/sync.key")
	chlbd_start tc --socket-group nogroup --log-level debug --route-table 100 \
		--sync-listen 10.1.0.1:7400 --sync-peer 10.1.0.1:7400 --sync-key "$LIB_DIR/sync.key" \
		--metrics 127.0.0.1:9180
	rc=$?
	check "chlbd serves under the bounding set '$bset': $(grep -E 'error|warn' "$CHLBD_LOG" | head -3)" \
		[ "$rc" = 0 ] || return 1
	check "the socket is 0660 root:nogroup" [ "$(stat -c '%a %G' "$CHLBD_SOCK")" = "660 nogroup" ] ||
		return 1
	check "a change applies and is saved" ctl_quiet service add $VIP || return 1
	clear_services || return 1
	chlbd_stop
	check "no capability error logged: $(grep -iE 'not permitted|EPERM' "$CHLBD_LOG")" \
		nogrep -qiE 'not permitted|EPERM' "$CHLBD_LOG"
}

# apply_ok FILE: `chlbctl apply -f FILE --dry-run` accepts it
apply_ok() {
	local out
	out=$(ctl apply -f "$1" --dry-run 2>&1) && return 0
	diag "apply -f $1 --dry-run: $out"
	return 1
}

test_example_config_is_valid() {
	local opts n examples=$LIB_DIR/examples.conf
	check "example config: comment lines explain it" \
		[ "$(grep -c '^#' "$CONF")" -ge 20 ] || return 1
	# as installed it configures nothing, so a chlbd started with it serves nothing yet
	chlbd_start xdp-generic -c "$CONF" || return 1
	check "chlbd -c installed config: 0 services" [ -z "$(saved)" ] || return 1
	check "installed config passes validation" apply_ok "$CONF" || return 1
	# the commented example statements are valid too, and apply
	sed -E 's/^#(service|backend) /\1 /' "$CONF" >"$examples"
	check "the examples have statements" [ "$(grep -cE '^(service|backend) ' "$examples")" -ge 5 ] ||
		return 1
	check "uncommented examples pass validation" apply_ok "$examples" || return 1
	ctl apply -f "$examples" >/dev/null || return 1
	n=$(grep -c '^service add' "$examples")
	check "examples applied: $n services" [ "$(saved | grep -c '^service add')" = "$n" ] || return 1
	check "the example's health check is in the state" \
		grep -qE '^service add 203\.0\.113\.10:80/tcp .*check http path /healthz' <<<"$(saved)" || return 1
	clear_services || return 1
	chlbd_stop
	# /etc/default/chlbd: CHLBD_OPTS holds options chlbd knows
	opts=$(sh -c '. "$1" && echo "$CHLBD_OPTS"' _ "$DEFAULTS")
	check "CHLBD_OPTS set: '$opts'" grep -q -- '-i eth0 -c /etc/chlb/chlb.conf' <<<"$opts" || return 1
	# shellcheck disable=SC2086
	check "chlbd accepts CHLBD_OPTS" "$CHLBD" $opts --version >/dev/null
}

# complete WORD...: the bash completion's candidates for the last word
complete_words() {
	local COMP_WORDS=("$@") COMP_CWORD=$(($# - 1)) COMPREPLY=()
	_chlbctl
	printf '%s\n' "${COMPREPLY[@]}"
}

# has WORD LIST: LIST (lines) contains WORD
has() { grep -qxF -- "$1" <<<"$2"; }

# help_options "HEADING": the option words `chlbctl help` lists under
# "Options of HEADING:" (--dry-run, a flag of every change, aside)
help_options() {
	"$CHLBCTL" help | awk -v h="Options of $1:" '
		$0 == h { on = 1; next }
		on && /^[^ ]/ { exit }
		on && /^  [a-z-]/ && $1 != "--dry-run" { print $1 }'
}

test_bash_completion() {
	local out
	(
		# shellcheck disable=SC1090
		. "$COMPLETION" || exit 1
		out=$(complete_words chlbctl '')
		for w in service backend stats conns apply shutdown version; do
			check "commands: $w" has "$w" "$out" || exit 1
		done
		check "ser -> service" [ "$(complete_words chlbctl ser)" = service ] || exit 1
		check "--json" has --json "$(complete_words chlbctl --j)" || exit 1
		out=$(complete_words chlbctl backend '')
		check "backend commands: $out" [ "$(tr '\n' ' ' <<<"$out")" = "add set del list " ] || exit 1
		check "service add VIP options" has algo "$(complete_words chlbctl service add $VIP '')" ||
			exit 1
		check "algo values" [ "$(complete_words chlbctl service add $VIP algo m)" = maglev ] || exit 1
		check "conns --json" has --json "$(complete_words chlbctl conns --)" || exit 1
		# every option word `chlbctl help` lists (written from the grammar table)
		out=$(complete_words chlbctl service add $VIP '')
		for w in $(help_options "service add, service set"); do
			check "service add VIP: '$w' (grammar table)" has "$w" "$out" || exit 1
		done
		out=$(complete_words chlbctl backend set $VIP 10.1.0.2 '')
		for w in $(help_options "backend add, backend set"); do
			check "backend set VIP ADDR: '$w' (grammar table)" has "$w" "$out" || exit 1
		done
		check "a value is no keyword: bucket N" \
			[ -z "$(complete_words chlbctl backend add $VIP 10.1.0.2 bucket '')" ] || exit 1
		# --timeout SECS (a global option; its value is not the command), prefixes
		check "--timeout" has --timeout "$(complete_words chlbctl --t)" || exit 1
		check "--timeout 5 ser -> service" \
			[ "$(complete_words chlbctl --timeout 5 ser)" = service ] || exit 1
		check "a command's prefix: serv a VIP alg -> algo (al: algo and allow)" \
			[ "$(complete_words chlbctl serv a $VIP alg)" = algo ] || exit 1
		check "help --man SECTION" has options "$(complete_words chlbctl help --man '')" || exit 1
		# -f: file names
		touch "$LIB_DIR/complete-me.conf"
		check "apply -f: file names" [ "$(complete_words chlbctl apply -f "$LIB_DIR/complete-m")" = \
			"$LIB_DIR/complete-me.conf" ] || exit 1
		check "decap attach: interfaces" has lo "$(complete_words chlbctl decap attach '')" ||
			exit 1
		complete -p chlbctl >/dev/null
	) || return 1
	# VIPs from a running chlbd (-s SOCKET honoured)
	chlbd_start xdp-generic || return 1
	ctl service add $VIP >/dev/null || return 1
	(
		# shellcheck disable=SC1090
		. "$COMPLETION"
		out=$(complete_words "$CHLBCTL" -s "$CHLBD_SOCK" backend add '')
		check "VIPs of the running chlbd: '$out'" [ "$out" = $VIP ]
	) || return 1
	clear_services
}

# field NAME TEXT: the word after "NAME" on TEXT's first line that has it
field() { grep -oE "$1 [^ ]+" <<<"$2" | head -1 | awk '{ print $NF }'; }

test_version_matches_daemon() {
	local v vers id cid did rel commit long
	rel=$(cat "$LIB_ROOT/VERSION")
	commit=$(git -C "$LIB_ROOT" rev-parse --short HEAD)
	v=$("$CHLBD" --version) || return 1
	id=$(field "build id" "$v")
	check "chlbd --version: a version and a 16-hex build id: $v" \
		grep -qE '^[0-9a-f]{16}$' <<<"$id" || return 1
	check "chlbd --version needs no interface" grep -q "^chlbd [^ ]" <<<"$v" || return 1
	check "--version matches the build's header" grep -qF "\"$id\"" "$BUILD/chlb_version.h" || return 1
	check "chlbd --version: VERSION ($rel) and the commit built ($commit): $v" \
		grep -qE "^chlbd $rel \(git $commit(-dirty)?\), bpf build id $id\$" <<<"$v" || return 1
	check "chlbctl --version: the same: $("$CHLBCTL" --version)" \
		[ "$("$CHLBCTL" --version)" = "chlbctl ${v#chlbd }" ] || return 1
	[ -n "$CHLBD_PID" ] || chlbd_start xdp-generic || return 1
	vers=$(ctl version) || return 1
	cid=$(field "build id" "$(grep '^chlbctl ' <<<"$vers")")
	did=$(field "build id" "$(grep '^chlbd ' <<<"$vers")")
	check "chlbctl version: chlbctl and chlbd lines: $vers" [ -n "$cid" ] && [ -n "$did" ] || return 1
	check "same build id everywhere ($id, $cid, $did)" [ "$id" = "$cid" ] && [ "$id" = "$did" ] ||
		return 1
	check "the daemon's pid shown" grep -q "pid $CHLBD_PID," <<<"$vers" || return 1
	check "no mismatch flagged" nogrep -q MISMATCH <<<"$vers" || return 1
	long=${v#chlbd }
	long=${long%, bpf build id *}
	check "the match said" grep -qxF "match: chlbd runs this build ($long)" <<<"$vers" || return 1
	check "JSON: match, chlbd's id" ctl -j version |
		jq -e --arg id "$id" --arg v "$rel" '.match and .chlbd.bpf_build_id == $id and
			.bpf_build_id == $id and .version == $v and .chlbd.version == $v and
			(.commit | startswith("'"$commit"'")) and .chlbd.commit == .commit' \
			>/dev/null || return 1
	chlbd_stop
	# no daemon: chlbctl's own line, then exit 3 (unreachable)
	vers=$(ctl version 2>&1)
	check "no daemon: exit 3, own version printed: $vers" [ $? = 3 ] &&
		grep -q "^chlbctl .*build id $id" <<<"$vers"
}

# A chlbd of another build (a fake one answering `version` with the reply in
# $LIB_DIR/fake.reply): another version or BPF program flagged MISMATCH,
# the same ones built from another commit noted.
test_version_mismatch_flagged() {
	local sock=$LIB_DIR/fake.sock reply=$LIB_DIR/fake.reply out rel id
	local fake_id=0123456789abcdef # no real build's BPF id; check_refs: allow
	rel=$(cat "$LIB_ROOT/VERSION")
	id=$("$CHLBCTL" --version | awk '{ print $NF }')
	printf '{"version": "0.0.1", "commit": "old-build", "bpf_build_id": "%s", "pid": 1}\n' "$fake_id" \
		>"$reply"
	lib_bg fake python3 -c 'import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.bind(sys.argv[1]); s.listen(4)
while True:
    c, _ = s.accept()
    req = b""
    while True:
        d = c.recv(4096)
        if not d: break
        req += d
    c.sendall(open(sys.argv[2], "rb").read() if req.strip() == b"version"
              else b"{\"error\": \"unexpected\"}")
    c.close()' "$sock" "$reply"
	lib_wait_for 5 test -S "$sock" || return 1
	out=$("$CHLBCTL" -s "$sock" version)
	check "exit 0, mismatch flagged: $out" [ $? = 0 ] &&
		grep -qx "MISMATCH: chlbd runs version 0.0.1, this chlbctl is $rel (and another BPF program); .*" \
			<<<"$out" || return 1
	check "the daemon's build shown" \
		grep -q "^chlbd   0.0.1 (git old-build), bpf build id $fake_id (running: pid 1," \
		<<<"$out" || return 1
	out=$("$CHLBCTL" -s "$sock" -j version)
	check "JSON: match false: $out" \
		jq -e '.match == false and .same_version == false and .same_bpf == false' <<<"$out" \
		>/dev/null || return 1
	# the same BPF program, another version: still a mismatch
	printf '{"version": "0.0.1", "bpf_build_id": "%s", "pid": 1}' "$id" >"$reply"
	out=$("$CHLBCTL" -s "$sock" version)
	check "another version, the same program: MISMATCH: $out" \
		grep -qx "MISMATCH: chlbd runs version 0.0.1, this chlbctl is $rel; restart chlbd .*" \
		<<<"$out" || return 1
	# the same version, another program
	printf '{"version": "%s", "bpf_build_id": "%s", "pid": 1}' "$rel" "$fake_id" >"$reply"
	out=$("$CHLBCTL" -s "$sock" version)
	check "the same version, another program: MISMATCH: $out" \
		grep -q "^MISMATCH: chlbd runs another BPF program" <<<"$out" || return 1
	# the same version and program from a release tarball (commit null): noted
	printf '{"version": "%s", "commit": null, "bpf_build_id": "%s", "pid": 1}' "$rel" "$id" \
		>"$reply"
	out=$("$CHLBCTL" -s "$sock" version)
	check "built from other sources: a note, no MISMATCH: $out" \
		grep -q "^note: the same version and BPF program, built from other sources (git .* here, none in chlbd)" \
		<<<"$out" && nogrep -q MISMATCH <<<"$out" || return 1
	out=$("$CHLBCTL" -s "$sock" -j version)
	lib_stop "$LIB_LASTPID"
	check "JSON: no match, the same version and program: $out" \
		jq -e '.match == false and .same_version and .same_bpf and .chlbd.commit == null' \
		<<<"$out" >/dev/null
}

test_log_level() {
	local out rc
	out=$("$CHLBD" -i v0 --log-level bogus 2>&1)
	rc=$?
	check "--log-level bogus: exit 2 ($rc)" [ "$rc" = 2 ] || return 1
	check "clear message: $out" grep -qF "'bogus': unknown log level (expected err, warning, info, debug)" \
		<<<"$out" || return 1
	# err: the info lines ("ready: ...") are gone
	chlbd_start xdp-generic --log-level err || return 1
	chlbd_stop
	check "--log-level err: no info lines: $(head -3 "$CHLBD_LOG")" nogrep -q ' info: ' "$CHLBD_LOG" || return 1
	chlbd_start xdp-generic --log-level debug || return 1
	chlbd_stop
	check "--log-level debug: info lines kept" grep -q ' info: ready: ' "$CHLBD_LOG"
}

# Under systemd stderr is the journal's stream, and JOURNAL_STREAM says which
# (DEV:INODE): the suite's log file stands in for it.
test_journal_priorities() {
	local next=$LIB_DIR/chlbd-$((CHLBD_STARTS + 1)).log js
	: >"$next"
	js=$(stat -c %d:%i "$next")
	JOURNAL_STREAM=$js chlbd_start xdp-generic || return 1
	kill -HUP "$CHLBD_PID" # no -c: a warning
	lib_wait_for 2 grep -q '^<4>SIGHUP' "$CHLBD_LOG"
	chlbd_stop
	check "log has lines: $(head -3 "$CHLBD_LOG")" [ -s "$CHLBD_LOG" ] || return 1
	check "every line starts with <N>: $(grep -v '^<[0-7]>' "$CHLBD_LOG" | head -3)" \
		nogrep -qv '^<[0-7]>' "$CHLBD_LOG" || return 1
	check "ready is <6> (info)" grep -q '^<6>ready: ' "$CHLBD_LOG" || return 1
	check "the SIGHUP warning is <4> (warning)" grep -q '^<4>SIGHUP: ' "$CHLBD_LOG" || return 1
	# an inherited JOURNAL_STREAM naming another stream: plain lines
	JOURNAL_STREAM=$js chlbd_start xdp-generic || return 1
	chlbd_stop
	check "JOURNAL_STREAM of another file: timestamps, no <N>: $(head -1 "$CHLBD_LOG")" \
		grep -qE '^[0-9:.]+ chlbd info: ready: ' "$CHLBD_LOG"
}

# sd_notify: a unix datagram socket stands in for systemd's. On READY=1 the
# receiver asks chlbd's control socket at once: it must answer, with the -c
# config already applied; the sender must be chlbd itself (SCM_CREDENTIALS).
NOTIFY_RX='import json, socket, struct, sys
path, out, ctl = sys.argv[1:4]
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.setsockopt(socket.SOL_SOCKET, socket.SO_PASSCRED, 1)
s.bind(path)
while True:
    data, anc, _, _ = s.recvmsg(4096, socket.CMSG_SPACE(12))
    pid = -1
    for level, kind, cdata in anc:
        if level == socket.SOL_SOCKET and kind == socket.SCM_CREDENTIALS:
            pid = struct.unpack("iII", cdata[:12])[0]
    rec = {"msg": data.decode().split("\n"), "pid": pid}
    if "READY=1" in rec["msg"]:
        try:
            c = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            c.settimeout(2)
            c.connect(ctl)
            c.sendall(b"service list\n")
            c.shutdown(socket.SHUT_WR)
            reply = b""
            while True:
                d = c.recv(65536)
                if not d: break
                reply += d
            rec["reply"] = json.loads(reply)
        except Exception as e:
            rec["reply_error"] = str(e)
    with open(out, "a") as f:
        f.write(json.dumps(rec) + "\n")'

test_sd_notify_ready() {
	local nsock=$LIB_DIR/notify.sock rec=$LIB_DIR/notify.jsonl conf=$LIB_DIR/notify.conf ready
	printf 'service add %s\nbackend add %s 10.1.0.2\n' $VIP $VIP >"$conf"
	lib_bg notify-rx python3 -c "$NOTIFY_RX" "$nsock" "$rec" "$CHLBD_SOCK"
	lib_wait_for 5 test -S "$nsock" || return 1
	NOTIFY_SOCKET=$nsock chlbd_start xdp-generic -c "$conf" --ready-settle-ms 300 || return 1
	check "READY=1 received: $(cat "$rec" 2>/dev/null)" \
		lib_wait_for 5 grep -q '"READY=1"' "$rec" || return 1
	ready=$(grep '"READY=1"' "$rec" | head -1)
	check "READY sent by chlbd (pid $CHLBD_PID): $ready" \
		jq -e --argjson p "$CHLBD_PID" '.pid == $p' <<<"$ready" >/dev/null || return 1
	check "the socket answered at READY, config applied: $ready" \
		jq -e --arg v $VIP '.reply.services | map(.service) == [$v]' <<<"$ready" >/dev/null ||
		return 1
	check "STATUS with it" jq -e '.msg | any(startswith("STATUS=serving 1 services"))' \
		<<<"$ready" >/dev/null || return 1
	check "one READY" [ "$(grep -c '"READY=1"' "$rec")" = 1 ] || return 1
	# readiness (docs/operations.md): -c loaded, no sync: ready once settled
	check "STATUS at READY: not ready yet, settling: $ready" \
		jq -e '.msg | any(. == "STATUS=serving 1 services; not ready: settling (300 ms)")' \
		<<<"$ready" >/dev/null || return 1
	check "STATUS: ready after the settle time: $(tail -1 "$rec")" \
		lib_wait_for 5 grep -q 'STATUS=serving 1 services, ready' "$rec" || return 1
	# STATUS follows changes: systemctl status shows what serves now
	ctl service add 10.0.0.11:80/tcp || return 1
	check "STATUS after a change: $(tail -1 "$rec")" \
		lib_wait_for 5 grep -q 'STATUS=serving 2 services' "$rec" || return 1
	chlbd_stop
	check "STOPPING=1 on SIGTERM" lib_wait_for 2 grep -q '"STOPPING=1"' "$rec"
}

test_version_fallback_outside_git() {
	local src=$LIB_DIR/tarball v out
	mkdir -p "$src/b" && cp -r "$LIB_ROOT/Makefile" "$LIB_ROOT/VERSION" "$LIB_ROOT/bpf" \
		"$LIB_ROOT/include" "$src/" || return 1
	cp "$BUILD/chlb.bpf.o" "$src/b/" && touch "$src/b/chlb.bpf.o" || return 1
	env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -s -C "$src" BUILD=b b/chlb_version.h \
		>/dev/null || return 1
	v=$(cat "$LIB_ROOT/VERSION")
	check "not a git tree: CHLB_VERSION is VERSION's ($v), no commit" \
		grep -qx "#define CHLB_VERSION \"$v\"" "$src/b/chlb_version.h" &&
		grep -qx '#define CHLB_COMMIT ""' "$src/b/chlb_version.h" &&
		grep -qx "#define CHLB_VERSION_LONG \"$v\"" "$src/b/chlb_version.h" || return 1
	echo 0.3 >"$src/VERSION"
	out=$(env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -s -C "$src" BUILD=b b/chlb_version.h 2>&1)
	check "a VERSION that is no MAJOR.MINOR.PATCH is refused: $out" [ $? != 0 ] &&
		grep -qF "VERSION: '0.3' is not a version (MAJOR.MINOR.PATCH)" <<<"$out" || return 1
	check "BPF build id: the SHA-256 of chlb.bpf.o, first 64 bits" grep -qx \
		"#define CHLB_BPF_BUILD_ID \"$(sha256sum "$BUILD/chlb.bpf.o" | cut -c1-16)\"" \
		"$src/b/chlb_version.h"
}

test_uninstall() {
	local out
	out=$(mk uninstall DESTDIR="$DEST" 2>&1)
	check "make uninstall: $out" [ $? = 0 ] || return 1
	check "nothing left: $(files_left "$DEST")" [ -z "$(files_left "$DEST")" ] || return 1
	check "/etc/chlb removed (empty)" [ ! -e "$DEST/etc/chlb" ] || return 1
	# a config the operator changed survives reinstall and uninstall
	mk install DESTDIR="$DEST" >/dev/null || return 1
	echo "service add $VIP" >>"$CONF"
	mk install DESTDIR="$DEST" >/dev/null || return 1
	check "reinstall keeps a changed config" grep -qx "service add $VIP" "$CONF" || return 1
	mk uninstall DESTDIR="$DEST" >/dev/null || return 1
	check "uninstall keeps a changed config" grep -qx "service add $VIP" "$CONF" || return 1
	check "and removes the rest: $(files_left "$DEST")" [ "$(files_left "$DEST")" = "$CONF" ] ||
		return 1
	# a fresh Debian 12 has these (base-files); install creates the rest, and
	# uninstall must leave exactly these again, no empty directories of chlb's
	# (it once left man5, man8, lib/systemd/system and bash-completion/completions)
	local fresh=$LIB_DIR/fresh before after
	mkdir -p "$fresh/etc/default" "$fresh$PREFIX_DIR/sbin" "$fresh$PREFIX_DIR/lib" \
		"$fresh$PREFIX_DIR/share/man" || return 1
	before=$(cd "$fresh" && find . | sort)
	mk install DESTDIR="$fresh" >/dev/null && mk uninstall DESTDIR="$fresh" >/dev/null || return 1
	after=$(cd "$fresh" && find . | sort)
	check "uninstall leaves the tree as before install: $(comm -13 <(echo "$before") <(echo "$after"))" \
		[ "$before" = "$after" ]
}

lib_run
