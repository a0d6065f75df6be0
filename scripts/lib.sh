# shellcheck shell=bash
# Common settings for the harness scripts; sourced, never run.
# shellcheck disable=SC2034 # the variables are for the sourcing scripts

TOP=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# The base: a directory bases/NAME (BASE=NAME; bases/default names the one
# used when BASE is unset).  Its base.conf holds the fields (no logic), its
# patches/, tests/ and mutants/ the series, lists, baselines and deliberate
# bugs of that base (docs/running.md, "Bases").
[ -n "${BASE:-}" ] || BASE=$(cat "$TOP/bases/default")
if [[ ! $BASE =~ ^[0-9a-z.]+$ ]] || [ ! -f "$TOP/bases/$BASE/base.conf" ]; then
	echo "error: BASE=$BASE: no such base (bases/*/base.conf: $(cd "$TOP/bases" && printf '%s ' */base.conf | sed 's#/base.conf##g'))" >&2
	exit 1
fi
export BASE
BDIR=$TOP/bases/$BASE
# shellcheck source=bases/6.1/base.conf
. "$BDIR/base.conf"
PATCHES=$BDIR/patches TESTS=$BDIR/tests MUTANTS=$BDIR/mutants
# The pinned base and its sums.  KS_BASE_VERSION (make rebase, in a cache of
# its own) names another version of the package: its .deb is checked
# against the SHA256 of apt's signed index (fetch-base.sh), and the tarball
# inside it has no sum of its own to check.
BASE_VER=${KS_BASE_VERSION:-$BASE_PIN}
BASE_DEB_SHA256="" BASE_TAR_SHA256=""
if [ "$BASE_VER" = "$BASE_PIN" ]; then
	BASE_DEB_SHA256=$BASE_PIN_DEB_SHA256
	BASE_TAR_SHA256=$BASE_PIN_TAR_SHA256
fi

# shellcheck source=guest/protocol.sh
. "$TOP/guest/protocol.sh"
HOME=${HOME:-$(getent passwd "$(id -u)" | cut -d: -f6)}
# $CACHE_ROOT holds what the bases share (downloads, ccache); $CACHE the
# base's own trees, builds, results and locks.
CACHE_ROOT=${KS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/kvm-series}
CACHE=$CACHE_ROOT/$BASE
# the layout before the bases (one cache for 6.1, $KS_CACHE/linux): say so
# rather than build a second tree beside a first that may hold unexported work
if [ -d "$CACHE_ROOT/linux/.git" ] && [ "${KS_OLD_CACHE_OK:-0}" != 1 ]; then
	echo "error: $CACHE_ROOT holds a cache of the old layout (linux, build, results, ... for 6.1); the cache is per base now: move them into $CACHE_ROOT/6.1/ (mkdir -p $CACHE_ROOT/6.1 && mv $CACHE_ROOT/{linux,linux-base,linux.stamp,build,results,bench,mutants} $CACHE_ROOT/6.1/, what exists of them; git -C $CACHE_ROOT/6.1/linux worktree prune) or remove them" >&2
	exit 1
fi
DL=$CACHE_ROOT/dl
SRC=$CACHE/linux            # git tree: base commit + one commit per patch
BUILD=$CACHE/build          # $BUILD/{base,patched}: kernel + selftests
export CCACHE_DIR=${CCACHE_DIR:-$CACHE_ROOT/ccache}

die() { echo "error: $*" >&2; exit 1; }
# apt_base ARGS... / apt_base_cache ARGS...: apt-get / apt-cache for the
# base's package.  With BASE_SUITE set, through a private source list that
# names that suite on the host's own Debian mirror (read from the host's
# apt sources now, never written in the repo), with its own lists under
# $DL/apt-SUITE; the host's apt configuration is left as it is.  Without
# it, the host's apt as it is.
apt_private() {
	local d=$DL/apt-$BASE_SUITE mirror codename
	case $BASE_SUITE in
	'') return 0 ;;
	*-security) die "BASE_SUITE=$BASE_SUITE: a security suite must be in the host's apt sources" ;;
	esac
	mkdir -p "$d/lists/partial" "$d/cache/archives/partial"
	apt_opts=(-o "Dir::Etc::sourcelist=$d/sources.list" -o Dir::Etc::sourceparts=-
		-o "Dir::State::Lists=$d/lists" -o "Dir::Cache=$d/cache" -o APT::Sandbox::User=root)
	# the private lists are refreshed once a day
	[ ! -f "$d/sources.list" ] || [ -z "$(find "$d/updated" -mmin -1440 2>/dev/null)" ] || return 0
	[ ! -f "$d/sources.list" ] || { apt_private_update "$d"; return 0; }
	# the URI that serves the host's own release (its main archive, not
	# the security one) in the host's sources, one-line or deb822 form
	codename=$(sed -n 's/^VERSION_CODENAME=//p' /etc/os-release 2>/dev/null | tr -d '"')
	[ -n "$codename" ] || die "/etc/os-release names no VERSION_CODENAME: cannot find the host's Debian mirror"
	# (either file may be missing: cat fails, which set -e must not see)
	mirror=$({ cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null || true; } |
		awk -v c="$codename" '$1 == "deb" { for (i = 2; i < NF; i++) if ($i !~ /^\[/ && $i ~ /:\/\//) { if ($(i + 1) == c) print $i; break } }' | head -1)
	[ -n "$mirror" ] || mirror=$({ cat /etc/apt/sources.list.d/*.sources 2>/dev/null || true; } |
		awk -v c="$codename" 'BEGIN { RS = ""; FS = "\n" }
			{ u = ""; ok = 0
			  for (i = 1; i <= NF; i++) {
				if ($i ~ /^URIs:/) { split($i, a, " "); u = a[2] }
				if ($i ~ /^Suites:/) { n = split($i, b, " "); for (j = 2; j <= n; j++) if (b[j] == c) ok = 1 } }
			  if (ok && u != "") { print u; exit } }')
	[ -n "$mirror" ] || die "cannot find the Debian mirror of '$codename' in the host's apt sources, to fetch $BASE_PKG from $BASE_SUITE"
	echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $mirror $BASE_SUITE main" >"$d/sources.list.new"
	mv "$d/sources.list.new" "$d/sources.list"
	log "apt: $BASE_PKG from $mirror $BASE_SUITE (a private source list in $d)"
	apt_private_update "$d"
}
# apt_private_update DIR: refresh the private lists; when that fails (e.g.
# offline), go on with the lists of an earlier refresh if there are any
apt_private_update() {
	# apt-get update can exit 0 with nothing fetched: a list must be there,
	# and newer than the last refresh
	rm -f "$1/update.stamp" && touch "$1/update.stamp"
	if apt-get "${apt_opts[@]}" -q update >"$1/update.log" 2>&1 &&
		[ -n "$(find "$1/lists" -maxdepth 1 -name '*Packages*' -newer "$1/update.stamp" 2>/dev/null)" ] ||
		{ ! grep -q '^[EW]: ' "$1/update.log" && compgen -G "$1/lists/*Packages*" >/dev/null; }; then
		touch "$1/updated"
	elif [ -f "$1/updated" ]; then
		log "warning: apt-get update of $BASE_SUITE failed (network?), using the lists of $(date -r "$1/updated" '+%Y-%m-%d %H:%M'); see $1/update.log"
	else
		tail -5 "$1/update.log" >&2
		die "apt-get update of $BASE_SUITE failed (above; network?): apt cannot tell which versions of $BASE_PKG the archive offers"
	fi
}
apt_base() { local apt_opts=(); apt_private; apt-get ${apt_opts[@]+"${apt_opts[@]}"} "$@"; }
apt_base_cache() { local apt_opts=(); apt_private; apt-cache ${apt_opts[@]+"${apt_opts[@]}"} "$@"; }
# pkg_versions PKG: the versions of PKG that apt offers where the base
# comes from (e.g. the base's CONFIG_PKG), oldest first; base_versions:
# those of $BASE_PKG
pkg_versions() {
	apt_base_cache madison "$1" 2>/dev/null | awk -F'|' '{ gsub(/ /, "", $2); print $2 }' | sort -uV
}
base_versions() { pkg_versions "$BASE_PKG"; }
# help: print the calling script's header comment (its usage) and exit;
# -h/--help as the first argument of any script that sources this file.
help() { sed -n '2,/^set -euo/{/^set -euo/d;s/^# \{0,1\}//p}' "$0"; exit 0; }
case ${1:-} in -h | --help) help ;; esac
log() { echo ">>> $*" >&2; }
# host_loop_ms: how long a fixed shell loop takes on this host now, in ms:
# the harness's figure of the host's speed (docs/running.md, "Limits,
# hangs and host speed"); host_ref_ms is its time on the reference
# machine, a 2-core host of our kind running make test.
host_ref_ms=420
host_loop_ms() {
	local t0 t1
	t0=${EPOCHREALTIME/./}
	bash -c 'for ((i = 0; i < 100000; i++)); do :; done'
	t1=${EPOCHREALTIME/./}
	echo "$(((t1 - t0) / 1000))"
}
# stamp COMMAND...: where a result comes from, as "key: value" lines that
# make report prints with it: the date, the repo's commit, the patches'
# hash, the command and the host's speed loop
stamp() {
	local rev
	rev=$(git -C "$TOP" rev-parse --short=12 HEAD 2>/dev/null || echo "no git")
	git -C "$TOP" diff --quiet HEAD -- 2>/dev/null || rev="$rev with uncommitted changes"
	echo "date: $(date -u '+%Y-%m-%d %H:%M UTC')"
	echo "base: $BASE ($BASE_PKG $BASE_VER)"
	echo "repo: $rev"
	echo "patches: $(patches_hash | cut -c1-12) (patches_hash)"
	echo "command: $*"
	echo "host speed loop: $(host_loop_ms) ms (reference $host_ref_ms ms)"
	echo "emulators: $(dpkg-query -W -f='${Package} ${Version}, ' qemu-system-x86 bochs 2>/dev/null | sed 's/, $//')"
}

# A kept run (bench.sh, migrate.sh; make report shows it): FILE.part gets
# its stamp, FILE.out what it printed, and record_close joins them into
# FILE, the stamp and the output apart by one blank line (report.sh reads
# the stamp up to it).  record_open FILE: from here until record_close, a
# run that fails or is interrupted leaves neither half behind.  The
# caller's own exit command, if any, is in on_exit (both keep it).
record_open() {
	# shellcheck disable=SC2064 # FILE now: the caller's variable may be local
	trap "rm -f $(printf %q "$1").part $(printf %q "$1").out; ${on_exit:-:}" EXIT
}
record_close() {
	{ cat "$1.part"; echo; cat "$1.out"; } >"$1"
	rm -f "$1.part" "$1.out"
	# shellcheck disable=SC2064 # on_exit as it is now
	trap "${on_exit:-:}" EXIT
}

need() {
	local c
	for c in "$@"; do
		command -v "$c" >/dev/null 2>&1 || die "missing command '$c' (run scripts/setup.sh)"
	done
}

# vm_opts CPUS MIB ARGS...: the options vm-amd.sh and vm-intel.sh share,
# [-k variant] [-t secs] [-o dir] [-c cpus] [-m MiB]; sets variant, limit,
# dir, cpus (default CPUS) and mem (default MIB), and vm_nopts, the number
# of arguments they took (the caller shifts them off).
vm_opts() {
	local o OPTIND=1
	variant=patched limit=600 dir="" cpus=$1 mem=$2
	shift 2
	while getopts k:t:o:c:m: o; do
		case $o in
		k) variant=$OPTARG ;; t) limit=$OPTARG ;; o) dir=$OPTARG ;;
		c) cpus=$OPTARG ;; m) mem=$OPTARG ;; *) die "bad option" ;;
		esac
	done
	vm_nopts=$((OPTIND - 1))
	[[ "$limit $cpus $mem" =~ ^[0-9]+\ [1-9][0-9]*\ [1-9][0-9]*$ ]] ||
		die "-t, -c and -m want numbers (seconds, CPUs, MiB), not '$limit', '$cpus', '$mem'"
}

# variant_rev base|patched -> git revision of $SRC for that variant
# Variants: base, patched (the debug kernel: tests), base-perf, patched-perf
# (the same without lock debugging: benchmarks), base-lockstat and
# patched-lockstat (perf plus CONFIG_LOCK_STAT: lock wait and hold times),
# patched-gcov (the test kernel with arch/x86/kvm profiled: make coverage).
# "patched" is what a carrier takes: the groups up to tests/ (tag patched,
# = grp/tests, where $SRC's HEAD is).  The groups after tests/ (work beyond
# upstream, e.g. d-fast-clear: beyond_upstream) are the variants fast,
# fast-perf and fast-gcov (tag fast, the end of every group; built in the
# worktree linux-fast), and dN-perf (patched-perf plus the first N patches
# after grp/tests: the kernel of each step of those groups, for per-patch
# figures; bench.sh DIRTY_KERNELS).  probe-perf (patched-perf with the diff
# KS_PROBE applied, e.g. a mutant: what a cost is worth, measured; never a
# result of the series), mutant-amd and mutant-intel (the patched kernel
# with the KVM modules of one deliberate bug, made by scripts/mutants.sh,
# one per platform so that both can run at once; mutant-amd-fast and
# mutant-intel-fast: the same on the fast kernel), stable (the base with
# the stable group only: what 6.1.y would apply; make test-stable) and
# stable-GROUP (the base with that stable posting alone, tag alone/GROUP,
# made by alone_tags), unheld (the patched stack without the held groups,
# tag unheld, made by unheld_tag: what a carrier who takes only what is
# upstream or requested runs; make test-unheld).
variant_rev() {
	case $1 in
	base | base-perf | base-lockstat) echo base-fixed ;;
	patched | patched-perf | patched-lockstat | patched-gcov | mutant-amd | mutant-intel) echo patched ;;
	fast | fast-perf | fast-gcov | mutant-amd-fast | mutant-intel-fast)
		beyond_upstream || die "variant $1: bases/$BASE/patches has no group after tests/ (no fast kernel)"
		echo fast ;;
	stable) echo grp/stable ;;
	unheld)
		git -C "$SRC" rev-parse -q --verify unheld >/dev/null ||
			die "variant unheld: no tag unheld (make test-unheld makes it: the groups up to tests/ without the held ones)"
		echo unheld ;;
	stable-*)
		git -C "$SRC" rev-parse -q --verify "alone/${1#stable-}" >/dev/null ||
			die "variant $1: no tag alone/${1#stable-} (a stable group of bases/$BASE/patches/groups; make test-stable makes the tag)"
		echo "alone/${1#stable-}" ;;
	d[1-9]-perf) d_step_rev "${1%-perf}" ;;
	probe-perf) echo patched ;;
	*) die "unknown variant '$1' (want base, patched, fast, base-perf, patched-perf, fast-perf, dN-perf, probe-perf, base-lockstat, patched-lockstat, patched-gcov, fast-gcov, mutant-amd, mutant-intel, mutant-amd-fast, mutant-intel-fast, stable, stable-GROUP or unheld)" ;;
	esac
}

# groups_list: the groups of patches/groups, one a line, in order
# (comments, blanks and blank lines out)
groups_list() {
	sed 's/#.*//; s/[[:space:]]//g; /^$/d' "$PATCHES/groups"
}

# stable_groups: the stable groups after "stable", in order: postings for
# 6.1.y, sent now or (a file "hold") once mainline has the fix; make
# test-stable runs each alone on the base
stable_groups() {
	groups_list | { grep '^stable-' || true; }
}

# pick_commits WT RANGE WHY: cherry-pick RANGE's commits onto worktree WT,
# in order, as the neutral committer at a fixed date (the same picks give
# the same commit ids); die with WHY and the commit's subject if one does
# not apply
pick_commits() {
	local c
	for c in $(git -C "$SRC" rev-list --reverse "$2"); do
		GIT_COMMITTER_NAME=kvm-series GIT_COMMITTER_EMAIL=kvm-series@invalid \
		GIT_COMMITTER_DATE="2000-01-01T00:00:00Z" git -C "$1" cherry-pick "$c" >/dev/null 2>&1 ||
			die "$3 ($(git -C "$SRC" log -1 --format=%s "$c"))"
	done
}

# alone_tags: for each of stable_groups, tag alone/GROUP: its commits
# picked onto base-fixed by themselves (the posting alone on the base, as
# stable would apply it).  test-stable.sh calls it, with the tree locked;
# mktree.sh and export.sh drop the old tags.
alone_tags() {
	local g prev wt=$CACHE/linux-alone
	git -C "$SRC" tag -l 'alone/*' | xargs -r git -C "$SRC" tag -d >/dev/null
	while read -r g; do
		prev=$(git -C "$SRC" describe --tags --abbrev=0 --match 'grp/*' "grp/$g^" 2>/dev/null || echo base-fixed)
		worktree_at "$wt" base-fixed
		pick_commits "$wt" "$prev..grp/$g" "bases/$BASE/patches/$g does not apply to the base by itself: a stable posting must"
		git -C "$SRC" tag -f "alone/$g" "$(git -C "$wt" rev-parse HEAD)" >/dev/null
	done < <(stable_groups)
	[ ! -e "$wt/.git" ] || { git -C "$SRC" worktree remove --force "$wt"; git -C "$SRC" worktree prune; }
}

# unheld_tag: tag unheld, the groups up to tests/ without the held ones
# (a file "hold" in the group's folder): from the end of the longest run of
# groups before the first held one, the commits of each later group up to
# tests/ that is not held, picked in order.  Where no group before tests/
# is held, unheld is tag patched.  test-unheld.sh calls it, with the tree
# locked; mktree.sh and export.sh drop the old tag.
unheld_tag() {
	local g picking=0 wt=$CACHE/linux-unheld-pick prev=base-fixed
	git -C "$SRC" tag -d unheld >/dev/null 2>&1 || true
	while read -r g; do
		if [ "$picking" = 0 ]; then
			if [ -f "$PATCHES/$g/hold" ]; then
				picking=1
				worktree_at "$wt" "$prev"
			fi
		elif [ ! -f "$PATCHES/$g/hold" ]; then
			pick_commits "$wt" "$prev..grp/$g" "bases/$BASE/patches/$g does not apply without the held groups: a group before a held one must not need it, and one after it must say so"
		fi
		prev=grp/$g
		[ "$g" != tests ] || break
	done < <(groups_list)
	if [ "$picking" = 0 ]; then
		git -C "$SRC" tag -f unheld patched >/dev/null
	else
		git -C "$SRC" tag -f unheld "$(git -C "$wt" rev-parse HEAD)" >/dev/null
		git -C "$SRC" worktree remove --force "$wt"
		git -C "$SRC" worktree prune
	fi
}

# top_tags TOP: once the tree's groups are made (mktree.sh) or exported
# (export.sh), TOP the end of the last group: tag patched (grp/tests where
# groups follow tests/, whose end is then tag fast; else TOP), check the
# tree out there (branch main), and drop the old tree's alone/ tags
# (test-stable.sh makes them anew) and tag unheld (test-unheld.sh).
top_tags() {
	local top
	top=$(git -C "$SRC" rev-parse "$1")
	git -C "$SRC" tag -d fast >/dev/null 2>&1 || true
	if git -C "$SRC" rev-parse -q --verify grp/tests >/dev/null &&
		[ "$(git -C "$SRC" rev-parse grp/tests)" != "$top" ]; then
		git -C "$SRC" tag -f fast "$top" >/dev/null
		git -C "$SRC" tag -f patched grp/tests >/dev/null
	else
		git -C "$SRC" tag -f patched "$top" >/dev/null
	fi
	[ "$(git -C "$SRC" rev-parse HEAD)" = "$(git -C "$SRC" rev-parse patched)" ] ||
		git -C "$SRC" checkout -q -B main patched
	git -C "$SRC" tag -l 'alone/*' | xargs -r git -C "$SRC" tag -d >/dev/null
	git -C "$SRC" tag -d unheld >/dev/null 2>&1 || true
}

# beyond_upstream: true if the tree has groups after tests/ (beyond
# upstream, e.g. d-fast-clear): mktree.sh tagged their end "fast"
beyond_upstream() {
	git -C "$SRC" rev-parse -q --verify fast >/dev/null &&
		[ "$(git -C "$SRC" rev-parse fast)" != "$(git -C "$SRC" rev-parse patched)" ]
}

# d_step_rev dN -> the commit N patches after grp/tests
d_step_rev() {
	local n=${1#d} c
	beyond_upstream || die "$1-perf: bases/$BASE/patches has no group after tests/"
	c=$(git -C "$SRC" rev-list --reverse grp/tests..fast | sed -n "${n}p")
	[ -n "$c" ] || die "$1: there are not $n patches after grp/tests"
	echo "$c"
}

# worktree_at DIR REV: DIR, a worktree of $SRC, checked out clean at REV;
# made anew if it is missing or broken (e.g. after the tree was remade).
worktree_at() {
	local wt=$1 rev=$2
	if [ -e "$wt/.git" ] && git -C "$wt" rev-parse -q --verify HEAD >/dev/null 2>&1; then
		git -C "$wt" checkout -q -f --detach "$rev"
		git -C "$wt" clean -q -fdx
	else
		rm -rf "$wt"
		git -C "$SRC" worktree prune
		git -C "$SRC" worktree add -q --detach "$wt" "$rev" ||
			die "cannot make the worktree $wt at $rev"
	fi
}

# selftests_of VARIANT -> the selftests directory a VM of VARIANT runs: the
# variant's own (built with the debug kernel of the same source), or
# KS_TESTS_FROM's, e.g. KS_TESTS_FROM=patched to run a test the series adds
# on the base kernel and see how the base fails it.
selftests_of() {
	local v=${1%-perf}
	case $v in d[1-9] | probe) v=patched ;; esac
	v=${KS_TESTS_FROM:-${v%-gcov}}
	[ -z "${KS_TESTS_FROM:-}" ] || variant_rev "$KS_TESTS_FROM" >/dev/null
	echo "$BUILD/$v/selftests"
}

# The record of what $SRC holds: "PATCHES-HASH HEAD", written by mktree.sh
# when it makes the tree from patches/ and by export.sh when it writes
# patches/ from the tree.  A HEAD that differs, or edits in the tree, are
# work that patches/ does not have.
STAMP=$CACHE/linux.stamp
# results_dir VARIANT: the folder of a run of the lists on VARIANT,
# $CACHE/results/VARIANT, or VARIANT-NAME where KS_RUN=NAME keeps a run
# apart (run-tests.sh writes it, report.sh reads it)
results_dir() {
	[[ ${KS_RUN:-} =~ ^[A-Za-z0-9_-]*$ ]] || die "KS_RUN: letters, digits, - and _ only"
	echo "$CACHE/results/$1${KS_RUN:+-$KS_RUN}"
}
patches_hash() {
	(cd "$PATCHES" && cat series && sed 's/#.*//; s/[[:space:]]//g; /^$/d' series |
		while read -r f; do cat "$f" 2>/dev/null || echo "missing $f"; done) | sha256sum | cut -d' ' -f1
}

# Locks on the cache, so that two jobs beside each other wait for each
# other instead of pulling things out from under each other:
#   tree           $SRC: exclusive to make it, export it or apply a mutant
#                  (mktree.sh, export.sh, mutants.sh), shared to build it;
#   build-VARIANT  $BUILD/VARIANT: exclusive to build it (build.sh), shared
#                  while a VM boots it or a test or bench run uses it.
# lock_cache -s|-x NAME: take it for the rest of the calling script (an
# inherited descriptor: children keep it while they live), saying what it
# waits for when another job holds it.  KS_TREE_LOCKED=1: the caller
# already holds the tree lock exclusively (mutants.sh's builds).
lock_cache() {
	local fd f=$CACHE/.lock.$2 what
	[ "$2" != tree ] || [ "${KS_TREE_LOCKED:-0}" != 1 ] || return 0
	case $1:$2 in
	-s:tree) what="the tree is being made, exported or has a mutant applied" ;;
	-x:tree) what="another job makes, builds from or checks the tree" ;;
	-s:build-*) what="the ${2#build-} kernel is being built" ;;
	-x:build-*) what="a VM, a test run or a benchmark uses the ${2#build-} kernel" ;;
	-x:upstream-wt) what="another build uses the worktree linux-upstream" ;;
	-x:fast-wt) what="another build uses the worktree linux-fast" ;;
	*) die "lock_cache: no lock '$1 $2'" ;;
	esac
	mkdir -p "$CACHE"
	exec {fd}>>"$f"
	flock -n "$1" "$fd" && return 0
	log "waiting for $f: $what"
	flock "$1" "$fd"
}

# run_emulator DIR CMD...: run CMD (timeout and an emulator) in the
# background, so that a signal to the calling script runs its trap at once:
# INT, TERM or HUP call the caller's stop_vm and exit.  DIR/vm.pid gets
# timeout's pid (it passes a signal on to the emulator), the one to kill
# from outside; it and QEMU's DIR/qemu.pid are removed when CMD ends or
# the trap stops it.  Sets rc to CMD's exit status when it fails.
run_emulator() {
	local d=$1
	shift
	# shellcheck disable=SC2064 # $d now: the trap may run after return
	trap "stop_vm; rm -f $(printf %q "$d")/{vm,qemu}.pid; exit 130" INT
	# shellcheck disable=SC2064
	trap "stop_vm; rm -f $(printf %q "$d")/{vm,qemu}.pid; exit 143" TERM HUP
	"$@" &
	tpid=$!
	echo "$tpid" >"$d/vm.pid"
	wait "$tpid" || rc=$?
	tpid=""
	trap - INT TERM HUP
	# pid files name live emulators only (a caller kills what they name)
	rm -f "$d/vm.pid" "$d/qemu.pid"
}

# vm_verdict DIR EMULATOR-LOG EMULATOR RC [SPLAT-IGNORE]: how vm-amd.sh and
# vm-intel.sh end, after the emulator (RC: its status under timeout) left
# DIR: exit with the job's status, or with a KS_RC_* code of
# guest/protocol.sh: the kernel did not boot; no job status and the
# emulated machine stopped (DIR/stalled) or the guest rebooted
# (DIR/rebooted), both written by vm-intel.sh only; the VM was killed
# (DIR/killed, or RC of timeout or a signal); the guest died otherwise; a
# splat in the console or dmesg (SPLAT-IGNORE: a file of emulator faults
# that do not count, scripts/splat.sh).
vm_verdict() {
	local dir=$1 emulog=$2 emu=$3 rc=$4 src=0
	if ! grep -aqF "$KS_INIT_STARTED" "$dir/console.log" 2>/dev/null; then
		tail -20 "$dir/console.log" "$emulog" >&2 2>/dev/null || true
		echo "error: the $variant kernel did not boot to init in $emu" >&2
		exit "$KS_RC_NOBOOT"
	fi
	if [ ! -f "$dir/rc" ]; then
		tail -40 "$dir/console.log" >&2
		if [ -f "$dir/stalled" ]; then
			echo "STALL: the emulated machine stopped ($(cat "$dir/stalled")): $emu itself, or a guest kernel stuck with interrupts off on every CPU" >&2
			exit "$KS_RC_STALL"
		fi
		[ ! -f "$dir/rebooted" ] || { echo "CRASH: the guest rebooted (panic or triple fault)" >&2; exit "$KS_RC_CRASH"; }
		[ ! -f "$dir/killed" ] || { echo "HANG: $(cat "$dir/killed")" >&2; exit "$KS_RC_HANG"; }
		case $rc in
		124 | 137 | 143) echo "HANG: the VM did not finish (time limit or killed)" >&2; exit "$KS_RC_HANG" ;;
		*) echo "CRASH: the guest went down before the job finished ($emu rc $rc)" >&2; exit "$KS_RC_CRASH" ;;
		esac
	fi
	KS_SPLAT_IGNORE=${5:-} "$TOP/scripts/splat.sh" "$dir/console.log" "$dir/dmesg" || src=$?
	[ "$src" = 1 ] || exit "$KS_RC_SPLAT"
	exit "$(cat "$dir/rc")"
}

# vm_paths_ok: QEMU's guest (vm-amd.sh) sees the host's / over 9p but mounts
# its own tmpfs on /tmp and /run, so the checkout and the cache must live
# elsewhere.  Checked before any build.
vm_paths_ok() {
	local p
	for p in "$TOP" "$CACHE"; do
		case $(realpath -m "$p")/ in
		/tmp/* | /run/*) die "$p is under /tmp or /run, which the QEMU guest hides (it mounts its own there): clone the repo elsewhere, or set KS_CACHE to a directory outside them" ;;
		esac
	done
}
