#!/usr/bin/env bash
# mutants.sh [REGEX]: check that the tests catch deliberate bugs.  Each
# mutants/NAME.diff is a small change to the patched tree with a header
# naming the platform (amd or intel) and the tests (tests/list or
# tests/list.intel names) that must catch it:
#   Mutant: what is broken
#   Platform: intel
#   Tests: name name...
#   Survives: why the tests cannot catch it (optional, one line: a mutant
#   that is equivalent or that no test on these platforms can observe)
# The two platforms' mutants run side by side (one emulator per host core),
# each platform's one at a time: under a lock on the tree, apply the mutant
# to the patched tree, rebuild arch/x86/kvm, copy the modules to the
# platform's mutant kernel ($BUILD/mutant-<platform>: the patched kernel
# image and selftests with these modules), restore the tree and the patched
# modules; then, without the lock, run the named tests on it.  A mutant is
# killed when a test fails; it survives when they all pass.  Prints a
# table: mutant, platform, what is broken, tests, killed/survived (with
# the Survives: reason), time; a run of the whole set also writes it to
# docs/results/mutants.md.  Logs stay in $KS_CACHE/mutants/NAME.*.
# mutants.sh -n [REGEX] checks the headers only (platform, tests that exist
# in the lists) and that each mutant applies to the patched tree, and exits:
# part of make check.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
check_only=0
[ "${1:-}" != -n ] || { check_only=1; shift; }
filter=${1:-.}
[ -d "$SRC/.git" ] || die "no tree at $SRC (run scripts/mktree.sh)"
[ "$check_only" = 1 ] || [ -f "$BUILD/patched/arch/x86/boot/bzImage" ] || die "no patched kernel (run make build)"
mapfile -t all < <(find "$TOP/mutants" -name '*.diff' | sort | grep -E -- "$filter" || true)
[ ${#all[@]} -gt 0 ] || die "no mutant matches '$filter'"
out=$CACHE/mutants
mkdir -p "$out"
lock=$CACHE/.lock.tree  # lib.sh, lock_cache
listed=$(cat "$TOP/tests/list" "$TOP/tests/list.intel" | grep -v '^#' | cut -d'|' -f1 | tr -d ' ')
kos=(arch/x86/kvm/kvm.ko arch/x86/kvm/kvm-amd.ko arch/x86/kvm/kvm-intel.ko)

# Check every header before anything runs.
declare -A plat_of
for m in "${all[@]}"; do
	plat=$(sed -n 's/^Platform: *//p' "$m" | head -1)
	tests=$(sed -n 's/^Tests: *//p' "$m" | head -1)
	case $plat in amd | intel) ;; *) die "$m: 'Platform:' must be amd or intel" ;; esac
	[ -n "$tests" ] || die "$m: no 'Tests:' line"
	for t in $tests; do
		grep -qxF "$t" <<<"$listed" || die "$m: test '$t' is in neither tests/list nor tests/list.intel"
	done
	flock "$lock" git -C "$SRC" apply --check "$m" 2>/dev/null || die "$m does not apply to the patched tree"
	plat_of[$m]=$plat
done
if [ "$check_only" = 1 ]; then
	log "mutants: ${#all[@]} headers fine, each applies to the patched tree"
	exit 0
fi

# The patched modules are saved first and put back after each build, so
# that a failed or interrupted run never leaves mutant code in the tree or
# in $BUILD/patched.
# Under the lock: another mutants.sh may be half way through a build.
# The tree must be clean (no mutant left by a killed run).
save=$out/patched-modules
mkdir -p "$save"
(
	flock -n 9 || { log "waiting for $lock: another job makes or builds from the tree"; flock 9; }
	[ -z "$(git -C "$SRC" status --porcelain --untracked-files=no)" ] ||
		die "$SRC has uncommitted changes; a mutant run needs a clean tree"
	for ko in "${kos[@]}"; do cp "$BUILD/patched/$ko" "$save/"; done
) 9>"$lock"

# build_mutant FILE DIR: with the lock held, the mutant's modules into DIR.
build_mutant() {
	local m=$1 dir=$2 name k changed=0 rc=0
	name=$(basename "$m" .diff)
	git -C "$SRC" apply "$m" || return 1
	# killed half way (Ctrl-C): the tree and the patched modules go back
	trap 'git -C "$SRC" apply -R "$m"; for k in "${kos[@]}"; do cp "$save/${k##*/}" "$BUILD/patched/$k"; done' EXIT
	KS_TREE_LOCKED=1 "$TOP/scripts/build.sh" patched kvm >"$out/$name.build.log" 2>&1 || rc=$?
	for k in "${kos[@]}"; do
		cmp -s "$BUILD/patched/$k" "$save/$(basename "$k")" || changed=1
		cp "$BUILD/patched/$k" "$dir/arch/x86/kvm/"
		cp "$save/$(basename "$k")" "$BUILD/patched/$k"
	done
	trap - EXIT
	git -C "$SRC" apply -R "$m" || die "could not take $m back out of $SRC"
	# the objects are the mutant's: rebuild them from the restored tree
	KS_TREE_LOCKED=1 "$TOP/scripts/build.sh" patched kvm >/dev/null 2>&1 || die "rebuilding the patched modules failed"
	[ "$rc" = 0 ] || { log "$name does not build (see $out/$name.build.log)"; return 1; }
	[ "$changed" = 1 ] || { log "$name: the rebuilt modules are the patched ones"; return 1; }
}

# run_platform PLAT: every selected mutant of PLAT, one after the other;
# one table row per mutant into $out/table.PLAT.
run_platform() {
	local plat=$1 var=mutant-$1 mut m name tests t0 regex rc summary verdict why
	mut=$BUILD/$var
	rm -rf "$mut"
	mkdir -p "$mut/arch/x86/boot" "$mut/arch/x86/kvm" "$mut/virt/lib"
	ln -s "$BUILD/patched/arch/x86/boot/bzImage" "$mut/arch/x86/boot/bzImage"
	ln -s "$BUILD/patched/selftests" "$mut/selftests"
	ln -s "$BUILD/patched/migrate" "$mut/migrate"
	cp "$BUILD/patched/.config" "$mut/.config"
	cp "$BUILD/patched/virt/lib/irqbypass.ko" "$mut/virt/lib/"
	: >"$out/table.$plat"
	for m in "${all[@]}"; do
		[ "${plat_of[$m]}" = "$plat" ] || continue
		name=$(basename "$m" .diff)
		tests=$(sed -n 's/^Tests: *//p' "$m" | head -1)
		t0=$(date +%s)
		log "mutant $name ($plat): $tests"
		if ! (flock 9 && build_mutant "$m" "$mut") 9>"$lock"; then
			verdict="error (no build, see $out/$name.build.log)"
		else
			regex=$(echo "$tests" | tr -s ' ' '\n' | sed 's/[.]/\\./g' | paste -sd'|')
			rc=0
			"$TOP/scripts/run-tests.sh" -k "$var" -p "$plat" -f "$regex" \
				>"$out/$name.tap" 2>"$out/$name.log" || rc=$?
			rm -rf "${out:?}/$name"
			cp -r "$CACHE/results/$var" "$out/$name"
			summary=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$out/$name.tap" | tail -1 || true)
			if [ -z "$summary" ]; then
				verdict="error (rc $rc, see $out/$name.log)"
			elif [ "$(echo "$summary" | awk '{ print $3 }')" -gt 0 ]; then
				# name and status (FAIL, HANG, STALL, SPLAT, ...): a
				# stall or a module that did not load is not a catch
				verdict="killed by $(grep '^not ok' "$out/$name.tap" | grep -v ' # TODO ' | awk '{ sub(/,$/, "", $6); print $4 " (" $6 ")" }' | paste -sd' ')"
			else
				verdict="SURVIVED"
			fi
		fi
		why=$(sed -n 's/^Survives: *//p' "$m" | head -1 | tr -d '|')
		case $verdict in
		SURVIVED) [ -z "$why" ] || verdict="survived (expected: $why)" ;;
		killed*) [ -z "$why" ] || verdict="$verdict, though its header expects it to survive" ;;
		esac
		printf '| %s | %s | %s | %s | %s | %d s |\n' "$name" "$plat" \
			"$(sed -n 's/^Mutant: *//p' "$m" | head -1 | tr -d '|')" "$tests" "$verdict" \
			$(($(date +%s) - t0)) >>"$out/table.$plat"
		log "mutant $name: $verdict"
	done
}

pids=()
trap 'kill "${pids[@]}" 2>/dev/null; exit 130' INT TERM
t0=$(date +%s)
for plat in amd intel; do
	grep -qx "$plat" < <(printf '%s\n' "${plat_of[@]}") || continue
	run_platform "$plat" &
	pids+=($!)
done
rc=0
for p in "${pids[@]}"; do wait "$p" || rc=1; done
table() {
	local m
	echo "| mutant | platform | what is broken | tests | result | time |"
	echo "| --- | --- | --- | --- | --- | --- |"
	for m in "${all[@]}"; do
		grep -F "| $(basename "$m" .diff) |" "$out/table.${plat_of[$m]}" || true
	done
}
table >"$out/table"
killed=$(grep -c '| killed by' "$out/table" || true)
unexpected=$(grep -c '| SURVIVED |\|| error' "$out/table" || true)
summary="${#all[@]} mutants: $killed killed, $((${#all[@]} - killed - unexpected)) survived as their headers expect, $unexpected survived unexpectedly or did not run; $((($(date +%s) - t0) / 60)) min in all"
echo
cat "$out/table"
echo "$summary"
if [ "$filter" = . ]; then
	mkdir -p "$TOP/docs/results"
	{
		echo "# Mutants: the whole set"
		echo
		echo "Generated by \`make mutants\` (scripts/mutants.sh) on $(date -u +%Y-%m-%d), patched tree $(git -C "$SRC" rev-parse --short HEAD); the mutants are mutants/*.diff (format: mutants/README.md)."
		echo
		echo "$summary."
		echo
		cat "$out/table"
	} >"$TOP/docs/results/mutants.md"
	log "written to docs/results/mutants.md"
fi
[ "$unexpected" = 0 ] || rc=1
exit "$rc"
