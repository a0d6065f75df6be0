#!/usr/bin/env bash
# retag.sh [-n]: after a rebase of the tree ($KS_CACHE/BASE/linux: an edited,
# reworded or split commit), move each group's tag (grp/GROUP of
# patches/groups, up to tests/; those after it live on tag fast, see
# mktree.sh) and "patched" to where they belong in HEAD's history.
# A tag whose commit is still in HEAD's history stays.  Otherwise it moves
# to the commit of HEAD's history (after base-fixed) with the subject of
# the commit it tags now; "patched" moves to HEAD.  Stops, changing
# nothing, if a subject is not found or found twice (a group's last commit
# renamed or dropped: tag it by hand, git tag -f grp/GROUP COMMIT).  -n
# prints the moves and changes nothing.  Then: make export.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
dry=0
[ "${1:-}" != -n ] || { dry=1; shift; }
[ $# = 0 ] || die "usage: retag.sh [-n]"
git -C "$SRC" rev-parse -q --verify base-fixed >/dev/null ||
	die "no tree with a base-fixed tag in $SRC (make tree)"
moves=()
beyond=0
old_tests=$(git -C "$SRC" rev-parse -q --verify grp/tests || true)
while read -r g; do
	[ -n "$g" ] || continue
	# the groups after tests/ live on tag fast, not in HEAD's history
	[ "$beyond" = 0 ] || continue
	[ "$g" != tests ] || beyond=1
	t=grp/$g
	# a group with no patch (e.g. a base that needs no fixes) has no tag
	if ! old=$(git -C "$SRC" rev-parse -q --verify "$t^{commit}"); then
		grep -q "^$g/" "$PATCHES/series" || continue
		die "no tag $t in $SRC (make tree)"
	fi
	if git -C "$SRC" merge-base --is-ancestor "$old" HEAD; then
		continue
	fi
	subj=$(git -C "$SRC" log -1 --format=%s "$old")
	new=$(git -C "$SRC" log --format='%H%x09%s' base-fixed..HEAD | awk -F'\t' -v s="$subj" '$2 == s { print $1 }')
	case $(printf '%s' "$new" | grep -c .) in
	1) moves+=("$t $new") ;;
	0) die "$t: no commit of HEAD's history has the subject '$subj' (tag it by hand: git -C $SRC tag -f $t COMMIT)" ;;
	*) die "$t: several commits have the subject '$subj' (tag it by hand: git -C $SRC tag -f $t COMMIT)" ;;
	esac
done < <(sed 's/#.*//; s/[[:space:]]//g' "$PATCHES/groups")
head=$(git -C "$SRC" rev-parse HEAD)
[ "$(git -C "$SRC" rev-parse 'patched^{commit}')" = "$head" ] || moves+=("patched $head")
if [ ${#moves[@]} = 0 ]; then
	log "retag: every tag is in HEAD's history; nothing to move"
	exit 0
fi
for m in "${moves[@]}"; do
	read -r t c <<<"$m"
	log "retag: $t -> $(git -C "$SRC" log -1 --format='%h %s' "$c")"
	[ "$dry" = 1 ] || git -C "$SRC" tag -f "$t" "$c" >/dev/null
done
[ "$dry" = 0 ] || log "retag: -n, nothing changed"
if [ "$dry" = 0 ] && beyond_upstream && ! git -C "$SRC" merge-base --is-ancestor patched fast; then
	log "retag: the groups after tests/ (tag fast) are still on the old stack: rebase them (git -C $SRC rebase --onto patched ${old_tests:0:12} fast, then tag each grp/GROUP and fast at the result, and git checkout main) before make export"
fi
