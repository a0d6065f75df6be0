#!/usr/bin/env bash
# mutants.sh [REGEX]: check that the tests catch deliberate bugs.  Each
# mutants/NAME.diff is a small change to the patched tree (arch/x86/kvm)
# with a header naming the platform (amd or intel) and the tests
# (tests/list or tests/list.intel names) that must catch it:
#   Mutant: what is broken
#   Platform: intel
#   Tests: name name...
# One at a time: apply it to the patched tree, rebuild arch/x86/kvm, copy
# the modules to the "mutant" kernel ($BUILD/mutant: the patched kernel
# image and selftests with these modules), restore the tree and its
# modules, and run the named tests on the mutant.  A mutant is killed
# when a test fails; it survives when they all pass.  Prints a table:
# mutant, platform, tests, killed/survived, time.  Logs stay in
# $KS_CACHE/mutants/NAME/.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
filter=${1:-.}
[ -d "$SRC/.git" ] || die "no tree at $SRC (run scripts/mktree.sh)"
[ -f "$BUILD/patched/arch/x86/boot/bzImage" ] || die "no patched kernel (run make build)"
[ -z "$(git -C "$SRC" status --porcelain --untracked-files=no)" ] ||
	die "$SRC has uncommitted changes; a mutant run needs a clean tree"
mapfile -t all < <(find "$TOP/mutants" -name '*.diff' | sort | grep -E -- "$filter" || true)
[ ${#all[@]} -gt 0 ] || die "no mutant matches '$filter'"
out=$CACHE/mutants
mkdir -p "$out"
mut=$BUILD/mutant
rm -rf "$mut"
mkdir -p "$mut/arch/x86/boot" "$mut/arch/x86/kvm" "$mut/virt/lib"
ln -s "$BUILD/patched/arch/x86/boot/bzImage" "$mut/arch/x86/boot/bzImage"
ln -s "$BUILD/patched/selftests" "$mut/selftests"
cp "$BUILD/patched/.config" "$mut/.config"
cp "$BUILD/patched/virt/lib/irqbypass.ko" "$mut/virt/lib/"

restore() {
	git -C "$SRC" checkout -q -- arch/x86/kvm
	"$TOP/scripts/build.sh" patched kvm >/dev/null 2>&1 || log "warning: rebuilding the patched modules failed"
}
trap restore EXIT

table=()
for m in "${all[@]}"; do
	name=$(basename "$m" .diff)
	plat=$(sed -n 's/^Platform: *//p' "$m" | head -1)
	tests=$(sed -n 's/^Tests: *//p' "$m" | head -1)
	case $plat in amd | intel) ;; *) die "$m: 'Platform:' must be amd or intel" ;; esac
	[ -n "$tests" ] || die "$m: no 'Tests:' line"
	t0=$(date +%s)
	log "mutant $name ($plat): $tests"
	git -C "$SRC" apply --check "$m" 2>/dev/null || die "$m does not apply to the patched tree"
	git -C "$SRC" apply "$m"
	"$TOP/scripts/build.sh" patched kvm >"$out/$name.build.log" 2>&1 ||
		{ restore; die "$name does not build (see $out/$name.build.log)"; }
	cp "$BUILD/patched/arch/x86/kvm/"{kvm,kvm-amd,kvm-intel}.ko "$mut/arch/x86/kvm/"
	restore
	regex=$(echo "$tests" | tr -s ' ' '\n' | sed 's/[.]/\\./g' | paste -sd'|')
	rc=0
	"$TOP/scripts/run-tests.sh" -k mutant -p "$plat" -f "$regex" >"$out/$name.tap" 2>"$out/$name.log" || rc=$?
	rm -rf "${out:?}/$name"
	cp -r "$CACHE/results/mutant" "$out/$name"
	summary=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$out/$name.tap" | tail -1 || true)
	if [ -z "$summary" ]; then
		verdict="error (rc $rc, see $out/$name.log)"
	elif [ "$(echo "$summary" | awk '{ print $3 }')" -gt 0 ]; then
		verdict="killed by $(grep '^not ok' "$out/$name.tap" | awk '{ print $4 }' | paste -sd' ')"
	else
		verdict="SURVIVED"
	fi
	table+=("$(printf '| %s | %s | %s | %s | %d s |' "$name" "$plat" "$tests" "$verdict" $(($(date +%s) - t0)))")
	log "mutant $name: $verdict"
done
echo
echo "| mutant | platform | tests | result | time |"
echo "| --- | --- | --- | --- | --- |"
printf '%s\n' "${table[@]}"
