#!/usr/bin/env bash
# build.sh base|patched [kernel|selftests|kvm|all]
# Build the kernel (bzImage + modules) and the KVM selftests for one variant
# into $BUILD/<variant>, out of tree, with ccache.  "kvm" rebuilds only
# arch/x86/kvm (fast iteration).
set -euo pipefail
. "$(dirname "$0")/lib.sh"
need make gcc ccache flex bison bc
variant=${1:?usage: build.sh base|patched [kernel|selftests|kvm|all]}
what=${2:-all}
rev=$(variant_rev "$variant")
src=$SRC
[ "$variant" = base ] && src=$CACHE/linux-base
[ -d "$src/.git" ] || [ -f "$src/.git" ] || die "no tree at $src (run scripts/mktree.sh)"
want=$(git -C "$SRC" rev-parse "$rev")
have=$(git -C "$src" rev-parse HEAD)
[ "$variant" = base ] && [ "$have" != "$want" ] && die "$src is not at $rev (run scripts/mktree.sh)"
[ "$variant" = patched ] && [ "$(git -C "$src" rev-list --count "$rev..HEAD")" != 0 ] &&
	log "note: $src has commits after tag $rev"
out=$BUILD/$variant
mkdir -p "$out"
jobs=$(nproc)
mk() { make -s -C "$src" O="$out" -j"$jobs" CC="ccache gcc" "$@"; }

config() {
	local frag=$TOP/config/kvm-test.config
	if [ -f "$out/.config" ] && [ "$out/.config.frag" -nt "$frag" ] &&
	   cmp -s "$frag" "$out/.config.frag"; then
		return
	fi
	log "$variant: configuring (tinyconfig + config/kvm-test.config)"
	mk tinyconfig >/dev/null
	(cd "$out" && KCONFIG_CONFIG=.config "$src/scripts/kconfig/merge_config.sh" -m -O "$out" .config "$frag" >/dev/null)
	mk olddefconfig >/dev/null
	local miss
	miss=$(grep -E '^CONFIG_[A-Z0-9_]+=[ym]' "$frag" | while read -r l; do
		grep -qx "$l" "$out/.config" || echo "$l"; done)
	[ -z "$miss" ] || die "config fragment lines not taken (dependencies?): $miss"
	cp "$frag" "$out/.config.frag"
}

kernel() {
	config
	log "$variant: building kernel"
	mk bzImage modules
	mk headers >/dev/null
}

selftests() {
	log "$variant: building KVM selftests"
	[ -d "$out/usr/include/linux" ] || mk headers >/dev/null
	make -s -C "$src/tools/testing/selftests/kvm" -j"$jobs" CC="ccache gcc" \
		OUTPUT="$out/selftests" KHDR_INCLUDES="-isystem $out/usr/include" \
		>"$out/selftests.log" 2>&1 || { tail -30 "$out/selftests.log" >&2; die "selftests build failed"; }
	cp "$src/tools/testing/selftests/kvm/x86_64/nx_huge_pages_test.sh" "$out/selftests/x86_64/"
}

case $what in
kernel) kernel ;;
selftests) selftests ;;
kvm) config; mk M=arch/x86/kvm modules 2>/dev/null || mk arch/x86/kvm/ ;;
all) kernel; selftests ;;
*) die "unknown target '$what'" ;;
esac
