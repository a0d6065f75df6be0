#!/usr/bin/env bash
# check.sh [checkpatch|bisect|all]
# checkpatch: scripts/checkpatch.pl --strict on every patch in the base's
# patches/series (no errors or warnings allowed), and the neutral author on
# each.
# UNKNOWN_COMMIT_ID is ignored: the tree is the base alone, without
# upstream's history, so checkpatch cannot look up the upstream commits
# that the changelogs name.  bisect: build arch/x86/kvm at every
# commit of the series (after the base fixes), with KVM_AMD + KVM_INTEL,
# without KVM_INTEL and without KVM_AMD, warnings as errors.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
what=${1:-all}
[ -d "$SRC/.git" ] || die "no tree at $SRC (run scripts/mktree.sh)"
# bisect adds and checks out a worktree of the tree: exclusive
case $what in
checkpatch) lock_cache -s tree ;;
*) lock_cache -x tree ;;
esac

checkpatch() {
	local p bad=0 n=0
	while read -r p; do
		case $p in '#'* | '') continue ;; esac
		n=$((n + 1))
		# No person in the repo's patches: make series adds the submitter.
		if ! grep -qx 'From: kvm-series <kvm-series@invalid>' "$PATCHES/$p" ||
			grep -q '^Signed-off-by:' "$PATCHES/$p"; then
			echo "$p: author must be kvm-series <kvm-series@invalid>, with no Signed-off-by (make series adds yours)" >&2
			bad=$((bad + 1))
			continue
		fi
		if ! PATH=/usr/bin:$PATH "$SRC/scripts/checkpatch.pl" --strict --no-signoff -q --terse \
			--ignore FILE_PATH_CHANGES,UNKNOWN_COMMIT_ID "$PATCHES/$p"; then
			bad=$((bad + 1))
		fi
	done <"$PATCHES/series"
	log "checkpatch --strict: $n patches, $bad with findings"
	[ "$bad" = 0 ]
}

bisect() {
	local wt=$CACHE/linux-bisect c cfg out top=patched
	# the groups after tests/ (tag fast) are part of the series too
	! beyond_upstream || top=fast
	[ -d "$wt" ] || git -C "$SRC" worktree add -q --detach "$wt" base-fixed
	for cfg in all nointel noamd; do
		out=$BUILD/bisect-$cfg
		mkdir -p "$out"
		git -C "$wt" checkout -q -f --detach base-fixed
		make -s -C "$wt" O="$out" CC="ccache gcc" tinyconfig >/dev/null
		(cd "$out" && "$wt/scripts/kconfig/merge_config.sh" -m -O "$out" .config "$TOP/config/kvm-test.config" >/dev/null)
		case $cfg in
		nointel) echo "# CONFIG_KVM_INTEL is not set" >>"$out/.config" ;;
		noamd) echo "# CONFIG_KVM_AMD is not set" >>"$out/.config" ;;
		esac
		make -s -C "$wt" O="$out" CC="ccache gcc" olddefconfig >/dev/null
		case $cfg in
		nointel) ! grep -q '^CONFIG_KVM_INTEL=' "$out/.config" || die "KVM_INTEL still set" ;;
		noamd) ! grep -q '^CONFIG_KVM_AMD=' "$out/.config" || die "KVM_AMD still set" ;;
		esac
		make -s -C "$wt" O="$out" CC="ccache gcc" -j"$(nproc)" modules_prepare >/dev/null
		for c in $(git -C "$SRC" rev-list --reverse "base-fixed..$top"); do
			git -C "$wt" checkout -q -f --detach "$c"
			log "bisect[$cfg] $(git -C "$wt" log -1 --format=%s)"
			make -s -C "$wt" O="$out" CC="ccache gcc" -j"$(nproc)" KCFLAGS=-Werror arch/x86/kvm/ ||
				die "build fails at $(git -C "$wt" log -1 --format='%h %s') ($cfg)"
		done
	done
	log "bisect: every commit of the series builds arch/x86/kvm (all, nointel, noamd)"
}

case $what in
checkpatch) checkpatch ;;
bisect) bisect ;;
all) checkpatch; bisect ;;
*) die "unknown check '$what'" ;;
esac
