#!/usr/bin/env bash
# slowed.sh FACTOR COMMAND...: run COMMAND, and all it starts, as on a host
# FACTOR times slower: in a CPU cgroup whose quota is this machine's cores
# divided by FACTOR (cgroup v1 "cpu" or v2 "cpu.max"; needs root).  For
# checking that verdicts do not depend on the host's speed, e.g.
#   scripts/slowed.sh 3 bash .ci/run
# Exits with COMMAND's status; Ctrl-C stops COMMAND and removes the cgroup.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
[ $# -ge 2 ] || die "usage: slowed.sh FACTOR COMMAND..."
factor=$1
shift
[[ $factor =~ ^[1-9][0-9]*$ ]] || die "FACTOR wants a whole number (3: three times slower), not '$factor'"
[ "$(id -u)" = 0 ] || die "slowed.sh makes a cgroup: run it as root"
period=100000
quota=$(($(nproc) * period / factor))
if [ -d /sys/fs/cgroup/cpu ] && [ -f /sys/fs/cgroup/cpu/cgroup.procs ]; then
	cg=/sys/fs/cgroup/cpu/ks-slowed-$$
	mkdir "$cg"
	echo "$period" >"$cg/cpu.cfs_period_us"
	echo "$quota" >"$cg/cpu.cfs_quota_us"
	top_procs=/sys/fs/cgroup/cpu/cgroup.procs
elif grep -qw cpu /sys/fs/cgroup/cgroup.controllers 2>/dev/null; then
	cg=/sys/fs/cgroup/ks-slowed-$$
	mkdir "$cg"
	echo "$quota $period" >"$cg/cpu.max"
	top_procs=/sys/fs/cgroup/cgroup.procs
else
	die "no CPU cgroup controller found under /sys/fs/cgroup"
fi
log "slowed.sh: ${quota} us of CPU per ${period} us (x$factor slower on $(nproc) cores) for: $*"
child=""
cleanup() {
	[ -z "$child" ] || kill -TERM -- "-$child" 2>/dev/null || true
	# what is left in the cgroup goes back to the top before it is removed
	while read -r p; do echo "$p" >"$top_procs" 2>/dev/null || true; done <"$cg/cgroup.procs"
	rmdir "$cg" 2>/dev/null || true
}
trap 'cleanup; exit 130' INT TERM
# the command in a process group of its own, inside the cgroup from its start
# shellcheck disable=SC2016 # expanded by the inner bash
setsid bash -c 'echo $$ >"$1/cgroup.procs"; shift; exec "$@"' slowed "$cg" "$@" &
child=$!
rc=0
wait "$child" || rc=$?
child=""
cleanup
exit "$rc"
