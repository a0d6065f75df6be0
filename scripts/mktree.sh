#!/usr/bin/env bash
# Make the git tree $CACHE/linux: the pinned base as the first commit (tag
# "base"), then one commit per line of patches/series (git am).  Each patch
# group (the directory a patch lives in, e.g. base/ or a-dirty-log/) ends at a
# tag grp/<group>; "base-fixed" marks the end of the base/ group (fixes the
# base needs, not part of the series we send) and "patched" the end of the
# tests/ group: what a carrier takes, with the project's tests.  The groups
# after tests/ (beyond upstream, e.g. d-fast-clear) are applied on top and
# their end tagged "fast"; the tree is then checked out at patched (branch
# main), so that every patched build is the carriers' stack (lib.sh,
# variant_rev).  A second worktree $CACHE/linux-base is checked out at
# base-fixed.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
need git
lock_cache -x tree

export GIT_COMMITTER_NAME=kvm-series GIT_COMMITTER_EMAIL=kvm-series@invalid
export GIT_COMMITTER_DATE="2000-01-01T00:00:00Z"
g() { git -C "$SRC" "$@"; }

fresh=0
if [ ! -d "$SRC/.git" ]; then
	fresh=1
	log "creating git tree $SRC from the base (once)"
	"$(dirname "$0")/fetch-base.sh"
	rm -rf "$SRC.tmp"
	mv "$CACHE/base-src" "$SRC.tmp"
	rm -f "$SRC.tmp/.unpacked-$BASE_VER"
	git -C "$SRC.tmp" init -q -b main
	git -C "$SRC.tmp" config core.autocrlf false
	git -C "$SRC.tmp" config gc.auto 0
	git -C "$SRC.tmp" add -A -f .
	GIT_AUTHOR_NAME=kvm-series GIT_AUTHOR_EMAIL=kvm-series@invalid \
	GIT_AUTHOR_DATE=$GIT_COMMITTER_DATE \
		git -C "$SRC.tmp" commit -q -m "Debian $BASE_PKG $BASE_VER (pristine base)"
	git -C "$SRC.tmp" tag base
	mv "$SRC.tmp" "$SRC"
fi

# Never throw away work: a tree whose HEAD is not the one recorded in
# $STAMP, or that has edits, has something patches/ does not.
hash=$(patches_hash)
if [ "$fresh" = 0 ] && [ "${KS_RESET_TREE:-0}" != 1 ]; then
	# $had is "rebuilding" after a rebuild that failed or was interrupted:
	# such a tree holds nothing of the user's
	read -r had head_was 2>/dev/null <"$STAMP" || had="" head_was=$(g rev-parse -q --verify patched || true)
	head=$(g rev-parse HEAD)
	why=""
	[ -z "$(g status --porcelain --ignored)" ] || why="uncommitted edits or new files"
	gd=$(g rev-parse --absolute-git-dir)
	[ ! -d "$gd/rebase-apply" ] && [ ! -d "$gd/rebase-merge" ] || why="a rebase or git am in progress"
	[ "$head" = "$head_was" ] || why=${why:-"commits that were not exported ($(g log --oneline -1 HEAD))"}
	[ "$had" != rebuilding ] || why=""
	if [ -n "$why" ]; then
		die "$SRC has $why: work that patches/ does not have.  Commit it in $SRC and run make export (docs/running.md, \"Iterating on a patch\"), or throw it away: KS_RESET_TREE=1 make ..."
	fi
	if [ "$had" = "$hash" ] && [ "$(git -C "$CACHE/linux-base" rev-parse HEAD 2>/dev/null)" = "$(g rev-parse base-fixed)" ]; then
		log "tree up to date with patches/ ($(g rev-list --count base..HEAD) patches)"
		exit 0
	fi
fi

echo "rebuilding -" >"$STAMP"
g am --abort >/dev/null 2>&1 || true
g checkout -q -f -B main base
g clean -q -fdx
for t in $(g tag -l 'grp/*'); do g tag -d "$t" >/dev/null; done

prev=""
g tag -f base-fixed base >/dev/null
while read -r p; do
	p=${p%%#*}
	p=${p//[[:space:]]/}
	[ -n "$p" ] || continue
	[ -f "$PATCHES/$p" ] || die "bases/$BASE/patches/series names $p, which does not exist"
	grp=$(dirname "$p")
	if [ -n "$prev" ] && [ "$grp" != "$prev" ]; then
		g tag -f "grp/$prev" HEAD >/dev/null
		[ "$prev" = base ] && g tag -f base-fixed HEAD >/dev/null
	fi
	prev=$grp
	if ! g am -q --keep-cr --committer-date-is-author-date "$PATCHES/$p" >/dev/null 2>"$CACHE/am.log"; then
		echo "error: patch $p does not apply:" >&2
		g am --show-current-patch=diff >/dev/null 2>&1 || true
		g apply --check -v "$PATCHES/$p" 2>&1 | grep -E '^(error|Checking|Hunk|patch failed)' | head -20 >&2 || true
		cat "$CACHE/am.log" >&2
		g am --abort >/dev/null 2>&1 || true
		exit 1
	fi
done <"$PATCHES/series"
if [ -n "$prev" ]; then
	g tag -f "grp/$prev" HEAD >/dev/null
	[ "$prev" = base ] && g tag -f base-fixed HEAD >/dev/null
fi
top_tags HEAD
echo "$hash $(g rev-parse HEAD)" >"$STAMP"

worktree_at "$CACHE/linux-base" base-fixed
fast=""
! beyond_upstream || fast=", and $(g rev-list --count patched..fast) beyond upstream at tag fast"
log "tree ready: $(g rev-list --count base..patched) patches on the base ($(g rev-list --count base..base-fixed) base fixes)$fast"
