#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# The layering rule of user/lib (docs/design.md, "user/lib layers") and
# chlbd's rooms (user/chlbd/README.md), checked
# by `make lint`. Every file of user/lib sits in one layer folder, and
#   - includes a user/lib header by its layer path ("base/addr.h"), never by a
#     bare name or through "..";
#   - includes only headers of its own layer or of the layers below it
#     (LAYER_MAY below): an include that points up, or sideways (engine and dp
#     are beside each other: the engine reaches the kernel only through
#     struct chlb_dp_ops), fails;
#   - includes another folder's *_int.h never: those are the folder's own;
#   - may include include/*.h (shared with the BPF side) by its bare name,
#     and, in dp/ only, the generated BPF skeletons (*.skel.h).
# include/*.h, compiled by the BPF side too, include only each other.
# chlbd is in rooms (user/chlbd/README.md): the core in user/chlbd/ and the
# folders CHLBD_ROOMS, whose files are each named ROOM_* (or ROOM.c, ROOM.h).
# A file of chlbd includes chlbd's headers by their path under user/chlbd
# ("sync/sync.h", "chlbd.h"), a layer's by its layer path, never through
# ".."; another room's *_int.h never; and health/, sync/ and metrics/ never
# include a ctl/ header: the control socket asks them, not the other way.
# With the objects built ($BUILD, default build/, no older than their
# sources), the calls are checked too (nm): no user/lib object uses a symbol
# of a layer it may not include, and the files of user/lib, of chlbd and of
# chlbctl call each other without a cycle (tsort). Objects missing or stale:
# those checks are skipped, and said so.
# Prints every violation and exits 1 when there is one.
set -u
cd "$(dirname "$0")/.."

LAYERS="base table config engine dp wire"
declare -A LAYER_MAY=(
	[base]="base"
	[table]="base table"
	[config]="base table config"
	[engine]="base table config engine"
	[dp]="base dp"
	[wire]="base wire"
)
bad=0
fail() {
	echo "check_layers: $*" >&2
	bad=1
}

in_list() { # WORD LIST...
	local w=$1
	shift
	for x in $*; do [ "$x" = "$w" ] && return 0; done
	return 1
}

# Files outside a layer folder, and folders that are no layer.
for f in user/lib/*; do
	name=${f#user/lib/}
	if [ -d "$f" ]; then
		in_list "$name" $LAYERS || fail "$f: not a layer folder (layers: $LAYERS)"
	elif [ "$name" != README ] && [ "$name" != README.md ]; then
		fail "$f: every file of user/lib belongs in a layer folder ($LAYERS)"
	fi
done

# includes FILE: each quoted include as "LINE:HEADER"
includes() {
	grep -n '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' "$1" |
		sed 's/^\([0-9]*\):[^"]*"\([^"]*\)".*/\1:\2/'
}

for layer in $LAYERS; do
	for f in user/lib/"$layer"/*.[ch]; do
		[ -e "$f" ] || continue
		while IFS=: read -r line h; do
			where="$f:$line: #include \"$h\""
			case $h in
			*..*)
				fail "$where: no '..' in an include path"
				;;
			*/*)
				to=${h%%/*}
				if ! in_list "$to" $LAYERS; then
					fail "$where: '$to' is not a layer of user/lib"
				elif ! in_list "$to" ${LAYER_MAY[$layer]}; then
					fail "$where: points $(in_list "$layer" ${LAYER_MAY[$to]} && echo up || echo sideways); $layer/ may include ${LAYER_MAY[$layer]// /, } only"
				elif [ ! -e "user/lib/$h" ]; then
					fail "$where: no such header user/lib/$h"
				elif [ "$to" != "$layer" ] && [[ $h == *_int.h ]]; then
					fail "$where: $h is internal to $to/"
				fi
				;;
			*.skel.h)
				[ "$layer" = dp ] || fail "$where: only dp/ loads BPF objects"
				;;
			*)
				if [ -e "include/$h" ]; then
					:
				elif ls user/lib/*/"$h" >/dev/null 2>&1; then
					fail "$where: write the layer path: $(cd user/lib && ls */"$h" | head -1)"
				else
					fail "$where: not a header of include/ nor of a layer"
				fi
				;;
			esac
		done < <(includes "$f")
	done
done

for f in include/*.h; do
	while IFS=: read -r line h; do
		[ -e "include/$h" ] ||
			fail "$f:$line: #include \"$h\": include/ is shared with the BPF side and includes only include/*.h"
	done < <(includes "$f")
done

# ---- chlbd's rooms ----
CHLBD_ROOMS="ctl health sync metrics"
CHLBD_NO_CTL="health sync metrics" # rooms that never include ctl/
for d in user/chlbd/*/; do
	d=${d%/}
	in_list "${d#user/chlbd/}" $CHLBD_ROOMS || fail "$d: not a room of chlbd (rooms: $CHLBD_ROOMS; user/chlbd/README.md)"
done
for f in user/chlbd/*.[ch] user/chlbd/*/*.[ch]; do
	[ -e "$f" ] || continue
	rel=${f#user/chlbd/}
	room=
	if [[ $rel == */* ]]; then
		room=${rel%%/*}
		name=${rel#*/}
		case $name in
		"$room".[ch] | "$room"_*) ;;
		*) fail "$f: a file of $room/ is named $room.c, $room.h or ${room}_*" ;;
		esac
	fi
	while IFS=: read -r line h; do
		where="$f:$line: #include \"$h\""
		to=${h%%/*}
		case $h in
		*..*)
			fail "$where: no '..' in an include path"
			;;
		*/*)
			if in_list "$to" $LAYERS; then
				[ -e "user/lib/$h" ] || fail "$where: no such header user/lib/$h"
			elif in_list "$to" $CHLBD_ROOMS; then
				if [ ! -e "user/chlbd/$h" ]; then
					fail "$where: no such header user/chlbd/$h"
				elif [ "$to" = ctl ] && in_list "$room" $CHLBD_NO_CTL; then
					fail "$where: $room/ never includes ctl/ (ctl/ asks $room/ through $room/$room.h)"
				elif [ "$to" != "$room" ] && [[ $h == *_int.h ]]; then
					fail "$where: $h is internal to $to/"
				fi
			else
				fail "$where: '$to' is neither a layer of user/lib nor a room of chlbd"
			fi
			;;
		*)
			if [ -e "include/$h" ] || [ "$h" = chlb_version.h ]; then
				: # shared with the BPF side; generated by the Makefile
			elif [ -e "user/chlbd/$h" ]; then
				[ -z "$room" ] || [ ! -e "user/chlbd/$room/$h" ] ||
					fail "$where: write the room's path: $room/$h"
			elif ls user/chlbd/*/"$h" >/dev/null 2>&1; then
				fail "$where: write the room's path: $(cd user/chlbd && ls */"$h" | head -1)"
			elif ls user/lib/*/"$h" >/dev/null 2>&1; then
				fail "$where: write the layer path: $(cd user/lib && ls */"$h" | head -1)"
			else
				fail "$where: not a header of include/, user/lib or chlbd"
			fi
			;;
		esac
	done < <(includes "$f")
done

# ---- calls: the objects' symbols ----
BUILD=${BUILD:-build}

# objects SRC...: the object of each source, or nothing when one is missing or stale
objects() {
	local src o out=()
	for src; do
		o=$BUILD/${src%.c}.o
		if [ ! -e "$o" ] || [ "$o" -ot "$src" ]; then
			echo "check_layers: $o missing or older than $src: calls not checked (make first)" >&2
			return 1
		fi
		out+=("$o")
	done
	printf '%s\n' "${out[@]}"
}

# edges OBJ...: "D OBJ SYMBOL" for every symbol an object defines, "U OBJ
# SYMBOL" for every one it uses; one nm for all the objects (-A: each line
# names its object), as a process per object cost a minute on a busy VM
edges() {
	nm -A -g --defined-only "$@" | awk 'NF == 3 { f = $1; sub(/:[^:]*$/, "", f); print "D", f, $3 }'
	nm -A -u "$@" | awk '{ f = $1; sub(/:[^:]*$/, "", f); print "U", f, $NF }'
} 2>/dev/null
calls() {
	edges "$@" | awk '$1 == "D" { def[$3] = $2; next }
		$1 == "U" && ($3 in def) && def[$3] != $2 { print $2, def[$3], $3 }'
}

# no_cycle NAME: the calls on stdin ("FROM TO SYMBOL", from calls) form no cycle
no_cycle() {
	local name=$1 loop
	loop=$(awk 'NF { print $1, $2 }' | sort -u | tsort 2>&1 >/dev/null |
		sed -n "s|^tsort: $BUILD/\(.*\)\.o\$|\1.c|p" | awk '!seen[$0]++' | tr '\n' ' ')
	[ -z "$loop" ] || fail "$name: files that call each other in a cycle: $loop"
}

if srcs=$(ls user/lib/*/*.c) && objs=$(objects $srcs); then
	# shellcheck disable=SC2086
	lib_calls=$(calls $objs)
	while read -r from to sym; do
		[ -n "$from" ] || continue
		lf=${from#"$BUILD"/user/lib/} lt=${to#"$BUILD"/user/lib/} # their layers
		lf=${lf%%/*} lt=${lt%%/*}
		in_list "$lt" ${LAYER_MAY[$lf]} ||
			fail "${from#"$BUILD"/} uses $sym of ${to#"$BUILD"/}: $lf/ may use ${LAYER_MAY[$lf]// /, } only"
	done <<<"$lib_calls"
	no_cycle user/lib <<<"$lib_calls"
fi
for prog in chlbd chlbctl; do
	# shellcheck disable=SC2086
	if srcs=$(ls user/$prog/*.c user/$prog/*/*.c 2>/dev/null) && objs=$(objects $srcs); then
		no_cycle "user/$prog" < <(calls $objs)
	fi
done

exit $bad
