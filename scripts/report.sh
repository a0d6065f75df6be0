#!/usr/bin/env bash
# report.sh [VARIANT]: the results page, docs/results/latest.md, and a copy
# named by today's date, from the raw data the runs keep in $KS_CACHE:
#  - the last run of the lists on VARIANT (default patched; e.g.
#    patched-gcov; KS_RUN=NAME: the run that run-tests.sh kept apart
#    under that name): per platform the outcome counts, then one row per test
#    with its outcome, the base's (tests/baseline*), its guest and work
#    seconds, its limit, and what it printed last on failure;
#  - the mutants (docs/results/mutants.md, which make mutants writes);
#  - the coverage of the changed lines (docs/results/coverage.txt, which
#    make coverage writes);
#  - the last two runs of each benchmark (bench.sh keeps them in
#    $KS_CACHE/BASE/bench/runs), as the harness printed them, with their plots;
#  - the last live-migration run of each platform (migrate.sh keeps them
#    in $KS_CACHE/BASE/results/migrate-runs).
# Each part says where it comes from: the date, the repo's commit, the
# patches' hash, the command and the host's speed loop (lib.sh, stamp).
# A part whose data is missing says so; it is not left out silently.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
variant=${1:-patched}
variant_rev "$variant" >/dev/null
top=$(results_dir "$variant")
out=$TOP/$RESULTS
mkdir -p "$out/plots"
day=$(date -u +%Y-%m-%d)
page=$out/latest.md

# stamp_of FILE: a stamp's "key: value" lines as a list
stamp_of() { sed -n 's/^\([a-z ]*\): \(.*\)$/- \1: \2/p' "$1"; }
# record_stamp FILE: the stamp of a kept run (bench.sh, migrate.sh: the
# lines before the first blank one) as a list; record_body FILE: the rest
record_stamp() { sed -n '1,/^$/p' "$1" | sed '/^$/d' | stamp_of /dev/stdin; }
record_body() { sed '1,/^$/d' "$1"; }
# rel PATH: PATH with the cache as $KS_CACHE, as a reader would type it
rel() { echo "\$KS_CACHE${1#"$CACHE"}"; }

tests_part() {
	local p base
	echo "## Tests: the last run on the $variant kernel"
	echo
	if [ ! -s "$top/stamp" ]; then
		echo "No run with a stamp in $(rel "$top"): run \`make test\` (or run-tests.sh -k $variant), then \`make report\`."
		return
	fi
	stamp_of "$top/stamp"
	echo
	echo "\"base\": the outcome tests/baseline* records on the base kernel; guest s: the test's time on the guest's clock; work s: seconds of work, the unit of the limit (docs/running.md, \"Limits, hangs and host speed\")."
	for p in amd intel; do
		[ -s "$top/$p/results" ] || continue
		base=$TESTS/baseline
		[ "$p" = amd ] || base=$TESTS/baseline.intel
		echo
		echo "### $p (kernel built from $(cat "$top/$p/kernel-rev" 2>/dev/null || echo 'an unrecorded tree'))"
		echo
		echo "$(awk -F'|' '{ n[$2]++ } END { for (s in n) printf "%s%d %s", (i++ ? ", " : ""), n[s], s; print "" }' "$top/$p/results")."
		echo
		echo "| test | outcome | base | guest s | work s | limit | detail |"
		echo "| --- | --- | --- | --- | --- | --- | --- |"
		awk -F'|' -v tf="$top/$p/times" -v bf="$base" '
			BEGIN {
				while ((getline l < tf) > 0) { split(l, a, "|"); g[a[1]] = a[2]; w[a[1]] = a[3]; lim[a[1]] = a[4] }
				while ((getline l < bf) > 0) { if (l ~ /^#/) continue; split(l, a, " "); b[a[1]] = a[2] }
			}
			{ d = ($2 == "pass") ? "" : $4; gsub(/\|/, "/", d)
			  printf "| %s | %s | %s | %s | %s | %s | %s |\n", $1, $2, ($1 in b) ? b[$1] : "(not recorded)", g[$1], w[$1], lim[$1], d }' \
			"$top/$p/results"
	done
}

mutants_part() {
	echo "## Mutants"
	echo
	if [ ! -s "$out/mutants.md" ]; then
		echo "No $RESULTS/mutants.md: run \`make mutants\`."
		return
	fi
	echo "$RESULTS/mutants.md, as the last \`make mutants\` (or mutants.sh -r, the whole set from each mutant's last run) wrote it:"
	echo
	# its own title dropped, its sections one level down
	sed '1{/^# /d}; s/^## /### /' "$out/mutants.md"
}

coverage_part() {
	echo "## Coverage of the changed lines"
	echo
	if [ ! -s "$out/coverage.txt" ]; then
		echo "No $RESULTS/coverage.txt: run \`make coverage\`."
		return
	fi
	echo "$RESULTS/coverage.txt, as \`make coverage\` wrote it:"
	echo
	echo '```'
	cat "$out/coverage.txt"
	echo '```'
}

bench_part() {
	local runs=$CACHE/bench/runs key f n svg
	echo "## Benchmarks"
	echo
	echo "Not tests: they compare the base and the patched kernel in one run (docs/benchmarks.md).  The last two runs of each benchmark, as the harness printed them; a figure is quoted only where both runs agree."
	if ! compgen -G "$runs/*" >/dev/null; then
		echo
		echo "No benchmark run recorded in $(rel "$runs"): run \`make bench\`."
		return
	fi
	# keys: PLATFORM.BENCH.KIND, from DATE.PLATFORM.BENCH.KIND
	for key in $(find "$runs" -maxdepth 1 -type f ! -name '*.svg' ! -name '*.part' ! -name '*.out' -printf '%f\n' |
		cut -d. -f2- | sort -u); do
		echo
		echo "### $key"
		n=0
		for f in $(find "$runs" -maxdepth 1 -type f -name "*.$key" -printf '%f\n' | sort -r | head -2); do
			n=$((n + 1))
			echo
			echo "Run $n of the last two:"
			echo
			record_stamp "$runs/$f"
			echo
			echo '```'
			record_body "$runs/$f"
			echo '```'
			svg=$runs/$f.svg
			if [ -f "$svg" ]; then
				cp "$svg" "$out/plots/$f.svg"
				echo
				echo "![$key, run of ${f%%.*}](plots/$f.svg)"
			fi
		done
		[ "$n" = 2 ] || { echo; echo "Only one run: not a result until a second run agrees."; }
	done
}

migrate_part() {
	local runs=$CACHE/results/migrate-runs f p
	echo "## Live migration"
	echo
	for p in amd intel; do
		f=$({ find "$runs" -maxdepth 1 -type f -name "*.$p" -printf '%f\n' 2>/dev/null || true; } | sort -r | head -1)
		if [ -z "$f" ]; then
			echo "$p: no run recorded in $(rel "$runs"): run \`PLATFORM=$p make migrate\`."
			echo
			continue
		fi
		echo "### $p"
		echo
		record_stamp "$runs/$f"
		record_body "$runs/$f"
		echo
	done
}

{
	echo "# Results"
	echo
	echo "Generated by \`make report\` (scripts/report.sh) on $day from the raw data the runs keep in \$KS_CACHE; the repo at $(git -C "$TOP" rev-parse --short=12 HEAD 2>/dev/null || echo 'no git'), patches $(patches_hash | cut -c1-12).  Each part names the run it comes from.  Do not edit: rerun \`make report\`."
	echo
	tests_part
	echo
	mutants_part
	echo
	coverage_part
	echo
	bench_part
	echo
	migrate_part
} >"$page.new"
mv "$page.new" "$page"
cp "$page" "$out/$day.md"
log "written $RESULTS/latest.md and $day.md"
