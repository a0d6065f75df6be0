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

# The patched modules are saved first and put back after each build, so
# that a failed or interrupted run never leaves mutant code in the tree or
# in $BUILD/patched.
kos=(arch/x86/kvm/kvm.ko arch/x86/kvm/kvm-amd.ko arch/x86/kvm/kvm-intel.ko)
save=$CACHE/mutants/patched-modules
mkdir -p "$save"
for k in "${kos[@]}"; do cp "$BUILD/patched/$k" "$save/"; done
applied=""
restore() {
	local k
	if [ -n "$applied" ]; then
		git -C "$SRC" apply -R "$applied" || die "could not take $applied back out of $SRC"
		applied=""
	fi
	for k in "${kos[@]}"; do cp "$save/$(basename "$k")" "$BUILD/patched/$k"; done
	# the objects are the mutant's: rebuild them from the restored tree
	"$TOP/scripts/build.sh" patched kvm >/dev/null 2>&1 || die "rebuilding the patched modules failed"
}
trap 'restore' EXIT
trap 'exit 130' INT TERM
listed=$(cat "$TOP/tests/list" "$TOP/tests/list.intel" | grep -v '^#' | cut -d'|' -f1 | tr -d ' ')

table=()
for m in "${all[@]}"; do
	name=$(basename "$m" .diff)
	plat=$(sed -n 's/^Platform: *//p' "$m" | head -1)
	tests=$(sed -n 's/^Tests: *//p' "$m" | head -1)
	case $plat in amd | intel) ;; *) die "$m: 'Platform:' must be amd or intel" ;; esac
	[ -n "$tests" ] || die "$m: no 'Tests:' line"
	for t in $tests; do
		grep -qxF "$t" <<<"$listed" || die "$m: test '$t' is in neither tests/list nor tests/list.intel"
	done
	t0=$(date +%s)
	log "mutant $name ($plat): $tests"
	git -C "$SRC" apply --check "$m" 2>/dev/null || die "$m does not apply to the patched tree"
	git -C "$SRC" apply "$m"
	applied=$m
	"$TOP/scripts/build.sh" patched kvm >"$out/$name.build.log" 2>&1 ||
		die "$name does not build (see $out/$name.build.log)"
	changed=0
	for k in "${kos[@]}"; do
		cmp -s "$BUILD/patched/$k" "$save/$(basename "$k")" || changed=1
		cp "$BUILD/patched/$k" "$mut/arch/x86/kvm/"
	done
	[ "$changed" = 1 ] || die "$name: the rebuilt modules are the patched ones (build did not relink?)"
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
		# name and status (FAIL, HANG, STALL, SPLAT, ...): a stall or a
		# module that did not load is not a catch; read the TAP
		verdict="killed by $(grep '^not ok' "$out/$name.tap" | awk '{ print $4 " (" $6 ")" }' | paste -sd' ')"
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
