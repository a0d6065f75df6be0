#!/usr/bin/env bash
# build.sh VARIANT [kernel|selftests|kvm|migrate|all], VARIANT: base, patched,
# fast, base-perf, patched-perf, fast-perf, dN-perf, probe-perf,
# base-lockstat, patched-lockstat, patched-gcov, fast-gcov, stable,
# stable-GROUP or unheld (lib.sh)
# Build the kernel (bzImage + modules) and the KVM selftests for one variant
# into $BUILD/<variant>, out of tree, with ccache, and the guest of the
# live-migration check (migrate/).  "kvm" rebuilds only arch/x86/kvm (fast
# iteration).
set -euo pipefail
. "$(dirname "$0")/lib.sh"
need make gcc ccache flex bison bc git cpio gzip
variant=${1:?usage: build.sh VARIANT [kernel|selftests|kvm|migrate|all]}
what=${2:-all}
lock_cache -s tree
case $variant in fast | fast-*)
	beyond_upstream || { log "$variant: bases/$BASE/patches has no group after tests/: nothing to build"; exit 0; } ;;
esac
rev=$(variant_rev "$variant")
lock_cache -x "build-$variant"
src=$SRC
case $variant in base*) src=$CACHE/linux-base ;; esac
# stable, stable-GROUP, unheld: a worktree of its own at grp/stable,
# alone/GROUP, unheld
case $variant in stable | stable-* | unheld)
	src=$CACHE/linux-$variant
	worktree_at "$src" "$rev" ;;
esac
# fast, fast-perf, fast-gcov: the worktree linux-fast at tag fast (every
# group, those beyond upstream included); dN-perf: the worktree
# linux-upstream, N patches after grp/tests
case $variant in fast | fast-perf | fast-gcov)
	lock_cache -x fast-wt
	src=$CACHE/linux-fast
	# a mutant run has a mutant applied there: leave it as it is
	if [ "${KS_TREE_LOCKED:-0}" != 1 ] || [ ! -e "$src/.git" ]; then worktree_at "$src" "$rev"; fi ;;
d[1-9]-perf)
	lock_cache -x upstream-wt
	src=$CACHE/linux-upstream
	worktree_at "$src" "$rev" ;;
probe-perf)
	# patched with KS_PROBE applied, in the same worktree (its build
	# stamp says "+edits"; the diff is kept beside it as .ks-probe)
	[ -f "${KS_PROBE:-}" ] || die "probe-perf: KS_PROBE must name a diff to apply to the patched tree (e.g. a file of mutants/)"
	KS_PROBE=$(realpath "$KS_PROBE")
	lock_cache -x upstream-wt
	src=$CACHE/linux-upstream
	worktree_at "$src" "$rev"
	git -C "$src" apply "$KS_PROBE" || die "KS_PROBE $KS_PROBE does not apply to the patched tree" ;;
esac
[ -d "$src/.git" ] || [ -f "$src/.git" ] || die "no tree at $src (run scripts/mktree.sh)"
want=$(git -C "$SRC" rev-parse "$rev")
have=$(git -C "$src" rev-parse HEAD)
case $variant in
base* | stable* | unheld | fast* | d[1-9]-perf | probe-perf) [ "$have" = "$want" ] || die "$src is not at $rev (run scripts/mktree.sh)" ;;
*) [ "$(git -C "$src" rev-list --count "$rev..HEAD")" = 0 ] || log "note: $src has commits after tag $rev" ;;
esac
# $SRC checked out at the groups beyond upstream (to work on them) is not
# the patched kernel
case $variant in patched* | mutant-amd | mutant-intel)
	! beyond_upstream || ! git -C "$src" merge-base --is-ancestor fast HEAD ||
		die "$src is checked out at tag fast (the groups after tests/): the patched kernel is tag patched (git -C $src checkout main, after make export)" ;;
esac
out=$BUILD/$variant
mkdir -p "$out"
jobs=$(nproc)
mk() { make -s -C "$src" O="$out" -j"$jobs" CC="ccache gcc" "$@"; }
# The coverage kernel profiles arch/x86/kvm alone: its modules are built
# again with GCOV_PROFILE=y (a make variable of the command line reaches
# every Makefile of the M= directory, and nothing outside it).
gcov=()
case $variant in *-gcov) gcov=(GCOV_PROFILE=y) ;; esac
# arch/x86/kvm alone, as an M= build into the variant's build folder: MO=
# says where since Linux 6.13 (without it 7.3 writes the objects into the
# source tree); older kernels ignore it and write under O= as before.
kvm_m=(M=arch/x86/kvm MO="$out/arch/x86/kvm")

config() {
	local frags=("$TOP/config/kvm-test.config") miss
	# a base's own additions (bases/BASE/kvm-test.config), if it has any
	[ ! -f "$BDIR/kvm-test.config" ] || frags+=("$BDIR/kvm-test.config")
	case $variant in
	*-perf) frags+=("$TOP/config/perf.config") ;;
	*-lockstat) frags+=("$TOP/config/perf.config" "$TOP/config/lockstat.config") ;;
	*-gcov) frags+=("$TOP/config/gcov.config") ;;
	esac
	if [ -f "$out/.config" ] && cat "${frags[@]}" | cmp -s - "$out/.config.frag"; then
		return
	fi
	log "$variant: configuring (tinyconfig + ${frags[*]#"$TOP/"})"
	mk tinyconfig >/dev/null
	(cd "$out" && "$src/scripts/kconfig/merge_config.sh" -m -O "$out" .config "${frags[@]}" >/dev/null)
	mk olddefconfig >/dev/null
	miss=$(cat "${frags[@]}" | grep -E '^CONFIG_[A-Z0-9_]+=[ym]' | while read -r l; do
		grep -qx "$l" "$out/.config" || echo "$l"; done)
	case $variant in *-perf | *-lockstat)
		# what perf.config turns off is not missing
		miss=$(echo "$miss" | grep -v -F -f <(sed -n 's/^# \(CONFIG_[A-Z0-9_]*\) is not set$/\1=/p' \
			"$TOP/config/perf.config") || true)
		! grep -q '^CONFIG_PROVE_LOCKING=y' "$out/.config" || die "$variant kernel still has PROVE_LOCKING" ;;
	esac
	[ -z "$miss" ] || die "config fragment lines not taken (dependencies?): $miss"
	cat "${frags[@]}" >"$out/.config.frag"
}

# The source revision of what was built ("+edits" with uncommitted changes),
# into $out/.ks-rev: run-tests.sh keeps it with the results.
stamp_rev() {
	local r
	r=$(git -C "$src" rev-parse --short=12 HEAD)
	[ -z "$(git -C "$src" status --porcelain --untracked-files=no)" ] || r="$r+edits"
	echo "$r" >"$out/.ks-rev"
}

kernel() {
	config
	if [ "$variant" = probe-perf ]; then
		cp "$KS_PROBE" "$out/.ks-probe"
		realpath --relative-to="$TOP" "$KS_PROBE" >"$out/.ks-probe-name"
	fi
	log "$variant: building kernel"
	mk bzImage modules
	[ ${#gcov[@]} = 0 ] || mk "${kvm_m[@]}" "${gcov[@]}" modules
	mk headers >/dev/null
	stamp_rev
}

selftests() {
	log "$variant: building KVM selftests"
	[ -d "$out/usr/include/linux" ] || mk headers >/dev/null
	make -s -C "$src/tools/testing/selftests/kvm" -j"$jobs" CC="ccache gcc" \
		OUTPUT="$out/selftests" KHDR_INCLUDES="-isystem $out/usr/include" \
		>"$out/selftests.log" 2>&1 || { tail -30 "$out/selftests.log" >&2; die "selftests build failed"; }
	cp "$src/tools/testing/selftests/kvm/$ST_ARCH"/nx_huge_pages*_test.sh "$out/selftests/$ST_ARCH/"
}

# The live-migration check's guest (guest/migrate/l1-migrate.sh): pagecheck,
# static, as the /init of an initramfs for this variant's kernel.
migrate() {
	log "$variant: building migrate/pagecheck and its initramfs"
	mkdir -p "$out/migrate/root"
	gcc -O2 -Wall -Wextra -Werror -static -pthread -o "$out/migrate/root/pagecheck" "$TOP/guest/migrate/pagecheck.c"
	# a new file, renamed into place: a VM may be reading the old one
	(cd "$out/migrate/root" && echo pagecheck | cpio -o -H newc --quiet) | gzip -9 >"$out/migrate/initrd.gz.new"
	mv "$out/migrate/initrd.gz.new" "$out/migrate/initrd.gz"
}

case $what in
kernel) kernel ;;
selftests) selftests ;;
kvm)
	# only arch/x86/kvm's modules; the kernel must have been built (kernel)
	[ -f "$out/Module.symvers" ] || die "no $variant kernel build in $out to build the KVM modules against (build.sh $variant kernel)"
	config
	mk "${kvm_m[@]}" ${gcov[@]+"${gcov[@]}"} modules || die "the KVM module build of $variant failed (errors above)"
	# a mutant's build (mutants.sh) is copied away and undone at once
	[ "${KS_TREE_LOCKED:-0}" = 1 ] || stamp_rev ;;
migrate) migrate ;;
all) kernel; selftests; migrate ;;
*) die "unknown target '$what'" ;;
esac
