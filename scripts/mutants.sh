#!/usr/bin/env bash
# mutants.sh [REGEX]: check that the tests catch deliberate bugs.  Each
# mutants/NAME.diff is a small change to the patched tree with a header
# naming the platform (amd or intel) and the tests (tests/list or
# tests/list.intel names) that must catch it:
#   Mutant: what is broken
#   Platform: intel
#   Tests: name name...
#   Variant: fast (optional: a mutant of a group after tests/, applied to
#   the fast tree and run on the fast kernel; default patched)
#   Survives: why the tests cannot catch it (optional, one line: a mutant
#   that is equivalent or that no test on these platforms can observe)
#   Race: why its tests catch it only sometimes (optional, one line: a
#   race that multi-threaded TCG hits in some runs); either verdict is
#   then expected
# The two platforms' mutants run side by side (one emulator per host core),
# each platform's one at a time: under a lock on the tree, apply the mutant
# to the patched tree, rebuild arch/x86/kvm, copy the modules to the
# platform's mutant kernel ($BUILD/mutant-<platform>: the patched kernel
# image and selftests with these modules), restore the tree and the patched
# modules; then, without the lock, run the named tests on it.  A mutant is
# killed when a test fails; it survives when they all pass.  Prints a
# table: mutant, platform, what is broken, tests, killed/survived (with
# the Survives: reason), time; a run of the whole set also writes it to
# RESULTS/mutants.md (base.conf: docs/results for 6.1).  Logs stay in $KS_CACHE/BASE/mutants/NAME.*.
# mutants.sh -n [REGEX] checks the headers only (platform, tests that exist
# in the lists) and that each mutant applies to the patched tree, and exits:
# part of make check.  mutants.sh -r writes RESULTS/mutants.md from the
# last verdict of every mutant ($KS_CACHE/BASE/mutants/row.NAME) without running
# anything: after a run of some mutants, the table of the whole set.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
check_only=0 report_only=0
[ "${1:-}" != -n ] || { check_only=1; shift; }
[ "${1:-}" != -r ] || { report_only=1; shift; }
filter=${1:-.}
[ -d "$SRC/.git" ] || die "no tree at $SRC (run scripts/mktree.sh)"
mapfile -t all < <(find "$MUTANTS" -name '*.diff' | sort | grep -E -- "$filter" || true)
[ ${#all[@]} -gt 0 ] || die "no mutant matches '$filter'"
out=$CACHE/mutants
mkdir -p "$out"
lock=$CACHE/.lock.tree  # lib.sh, lock_cache
listed=$(cat "$TESTS/list" "$TESTS/list.intel" | grep -v '^#' | cut -d'|' -f1 | tr -d ' ')
kos=(arch/x86/kvm/kvm.ko arch/x86/kvm/kvm-amd.ko arch/x86/kvm/kvm-intel.ko)

# tree_of VARIANT: the source tree a mutant of VARIANT is applied to
tree_of() { if [ "$1" = fast ]; then echo "$CACHE/linux-fast"; else echo "$SRC"; fi; }

# Check every header before anything runs.
declare -A plat_of var_of
fast_index=""
for m in "${all[@]}"; do
	plat=$(sed -n 's/^Platform: *//p' "$m" | head -1)
	tests=$(sed -n 's/^Tests: *//p' "$m" | head -1)
	var=$(sed -n 's/^Variant: *//p' "$m" | head -1)
	case $plat in amd | intel) ;; *) die "$m: 'Platform:' must be amd or intel" ;; esac
	case ${var:=patched} in patched) ;; fast) variant_rev fast >/dev/null ;; *) die "$m: 'Variant:' must be fast (or absent: patched)" ;; esac
	[ -n "$tests" ] || die "$m: no 'Tests:' line"
	for t in $tests; do
		grep -qxF "$t" <<<"$listed" || die "$m: test '$t' is in neither tests/list nor tests/list.intel"
	done
	if [ "$var" = fast ]; then
		# against tag fast through an index of its own: no worktree needed
		if [ ! -f "$fast_index" ]; then
			fast_index=$(mktemp)
			trap 'rm -f "$fast_index"' EXIT
			flock "$lock" env GIT_INDEX_FILE="$fast_index" git -C "$SRC" read-tree fast
		fi
		GIT_INDEX_FILE=$fast_index git -C "$SRC" apply --cached --check "$m" 2>/dev/null ||
			die "$m does not apply to the fast tree (tag fast)"
	else
		flock "$lock" git -C "$SRC" apply --check "$m" 2>/dev/null || die "$m does not apply to the patched tree"
	fi
	plat_of[$m]=$plat
	var_of[$m]=$var
done
if [ "$check_only" = 1 ]; then
	log "mutants: ${#all[@]} headers fine, each applies to its tree (patched, or fast with 'Variant: fast')"
	exit 0
fi
mapfile -t variants < <(printf '%s\n' "${var_of[@]}" | sort -ru)
for var in "${variants[@]}"; do
	[ -f "$BUILD/$var/arch/x86/boot/bzImage" ] || die "no $var kernel (run make build, and for fast: scripts/build.sh fast all)"
done
# unexpected: how many rows of $out/table are not a verdict their mutant's
# header allows (survived without a reason, killed despite one,
# inconclusive, not run)
unexpected() {
	grep -c '| SURVIVED |\|| error\|| inconclusive\|UNEXPECTED\|| not run |' "$out/table" || true
}
# report: the table of the selected mutants' last verdicts into $out/table,
# and its summary
report() {
	local m name row killed expected
	{
		echo "| mutant | platform | what is broken | tests | result | time |"
		echo "| --- | --- | --- | --- | --- | --- |"
		for m in "${all[@]}"; do
			name=$(basename "$m" .diff)
			row=$(cat "$out/row.$name" 2>/dev/null || echo "| $name | ${plat_of[$m]} | | | not run | |")
			echo "$row"
		done
	} >"$out/table"
	killed=$(grep -c '| killed by' "$out/table" || true)
	expected=$(grep -c '| survived (expected' "$out/table" || true)
	echo "${#all[@]} mutants: $killed killed, $expected survived as their headers expect, $(unexpected) unexpected (survived without a reason, killed despite one, inconclusive or not run)"
}
write_doc() { # SUMMARY
	local repo
	# the state of the repo before this page is rewritten
	repo=$(git -C "$TOP" rev-parse --short HEAD)
	if [ -n "$(git -C "$TOP" status --porcelain -- . ":!$RESULTS/mutants.md")" ]; then
		repo="$repo with uncommitted changes"
	fi
	mkdir -p "$TOP/$RESULTS"
	{
		echo "# Mutants: the whole set"
		echo
		echo "Generated by scripts/mutants.sh on $(date -u +%Y-%m-%d) from each mutant's last run (its time in the last column; \`make mutants\` runs them all), patched tree $(git -C "$SRC" rev-parse --short HEAD), repo $repo; the mutants are mutants/*.diff (format: mutants/README.md)."
		echo
		if [ -s "$out/stamp" ]; then
			echo "The last run of the whole set (lib.sh, stamp):"
			echo
			sed 's/^/- /' "$out/stamp"
			echo
		fi
		echo "$1."
		echo
		cat "$out/table"
	} >"$TOP/$RESULTS/mutants.md"
	log "written to $RESULTS/mutants.md"
}
if [ "$report_only" = 1 ]; then
	[ "$filter" = . ] || die "-r reports the whole set: no REGEX"
	summary=$(report)
	cat "$out/table"
	echo "$summary"
	write_doc "$summary"
	exit 0
fi

# The modules of each variant (patched, fast) are saved first and put back
# after each build, so that a failed or interrupted run never leaves mutant
# code in a tree or in $BUILD/VARIANT.
# Under the lock: another mutants.sh may be half way through a build.
# The trees must be clean (no mutant left by a killed run).
(
	flock -n 9 || { log "waiting for $lock: another job makes or builds from the tree"; flock 9; }
	for var in "${variants[@]}"; do
		t=$(tree_of "$var")
		[ -z "$(git -C "$t" status --porcelain --untracked-files=no)" ] ||
			die "$t has uncommitted changes; a mutant run needs a clean tree"
		mkdir -p "$out/$var-modules"
		for ko in "${kos[@]}"; do cp "$BUILD/$var/$ko" "$out/$var-modules/"; done
	done
) 9>"$lock"

# build_mutant FILE DIR VARIANT: with the lock held, the mutant's modules
# into DIR, built in VARIANT's tree and build folder.
build_mutant() {
	local m=$1 dir=$2 var=$3 name k t save changed=0 rc=0
	name=$(basename "$m" .diff)
	t=$(tree_of "$var")
	save=$out/$var-modules
	git -C "$t" apply "$m" || return 1
	# killed half way (Ctrl-C): the tree and the variant's modules go back
	trap 'git -C "$t" apply -R "$m"; for k in "${kos[@]}"; do cp "$save/${k##*/}" "$BUILD/$var/$k"; done' EXIT
	KS_TREE_LOCKED=1 "$TOP/scripts/build.sh" "$var" kvm >"$out/$name.build.log" 2>&1 || rc=$?
	for k in "${kos[@]}"; do
		cmp -s "$BUILD/$var/$k" "$save/$(basename "$k")" || changed=1
		cp "$BUILD/$var/$k" "$dir/arch/x86/kvm/"
		cp "$save/$(basename "$k")" "$BUILD/$var/$k"
	done
	trap - EXIT
	git -C "$t" apply -R "$m" || die "could not take $m back out of $t"
	# the objects are the mutant's: rebuild them from the restored tree
	KS_TREE_LOCKED=1 "$TOP/scripts/build.sh" "$var" kvm >/dev/null 2>&1 || die "rebuilding the $var modules failed"
	[ "$rc" = 0 ] || { log "$name does not build (see $out/$name.build.log)"; return 1; }
	[ "$changed" = 1 ] || { log "$name: the rebuilt modules are the $var ones"; return 1; }
}

# run_platform PLAT: every selected mutant of PLAT, one after the other
# (those of the patched kernel, then those of the fast one); its table row
# into $out/row.NAME.
run_platform() {
	local plat=$1 kvar var mut m name tests t0 regex rc summary verdict why race
	for kvar in "${variants[@]}"; do
	var=mutant-$plat
	[ "$kvar" = patched ] || var=$var-$kvar
	mut=$BUILD/$var
	rm -rf "$mut"
	mkdir -p "$mut/arch/x86/boot" "$mut/arch/x86/kvm" "$mut/virt/lib"
	ln -s "$BUILD/$kvar/arch/x86/boot/bzImage" "$mut/arch/x86/boot/bzImage"
	ln -s "$BUILD/$kvar/selftests" "$mut/selftests"
	ln -s "$BUILD/$kvar/migrate" "$mut/migrate"
	cp "$BUILD/$kvar/.config" "$mut/.config"
	cp "$BUILD/$kvar/virt/lib/irqbypass.ko" "$mut/virt/lib/"
	for m in "${all[@]}"; do
		{ [ "${plat_of[$m]}" = "$plat" ] && [ "${var_of[$m]}" = "$kvar" ]; } || continue
		name=$(basename "$m" .diff)
		tests=$(sed -n 's/^Tests: *//p' "$m" | head -1)
		t0=$(date +%s)
		log "mutant $name ($plat, $kvar kernel): $tests"
		if ! (flock 9 && build_mutant "$m" "$mut" "$kvar") 9>"$lock"; then
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
				# name and status (FAIL, HANG, SPLAT, ...); a stall (the
				# emulator stopped) or modules that did not load say
				# nothing of the tests: inconclusive
				verdict="killed by $(grep '^not ok' "$out/$name.tap" | grep -v ' # TODO ' | awk '{ sub(/,$/, "", $6); print $4 " (" $6 ")" }' | paste -sd' ')"
				if ! grep '^not ok' "$out/$name.tap" | grep -v ' # TODO ' | grep -qv '# STALL\|KVM did not load'; then
					verdict="inconclusive: $verdict"
				fi
			else
				verdict="SURVIVED"
			fi
		fi
		why=$(sed -n 's/^Survives: *//p' "$m" | head -1 | tr -d '|')
		race=$(sed -n 's/^Race: *//p' "$m" | head -1 | tr -d '|')
		case $verdict in
		SURVIVED)
			if [ -n "$why" ]; then verdict="survived (expected: $why)"
			elif [ -n "$race" ]; then verdict="survived (expected this time: $race)"; fi ;;
		killed*) [ -z "$why" ] || verdict="$verdict, UNEXPECTED: its header says it survives" ;;
		esac
		printf '| %s | %s | %s | %s | %s | %d s, %s |\n' "$name" "$plat" \
			"$(sed -n 's/^Mutant: *//p' "$m" | head -1 | tr -d '|')" "$tests" "$verdict" \
			$(($(date +%s) - t0)) "$(date -u +%Y-%m-%d)" >"$out/row.$name"
		log "mutant $name: $verdict"
	done
	done
}

pids=()
trap 'kill "${pids[@]}" 2>/dev/null; exit 130' INT TERM
t0=$(date +%s)
# a run of the whole set: its stamp (date, repo, patches, command, host
# speed) for docs/results/mutants.md
[ "$filter" != . ] || stamp "make mutants" >"$out/stamp.part"
for plat in amd intel; do
	grep -qx "$plat" < <(printf '%s\n' "${plat_of[@]}") || continue
	run_platform "$plat" &
	pids+=($!)
done
rc=0
for p in "${pids[@]}"; do wait "$p" || rc=1; done
summary=$(report)
echo
tail -n +3 "$out/table"
mins=$((($(date +%s) - t0) / 60))
echo "$summary; $mins min"
if [ "$filter" = . ]; then
	{
		cat "$out/stamp.part"
		echo "host speed loop at the end: $(host_loop_ms) ms"
		echo "result: $summary in $mins min"
	} >"$out/stamp"
	rm -f "$out/stamp.part"
fi
[ "$filter" != . ] || write_doc "$summary"
[ "$(unexpected)" = 0 ] || rc=1
exit "$rc"
