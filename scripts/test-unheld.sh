#!/usr/bin/env bash
# test-unheld.sh: the carriers' stack without the held groups (make
# test-unheld).  A group with a file "hold" (our own fix, not yet in
# mainline) may sit before tests/; the groups around it must not need it.
# Tag unheld (lib.sh, unheld_tag) is the groups up to tests/ with the held
# ones left out; this builds that kernel and its selftests and runs the
# lists' groups (KS_GROUPS, default "default": what make test runs) on it,
# judged against the base's baselines as make test is.  The held groups'
# tests are absent there: their entries say needs=GROUP and count as
# skipped.  Ends with run-tests.sh's summary line.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
[ $# = 0 ] || die "usage: test-unheld.sh (no arguments; KS_GROUPS and PLATFORM as for run-tests.sh)"
s=$TOP/scripts
held=$(groups_list | sed '/^tests$/q' | while read -r g; do [ ! -f "$PATCHES/$g/hold" ] || echo "$g"; done | paste -sd' ')
if [ -z "$held" ]; then
	log "test-unheld: bases/$BASE/patches holds no group before tests/: the unheld kernel is the patched one (make test)"
	exit 0
fi
"$s/run-tests.sh" -k patched -n >/dev/null
(
	lock_cache -x tree
	unheld_tag
)
log "test-unheld: the groups up to tests/ without $held ($(git -C "$SRC" rev-list --count base-fixed..unheld) commits on the base's fixes)"
"$s/build.sh" unheld all
"$s/run-tests.sh" -k unheld
