#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# `make dist`: the release tarball holds the files git tracks (as they are in
# the work tree) under chlb-VERSION/, and builds and installs outside any git
# tree, where chlbd and chlbctl know VERSION and no commit. The tarball is
# built from scratch (nothing of this tree's build is reused): the programs
# only, what `make install` needs, at -O0 to halve the compile time (the
# tree's own build covers -O2); about 20 s of CPU.
. "$(dirname "$0")/../lib.sh"

REL=$(cat "$LIB_ROOT/VERSION")
TARBALL=$BUILD/chlb-$REL.tar.gz
SRC=$LIB_DIR/src/chlb-$REL
DEST=$LIB_DIR/dest
DIST_CFLAGS=${DIST_CFLAGS:--O0 -g}

# mk DIR TARGET ARGS: make in DIR, outside any make that runs the suite and
# without its BUILD (the runner's environment has one, which the Makefile's
# BUILD ?= would take: an absolute one made the tarball build write over
# the tree's build); the callers name theirs
mk() {
	local dir=$1
	shift
	env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL -u BUILD make -s --no-print-directory -C "$dir" "$@"
}

# not_git DIR: DIR is in no git work tree
not_git() { ! git -C "$1" rev-parse --git-dir >/dev/null 2>&1; }

# tracked: the files git tracks that the work tree has, as the tarball names them
tracked() {
	{
		git -C "$LIB_ROOT" ls-files
		git -C "$LIB_ROOT" ls-files --deleted
	} | sort | uniq -u | sed "s|^|chlb-$REL/|"
}

test_dist_tarball() {
	local out list modes
	out=$(mk "$LIB_ROOT" BUILD="${BUILD#"$LIB_ROOT"/}" dist 2>&1)
	check "make dist: $out" [ $? = 0 ] && [ -f "$TARBALL" ] || return 1
	list=$(tar -tzf "$TARBALL" | sort) || return 1
	check "the tracked files, under chlb-$REL/: $(diff <(tracked) <(echo "$list") | head -5)" \
		[ "$list" = "$(tracked | sort)" ] || return 1
	check "VERSION, NEWS.md and the Makefile in it" \
		grep -qx "chlb-$REL/VERSION" <<<"$list" && grep -qx "chlb-$REL/NEWS.md" <<<"$list" &&
		grep -qx "chlb-$REL/Makefile" <<<"$list" || return 1
	check "no build output, no .git" nogrep -qE '^[^/]+/(build|\.git)/' <<<"$list" || return 1
	modes=$(tar -tvzf "$TARBALL" | awk '{ print $1, $2 }' | sort -u | tr '\n' ' ')
	check "owned by root, modes 644 or 755: $modes" \
		[ "$modes" = "-rw-r--r-- 0/0 -rwxr-xr-x 0/0 " ] || [ "$modes" = "-rw-r--r-- 0/0 " ]
}

test_tarball_builds_and_installs_outside_git() {
	local out v c id
	[ -f "$TARBALL" ] || return 1
	mkdir -p "$LIB_DIR/src" && tar -xzf "$TARBALL" -C "$LIB_DIR/src" || return 1
	check "unpacked outside any git tree" not_git "$SRC" || return 1
	out=$(mk "$SRC" -j"$(nproc)" BUILD=build CFLAGS="$DIST_CFLAGS" build/chlbd build/chlbctl 2>&1)
	check "the programs build from the tarball: $(tail -5 <<<"$out")" [ $? = 0 ] || return 1
	out=$(mk "$SRC" BUILD=build install DESTDIR="$DEST" 2>&1)
	check "make install DESTDIR= from it: $(tail -5 <<<"$out")" [ $? = 0 ] || return 1
	v=$("$DEST/usr/local/sbin/chlbd" --version)
	id=$(sed -n 's/^#define CHLB_BPF_BUILD_ID "\(.*\)"$/\1/p' "$SRC/build/chlb_version.h")
	check "installed chlbd --version: $REL, no commit: $v" \
		[ "$v" = "chlbd $REL, bpf build id $id" ] && grep -qE '^[0-9a-f]{16}$' <<<"$id" || return 1
	c=$("$DEST/usr/local/sbin/chlbctl" --version)
	check "installed chlbctl --version: the same: $c" [ "$c" = "chlbctl $REL, bpf build id $id" ] ||
		return 1
	check "NEWS.md installed with the docs" \
		cmp -s "$DEST/usr/local/share/doc/chlb/NEWS.md" "$LIB_ROOT/NEWS.md"
}

lib_run
