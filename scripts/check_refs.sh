#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-2.0 OR BSD-2-Clause
# No commit ids and no tracker numbers in the tree's text, checked by `make
# lint`: a reader of the docs, the tests or the sources has the repository,
# not the tracker or the history behind a commit id, so a line must say in
# words what it refers to (history goes to NEWS.md, by release).
# Looked at: README.md, NEWS.md, docs/*.md, and every text file under
# tests/, user/, bpf/, include/, scripts/, dist/ and the Makefile (the files
# git knows or would add; every file outside a git tree).
#   - a commit id: a word of 7-40 characters of 0-9a-f with at least one
#     letter and one digit (what `git log --oneline` prints). 0x-numbers,
#     decimal numbers, words and hex of other lengths (SHA-256 digests, keys
#     of 64 digits) are not one;
#   - a tracker number: the word "issue" (or "issues", "bug", "PR") and a
#     number after a space or "#", or "#" and digits not glued to a word or number ("10.1.0.7#0"
#     is a vnode name, "s#1#2#" a sed expression).
# A line that must hold such a word (a hex name or id in a test vector) says
# so with the comment "check_refs: allow" on the same line; nothing else is
# exempt. Prints every hit as FILE:LINE: TEXT and exits 1 when there is one.
set -u
cd "$(dirname "$0")/.."

paths=(README.md NEWS.md docs tests user bpf include scripts dist Makefile)
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
	mapfile -t files < <(git ls-files --cached --others --exclude-standard -- "${paths[@]}" |
		grep -E '^(README\.md|NEWS\.md|Makefile|docs/[^/]*\.md|(tests|user|bpf|include|scripts|dist)/.*)$')
else
	mapfile -t files < <(find "${paths[@]}" -type f 2>/dev/null |
		grep -E '^(README\.md|NEWS\.md|Makefile|docs/[^/]*\.md|(tests|user|bpf|include|scripts|dist)/.*)$')
fi
existing=()
for f in "${files[@]}"; do [ -f "$f" ] && existing+=("$f"); done
[ ${#existing[@]} -gt 0 ] || { echo "check_refs: no files to check" >&2; exit 1; }

commit_re='(?<![0-9A-Za-z_])(?=[0-9a-f]{0,39}[a-f])(?=[0-9a-f]{0,39}[0-9])[0-9a-f]{7,40}(?![0-9A-Za-z_])'
tracker_re='\b(?:(?i:issues?|bugs?)|PRs?)(?:\s+#?|\s*#)[0-9]+\b|(?<![0-9A-Za-z_&$#{])#[0-9]+\b'

hits=$(grep -InHP -- "$commit_re|$tracker_re" "${existing[@]}" | grep -v 'check_refs: allow')
if [ -n "$hits" ]; then
	printf '%s\n' "$hits"
	echo "check_refs: a commit id or tracker number above: say in words what it refers to (history: NEWS.md); a hex word that must stay takes the comment 'check_refs: allow' on its line" >&2
	exit 1
fi
exit 0
