#!/usr/bin/env bash
# Write the commits of $CACHE/linux back to patches/: group G is the commits
# between the previous group's tag and grp/G (tags made by mktree.sh; to add
# a group, tag its last commit grp/<name> and list it in patches/groups).
# Output is stable: no hashes, no version signature, dates kept from the
# commits themselves.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
need git
lock_cache -x tree
[ -d "$SRC/.git" ] || die "no tree at $SRC (run scripts/mktree.sh)"
[ "$(cut -d' ' -f1 "$STAMP" 2>/dev/null)" != rebuilding ] ||
	die "$SRC is a rebuild from patches/ that did not finish: run make tree, not export"
g() { git -C "$SRC" "$@"; }

mapfile -t groups < <(groups_list)
prev=base
last=base
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
: >"$tmp/series"
for grp in "${groups[@]}"; do
	g rev-parse -q --verify "grp/$grp" >/dev/null || continue
	g merge-base --is-ancestor "$prev" "grp/$grp" || die "grp/$grp is not after $prev"
	mkdir -p "$tmp/$grp"
	g format-patch -q --zero-commit --no-signature --no-stat -N \
		-o "$tmp/$grp" "$prev..grp/$grp" >/dev/null
	for f in "$tmp/$grp"/*.patch; do
		[ -e "$f" ] && echo "$grp/$(basename "$f")" >>"$tmp/series"
	done
	prev=grp/$grp
	last=$grp
done
# HEAD is at the end of tests/ (the carriers' stack: tag patched) or, to
# work on the groups after it, at the last group's tag
head=$(g rev-parse HEAD)
[ "$head" = "$(g rev-parse "$prev")" ] || { g rev-parse -q --verify grp/tests >/dev/null && [ "$head" = "$(g rev-parse grp/tests)" ]; } ||
	die "HEAD is not at grp/$last or grp/tests: tag the new commits' group (git tag -f grp/<group>)"
for grp in "${groups[@]}"; do
	rm -f "$PATCHES/$grp"/*.patch
	[ -d "$tmp/$grp" ] || continue
	mkdir -p "$PATCHES/$grp"
	cp "$tmp/$grp"/*.patch "$PATCHES/$grp/" 2>/dev/null || true
done
{
	echo "# quilt order; written by scripts/export.sh"
	cat "$tmp/series"
} >"$PATCHES/series"
# What a carrier applies to the base: the groups before tests/ but base/
# (the base's selftest build fixes), i.e. the kernel make test runs
# without the project's own tests and the groups beyond upstream
{
	echo "# the patches a carrier applies to the base, in quilt order: every group"
	echo "# before tests/ but base/; a held group (a file \"hold\") is in, as make"
	echo "# test's kernel has it (make test-unheld tests the stack without it)."
	echo "# Written by scripts/export.sh."
	for grp in "${groups[@]}"; do
		[ "$grp" != tests ] || break
		[ "$grp" != base ] || continue
		grep "^$grp/" "$tmp/series" || true
	done
} >"$PATCHES/series.carrier"
# the tags the other scripts use follow the exported commits; the tree
# goes back to patched
top_tags "$prev"
if g rev-parse -q --verify grp/base >/dev/null; then g tag -f base-fixed grp/base >/dev/null; fi
echo "$(patches_hash) $(g rev-parse HEAD)" >"$STAMP"
log "exported $(wc -l <"$tmp/series") patches"
