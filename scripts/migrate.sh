#!/usr/bin/env bash
# migrate.sh [-p amd] [-f REGEX] [-n] [-h]: the live-migration check on the base and on
# the patched kernel (make migrate).  Runs the migrate.* entries of the
# test lists (migrate/l1-migrate.sh: QEMU live-migrates a Linux guest that
# checks its own pages, twice, in dirty-bitmap and dirty-ring mode, and
# with NX huge pages and hugetlbfs) with run-tests.sh on each kernel, then
# prints, per entry and hop, QEMU's figures for both kernels: migration
# time, downtime, dirty-sync rounds.  Fails if an entry fails on either
# kernel.  -f picks entries (default 'migrate\..*'); -n checks and exits.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
plat=amd filter='migrate\..*' check=0
while getopts p:f:nh o; do
	case $o in
	p) plat=$OPTARG ;; f) filter=$OPTARG ;; n) check=1 ;; h) help ;;
	*) die "usage: migrate.sh [-p amd] [-f regex] [-n]" ;;
	esac
done
[ "$plat" = amd ] || die "-p: the migration check runs on amd only (see README, \"Live migration\")"
"$TOP/scripts/run-tests.sh" -k patched -p "$plat" -f "$filter" -n
[ "$check" = 0 ] || exit 0
for v in base patched; do
	[ -f "$BUILD/$v/migrate/initrd.gz" ] || die "no $v build with the migration guest (make build build-base)"
done
rc=0
for v in base patched; do
	log "$v kernel"
	KS_RUN=migrate "$TOP/scripts/run-tests.sh" -k "$v" -p "$plat" -f "$filter" || rc=1
done
echo
echo "| test | hop | kernel | time | downtime | dirty-sync rounds | sent |"
echo "| --- | --- | --- | --- | --- | --- | --- |"
for v in base patched; do
	for f in "$CACHE/results/$v-migrate/$plat"/boot*/out.migrate.*; do
		[ -f "$f" ] || continue
		t=${f##*/out.}
		sed -n 's/^migrate: hop \([0-9]*\) ([a-z]*): \([0-9]*\) ms, downtime \([0-9]*\) ms, \([0-9]*\) dirty-sync rounds, \([0-9]*\) MiB sent$/\1 \2 \3 \4 \5/p' "$f" |
			while read -r hop ms down rounds mib; do
				printf '| %s | %s | %s | %s ms | %s ms | %s | %s MiB |\n' "$t" "$hop" "$v" "$ms" "$down" "$rounds" "$mib"
			done
	done
done | sort -t'|' -k2,2 -k3,3n -k4,4
exit "$rc"
