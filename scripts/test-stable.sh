#!/usr/bin/env bash
# test-stable.sh: each stable posting alone on the base, as 6.1.y would
# apply it (make test-stable).  For the group "stable" (kernel: tag
# grp/stable) and every stable group after it, held or not (lib.sh,
# stable_groups; kernel: tag alone/GROUP, the group's commits
# picked onto base-fixed by themselves): build it, then run the lists'
# default-group entries that the base's selftests have, and the TDP MMU
# fault-heavy tests of STABLE_EXTRA, judged against the base's baselines;
# then, if bases/BASE/patches/GROUP/stable-tests exists (one extended
# regex of list entries), those entries with the patched build's selftests
# (tests the posting is about but the base lacks), which must pass.  Ends
# with one summary line per kernel; fails if any run failed.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
[ $# = 0 ] || die "usage: test-stable.sh (no arguments)"
extra='dirty_log_perf_test|kvm_page_table_test|demand_paging_test|memslot_modification_stress_test|access_tracking_perf_test'
s=$TOP/scripts
# the entries of the lists that the base's own selftests have
base_entries=$("$s/run-tests.sh" -l | awk '{ print $1 }' |
	grep -Fx -f <(awk '!/^#/ && $2 != "absent" { print $1 }' "$TESTS/baseline" "$TESTS/baseline.intel") | paste -sd'|')
[ -n "$base_entries" ] || die "no list entry has a baseline on the base"
mapfile -t groups < <(echo stable; stable_groups)
# the stable requests alone on the base: tags alone/GROUP
(
	lock_cache -x tree
	alone_tags
)
summary=() rc=0
for g in "${groups[@]}"; do
	v=stable
	[ "$g" = stable ] || v=stable-$g
	log "test-stable: $g alone on the base (variant $v)"
	"$s/build.sh" "$v" all
	out=$CACHE/test-stable.$v.log
	"$s/run-tests.sh" -k "$v" -f "$base_entries|$extra" 2>&1 | tee "$out" || rc=1
	held=""
	[ ! -f "$PATCHES/$g/hold" ] || held=" (held)"
	summary+=("$g$held alone: $(grep -E '^[0-9]+ passed, [0-9]+ failed' "$out" | tail -1 || echo 'no summary: see '"$out")")
	own=$PATCHES/$g/stable-tests
	if [ -f "$own" ]; then
		re=$(grep -v '^#' "$own" | head -1)
		log "test-stable: $g alone, the posting's own tests ($re) with the patched selftests"
		"$s/build.sh" patched selftests
		KS_TESTS_FROM=patched KS_RUN=own "$s/run-tests.sh" -k "$v" -f "$re" 2>&1 | tee "$out.own" || rc=1
		summary+=("$g alone, its own tests: $(grep -E '^[0-9]+ passed, [0-9]+ failed' "$out.own" | tail -1 || echo 'no summary: see '"$out.own")")
	fi
done
printf '%s\n' "${summary[@]}"
exit "$rc"
