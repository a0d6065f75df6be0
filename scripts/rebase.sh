#!/usr/bin/env bash
# rebase.sh [-n] VERSION: move the series to another version of Debian's
# linux-source-6.1 that apt offers (make rebase BASE_VERSION=VERSION).  In a
# cache of its own, $KS_CACHE/BASE/rebase/VERSION: fetch that version (its .deb
# checked against apt's signed index), make the tree from patches/
# (stopping at the first patch that does not apply, with its failing
# hunks), build the base and patched kernels and selftests, record the
# baselines of that base for the lists' groups in KS_GROUPS (default
# "default"; in that cache: tests/ keeps the pinned base's) and run the
# same groups on the patched kernel against them.  It ends with make
# test's summary line.  -n checks that apt offers VERSION and exits.  A
# patch that does not apply is fixed in patches/ (docs/running.md, "A new
# base"), and make rebase run again: it remakes the tree from patches/.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
need apt-cache
check=0
[ "${1:-}" != -n ] || { check=1; shift; }
[ $# = 1 ] || die "usage: rebase.sh [-n] VERSION (make rebase BASE_VERSION=VERSION); apt offers: $(base_versions | paste -sd' ' -)"
ver=$1
[[ $ver =~ ^[0-9][0-9.]*-[0-9A-Za-z.+~]+$ ]] || die "'$ver' is not a version of $BASE_PKG (like $BASE_PIN)"
grep -qx -- "$ver" < <(base_versions) ||
	die "apt does not offer $BASE_PKG $ver (it offers: $(base_versions | paste -sd' ' -); run apt-get update if that list is old)"
[ "$ver" != "$BASE_PIN" ] || log "note: $ver is the pinned base; this rebuilds it in a cache of its own"
dir=$CACHE/rebase/$ver
if [ "$check" = 1 ]; then
	log "rebase.sh: apt offers $BASE_PKG $ver; the rebase would use $dir"
	exit 0
fi
export KS_BASE_VERSION=$ver KS_CACHE=$dir CCACHE_DIR=$CCACHE_DIR KS_BASELINES=$dir/baselines
log "settings of this rebase (to run the harness in it by hand): KS_CACHE=$KS_CACHE KS_BASE_VERSION=$ver KS_BASELINES=$KS_BASELINES"
mkdir -p "$KS_BASELINES"
# start from the pinned base's baselines, so that their reasons are kept;
# -w below rewrites each test's status from this base's run
for f in baseline baseline.intel; do
	[ -f "$KS_BASELINES/$f" ] || cp "$TESTS/$f" "$KS_BASELINES/$f"
done
s=$TOP/scripts
"$s/setup.sh"
"$s/run-tests.sh" -k patched -n
log "rebase onto $BASE_PKG $ver in $dir: fetching the base"
"$s/fetch-base.sh"
log "rebase: the tree"
"$s/mktree.sh" || die "the series does not apply to $ver (the patch and hunks above): fix that patch in patches/ (a fix already in $ver: git -C $dir/linux apply -R --check $PATCHES/GROUP/NNNN-...patch), then run make rebase again"
log "rebase: building the base and the patched kernels (a new base recompiles much of the kernel)"
"$s/build.sh" base all
"$s/build.sh" patched all
"$s/mutants.sh" -n || log "note: mutants/ do not all apply to this tree (above); make test on the pinned base is unaffected"
log "rebase: the baselines of $ver (in $KS_BASELINES)"
# -w exits non-zero when this base's outcomes differ from the pinned
# base's, which is what it is here to record; a run that ends without its
# summary line (a kernel that does not boot, a harness error) stops here
blog=$dir/baseline-run.log
KS_RUN=rebase "$s/run-tests.sh" -k base -w 2>&1 | tee "$blog" || true
grep -Eq '^[0-9]+ passed, [0-9]+ failed' "$blog" ||
	die "the base's run did not finish (see $blog): no baselines recorded for $ver"
for f in baseline baseline.intel; do
	awk '!/^#/ { print $1, $2 }' "$TESTS/$f" | sort >"$KS_BASELINES/.$f.pinned"
	awk '!/^#/ { print $1, $2 }' "$KS_BASELINES/$f" | sort |
		comm -13 "$KS_BASELINES/.$f.pinned" - | sed "s/^/rebase: $ver differs from the pinned base: /" >&2
done
log "rebase: the lists on the patched kernel, judged against them"
"$s/run-tests.sh" -k patched
