#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# `make grammar-docs`: rewrites the sections of the man pages generated from
# the grammar table (user/lib/config/grammar_table.c). A section is the
# lines between
#   .\" BEGIN GENERATED NAME[: anything]
#   .\" END GENERATED NAME
# and holds what `chlbctl help --man NAME` prints. tests/unit/test_grammar_table.c
# fails while a section differs from the table; this script is how to
# bring them back in line. Prints the files it changed.
set -eu
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
CHLBCTL=$BUILD/chlbctl
BEGIN='.\" BEGIN GENERATED '
END='.\" END GENERATED '

[ -x "$CHLBCTL" ] || {
	echo "grammar_docs: no $CHLBCTL (make $CHLBCTL first)" >&2
	exit 1
}
out=$(mktemp)
trap 'rm -f "$out"' EXIT
for f in docs/chlb.5 docs/chlbctl.8; do
	skip=0
	while IFS= read -r line; do
		[[ $line == "$END"* ]] && skip=0
		[ "$skip" = 1 ] && continue
		printf '%s\n' "$line"
		if [[ $line == "$BEGIN"* ]]; then
			name=${line#"$BEGIN"}
			name=${name%% *}
			name=${name%:}
			"$CHLBCTL" help --man "$name" || {
				echo "grammar_docs: $f: no section '$name'" >&2
				exit 1
			}
			skip=1
		fi
	done <"$f" >"$out"
	if ! cmp -s "$out" "$f"; then
		cat "$out" >"$f"
		printf '  %-8s %s\n' GEN "$f"
	fi
done
