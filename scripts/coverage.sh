#!/usr/bin/env bash
# coverage.sh [RESULTS...]: which of the lines the series changes in
# arch/x86/kvm ran, on which platform, in a run of the lists on the coverage
# kernel (make coverage: run-tests.sh -k patched-gcov, whose guests save
# arch/x86/kvm's gcov counters in each boot's gcov/ folder).  RESULTS are
# such runs' folders, added up (default $KS_CACHE/BASE/results/patched-gcov;
# e.g. a second run with KS_RUN=NAME and -f adds tests).  Prints a
# table: for every function the series adds or changes, its changed lines
# that have code, how many ran on amd, on intel, on either, and the lines
# that ran nowhere, with their text.  The report also goes to
# the first RESULTS folder's coverage.txt.  KS_COV=fast: the same for the
# groups after tests/ (the lines tag fast changes against patched), on the
# fast-gcov kernel (default results $KS_CACHE/BASE/results/fast-gcov).
set -euo pipefail
. "$(dirname "$0")/lib.sh"
need gcov python3 git
cov=${KS_COV:-patched}
case $cov in
patched) from=base-fixed to=patched src=$SRC ;;
fast) variant_rev fast >/dev/null; from=patched to=fast src=$CACHE/linux-fast ;;
*) die "KS_COV must be patched or fast, not '$cov'" ;;
esac
[ $# -gt 0 ] || set -- "$CACHE/results/$cov-gcov"
obj=$BUILD/$cov-gcov/arch/x86/kvm
[ -d "$obj" ] || die "no coverage build in $BUILD/$cov-gcov (scripts/build.sh $cov-gcov kernel)"
[ -d "$SRC/.git" ] || die "no tree at $SRC (run scripts/mktree.sh)"
lock_cache -s "build-$cov-gcov"
built=$(cat "$BUILD/$cov-gcov/.ks-rev" 2>/dev/null || echo '(unrecorded)')
[ "$cov" = patched ] || [ "$(git -C "$src" rev-parse HEAD)" = "$(git -C "$SRC" rev-parse "$to")" ] || die "$src is not at tag $to (scripts/build.sh $cov-gcov kernel)"
# the notes files must be the ones the counters were made with: the run
# records the coverage build's source revision (build.sh writes it)
for res; do
	[ -d "$res" ] || die "no results in $res: run make coverage (or run-tests.sh -k $cov-gcov) first"
	for p in amd intel; do
		[ -d "$res/$p" ] || continue
		ran=$(cat "$res/$p/kernel-rev" 2>/dev/null || true)
		[ -z "$ran" ] || [ "$ran" = "$built" ] ||
			die "$res/$p ran on a coverage build of $ran, but $BUILD/$cov-gcov is now of $built: run make coverage again"
	done
done
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
found=0
i=0
for res; do
	i=$((i + 1))
	for p in amd intel; do
		for d in "$res/$p"/boot*; do
			g=$d/gcov
			# a boot that ended without saving its counters (a crash) would
			# make its lines look unexecuted, or look like lines without code
			[ -d "$g" ] || { log "warning: $d saved no gcov counters (the boot did not end normally?)"; continue; }
			b=$i-${d##*/}
			# gcov wants the notes file (.gcno, from the build) beside the counters
			while IFS= read -r f; do
				rel=${f#"$g"/}
				mkdir -p "$tmp/$p/$b/$(dirname "$rel")"
				cp "$f" "$tmp/$p/$b/$rel"
				[ -f "$obj/${rel%.gcda}.gcno" ] || die "no ${rel%.gcda}.gcno in $obj: the coverage build changed since the run"
				cp "$obj/${rel%.gcda}.gcno" "$tmp/$p/$b/${rel%.gcda}.gcno"
				(cd "$tmp/$p/$b/$(dirname "$rel")" && gcov --json-format --stdout "$(basename "$rel")" 2>/dev/null) \
					>>"$tmp/$p.json" || die "gcov failed on $f"
				found=1
			done < <(find "$g" -name '*.gcda')
		done
	done
done
[ "$found" = 1 ] || die "no gcov counters in $*/*/boot*/gcov: was the run on the $cov-gcov kernel?"
# a/ and b/ prefixes and no colour whatever the user's git config says
git -C "$SRC" -c diff.noprefix=false -c diff.mnemonicPrefix=false diff --no-color --no-ext-diff \
	--src-prefix=a/ --dst-prefix=b/ -U0 "$from" "$to" -- arch/x86/kvm arch/x86/include/asm/kvm_host.h >"$tmp/diff"
grep -q '^+++ b/' "$tmp/diff" || die "git diff $from $to shows no change in arch/x86/kvm"
{
	echo "Coverage build of $built, $(date -u +%Y-%m-%d); runs: ${*/#$CACHE\//}"
	for res; do
		[ ! -s "$res/stamp" ] || { echo "${res/#$CACHE\//}, the run's stamp:"; sed 's/^/  /' "$res/stamp"; }
	done
	echo
	KS_TESTS=$TESTS python3 "$TOP/scripts/coverage.py" "$src" "$tmp/diff" "$tmp"
} | tee "$1/coverage.txt"
