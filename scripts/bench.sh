#!/usr/bin/env bash
# bench.sh [ROUNDS]: the main job.  Boots the base and the patched kernel
# alternately (same VM settings) and runs dirty_log_perf_test in each,
# then prints min/median/max of the per-iteration clear-dirty-log time of
# each kernel and the ratio of the medians.  Not a test: it never fails on
# the numbers.  Settings: BENCH_ARGS (dirty_log_perf_test arguments),
# BENCH_KIND=perf (default: kernels without lock debugging, built by
# "make bench") or debug (the lockdep kernels the tests use).
set -euo pipefail
. "$(dirname "$0")/lib.sh"
rounds=${1:-5}
args=${BENCH_ARGS:--v 1 -b 256M -i 8}
case ${BENCH_KIND:-perf} in
perf) kinds=(base-perf patched-perf) ;;
debug) kinds=(base patched) ;;
*) die "BENCH_KIND must be perf or debug" ;;
esac
out=$CACHE/bench
rm -rf "$out"
mkdir -p "$out"
for r in $(seq "$rounds"); do
	for v in "${kinds[@]}"; do
		log "round $r/$rounds: $v: dirty_log_perf_test $args"
		# The selftests are built with the debug kernels (same source).
		"$TOP/scripts/vm.sh" -k "$v" -t 900 -o "$out/$v.$r" -- \
			"cd \"$BUILD/${v%-perf}/selftests\" && insmod \"\$KS_KDIR/virt/lib/irqbypass.ko\" &&
			 insmod \"\$KS_KDIR/arch/x86/kvm/kvm.ko\" &&
			 insmod \"\$KS_KDIR/arch/x86/kvm/kvm-amd.ko\" 2>/dev/null ||
			 insmod \"\$KS_KDIR/arch/x86/kvm/kvm-intel.ko\";
			 ./dirty_log_perf_test $args" >"$out/$v.$r.log" 2>&1 ||
			die "$v run $r failed: see $out/$v.$r.log and $out/$v.$r/console.log"
		# Iteration 1 clears the initially-set bitmap: a different job; skip it.
		sed -n 's/.*Iteration \([0-9]*\) clear dirty log time: \([0-9.]*\)s.*/\1 \2/p' \
			"$out/$v.$r/console.log" | awk '$1 > 1 { print $2 * 1000 }' >>"$out/${v%-perf}.ms"
	done
done
stats() { sort -n "$1" | awk '{ a[NR] = $1 } END {
	m = NR % 2 ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2
	printf "%d %.1f %.1f %.1f\n", NR, a[1], m, a[NR] }'; }
read -r nb minb medb maxb < <(stats "$out/base.ms")
read -r np minp medp maxp < <(stats "$out/patched.ms")
echo
echo "dirty_log_perf_test $args, $rounds alternating boots per kernel (${kinds[*]})"
echo "clear-dirty-log time per iteration (ms; iteration 1 excluded):"
printf '| %-8s | %7s | %7s | %7s | %7s |\n' kernel samples min median max
printf '| %-8s | %7s | %7s | %7s | %7s |\n' base "$nb" "$minb" "$medb" "$maxb"
printf '| %-8s | %7s | %7s | %7s | %7s |\n' patched "$np" "$minp" "$medp" "$maxp"
awk -v p="$medp" -v b="$medb" 'BEGIN { printf "patched/base (medians): %.2f\n", p / b }'
