#!/usr/bin/env bash
# bench.sh [dirty|nx|cr0|all] [ROUNDS]: the main job.  Boots the base and the
# patched kernel alternately (same VM settings, ROUNDS boots each, default
# 5) and prints, for each kernel, and the patched/base ratios:
#  dirty  the per-iteration clear-dirty-log time of dirty_log_perf_test
#         (series A); BENCH_ARGS overrides its arguments;
#  nx     vCPU fault latency while NX huge page recovery runs at full rate,
#         from nx_huge_pages_recovery_test (series B); NX_ARGS;
#  cr0    the cost of one CR0.WP toggle seen by the guest, TDP and shadow
#         MMU, from cr0_wp_test -b (series C); CR0_ARGS.
# Not a test: it never fails on the numbers.  BENCH_KIND=perf (default:
# kernels without lock debugging, built by "make bench") or debug (the
# lockdep kernels the tests use).  Raw output stays in $KS_CACHE/bench/.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
which=${1:-all}
rounds=${2:-5}
case $which in dirty | nx | cr0 | all) ;; *) die "usage: bench.sh [dirty|nx|cr0|all] [ROUNDS]" ;; esac
[[ $rounds =~ ^[1-9][0-9]*$ ]] || die "ROUNDS must be a positive number, not '$rounds'"
case ${BENCH_KIND:-perf} in
perf) kinds=(base-perf patched-perf) ;;
debug) kinds=(base patched) ;;
*) die "BENCH_KIND must be perf or debug" ;;
esac
dirty_args=${BENCH_ARGS:--v 1 -b 256M -i 8}
nx_params="kvm.nx_huge_pages=1 kvm.nx_huge_pages_recovery_ratio=1 kvm.nx_huge_pages_recovery_period_ms=${NX_PERIOD_MS:-100} hugepages=${NX_HUGEPAGES:-300}"
nx_args=${NX_ARGS:--v 2 -b 512M -s 30}
cr0_args=${CR0_ARGS:--b -n 200000}
out=$CACHE/bench
mkdir -p "$out"

# run NAME VARIANT ROUND LIST-LINE...: one boot running the list lines
# (name|mmu|secs|params|command, as in tests/list) through guest-run.sh.
run() {
	local what=$1 v=$2 r=$3 dir
	shift 3
	dir=$out/$what.$v.$r
	rm -rf "$dir"
	mkdir -p "$dir"
	printf '%s\n' "$@" >"$dir/list"
	log "round $r/$rounds: $v: $what"
	# Both kernels run the same selftest binaries: the patched build's,
	# which has the tests the series adds.
	"$TOP/scripts/vm.sh" -k "$v" -t 1200 -o "$dir" -- \
		"KS_SELFTESTS=\"$BUILD/patched/selftests\" bash \"\$KS_TOP/scripts/guest-run.sh\" \"\$KS_OUT/list\"" \
		>"$dir/log" 2>&1 ||
		die "$v: $what, round $r: the VM failed, see $dir/log and $dir/console.log"
	[ "$(grep -c '|pass|' "$dir/results")" = $# ] ||
		die "$v: $what, round $r: a test did not pass, see $dir/results, $dir/out.* and $dir/console.log"
}

# stats FILE: count min median max of a column of numbers
stats() { sort -g "$1" | awk '{ a[NR] = $1 } END {
	m = NR % 2 ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2
	printf "%d %.2f %.2f %.2f\n", NR, a[1], m, a[NR] }'; }
row() { printf '| %-10s | %10s | %10s | %10s | %10s |\n' "$@"; }
ratio() { awk -v p="$1" -v b="$2" 'BEGIN { printf "%.2f", b ? p / b : 0 }'; }

bench_dirty() {
	local r v k a
	rm -f "$out"/dirty.*.ms
	for r in $(seq "$rounds"); do
		for v in "${kinds[@]}"; do
			run dirty "$v" "$r" "dirty|tdp|900|-|./dirty_log_perf_test $dirty_args"
			# Iteration 1 clears the initially-set bitmap: a different job.
			sed -n 's/.*Iteration \([0-9]*\) clear dirty log time: \([0-9.]*\)s.*/\1 \2/p' \
				"$out/dirty.$v.$r/out.dirty" | awk '$1 > 1 { print $2 * 1000 }' >>"$out/dirty.${v%-perf}.ms"
		done
	done
	echo
	echo "dirty_log_perf_test $dirty_args, $rounds alternating boots per kernel (${kinds[*]})"
	echo "clear-dirty-log time per iteration, ms (iteration 1 excluded):"
	row kernel samples min median max
	for k in base patched; do
		read -ra a < <(stats "$out/dirty.$k.ms")
		row "$k" "${a[@]}"
	done
	echo "patched/base (medians): $(ratio "$(stats "$out/dirty.patched.ms" | cut -d' ' -f3)" \
		"$(stats "$out/dirty.base.ms" | cut -d' ' -f3)")"
}

bench_nx() {
	local r v k f m a
	rm -f "$out"/nx.*.{max,p999,p99,p50,hist}
	for r in $(seq "$rounds"); do
		for v in "${kinds[@]}"; do
			run nx "$v" "$r" "nx|tdp|600|$nx_params|x86_64/nx_huge_pages_recovery_test $nx_args"
			f=$out/nx.$v.$r/out.nx
			k=${v%-perf}
			for m in max p999 p99 p50; do
				sed -n "s/^nx-latency:.* ${m}_us=\([0-9.]*\).*/\1/p" "$f" >>"$out/nx.$k.$m"
			done
			sed -n 's/^nx-hist: //p' "$f" >>"$out/nx.$k.hist"
		done
	done
	echo
	echo "nx_huge_pages_recovery_test $nx_args, TDP MMU, $nx_params"
	echo "$rounds alternating boots per kernel (${kinds[*]}); vCPU access latency"
	echo "during recovery, us; median over the boots of each boot's figure:"
	row kernel max p99.9 p99 p50
	for k in base patched; do
		mapfile -t a < <(for m in max p999 p99 p50; do stats "$out/nx.$k.$m" | cut -d' ' -f3; done)
		row "$k" "${a[@]}"
	done
	mapfile -t a < <(for m in max p999 p99 p50; do
		ratio "$(stats "$out/nx.patched.$m" | cut -d' ' -f3)" "$(stats "$out/nx.base.$m" | cut -d' ' -f3)"
		echo
	done)
	row patched/base "${a[@]}"
	echo "worst single boot: max $(stats "$out/nx.base.max" | cut -d' ' -f4) us (base),"\
		"$(stats "$out/nx.patched.max" | cut -d' ' -f4) us (patched)"
	echo
	echo "histogram, all boots (bucket lower bound in us: count):"
	printf '| %10s | %12s | %12s |\n' bucket base patched
	awk 'FNR == 1 { k++ } { c[$1, k] += $2; b[$1] = 1 } END {
		for (x in b) printf "| %10s | %12d | %12d |\n", x, c[x, 1], c[x, 2] }' \
		"$out/nx.base.hist" "$out/nx.patched.hist" | sort -t'|' -k2 -b -g
}

bench_cr0() {
	local r v k mmu a
	rm -f "$out"/cr0.*.cycles
	for r in $(seq "$rounds"); do
		for v in "${kinds[@]}"; do
			run cr0 "$v" "$r" "cr0.tdp|tdp|600|-|x86_64/cr0_wp_test $cr0_args" \
				"cr0.shadow|shadow|600|-|x86_64/cr0_wp_test $cr0_args"
			for mmu in tdp shadow; do
				sed -n 's/^cr0-wp-toggle:.* cycles_per_toggle=\([0-9.]*\).*/\1/p' \
					"$out/cr0.$v.$r/out.cr0.$mmu" | head -1 >>"$out/cr0.${v%-perf}.$mmu.cycles"
			done
		done
	done
	echo
	echo "cr0_wp_test $cr0_args, $rounds alternating boots per kernel (${kinds[*]})"
	echo "guest TSC cycles per CR0.WP toggle (paging on), median over the boots:"
	row kernel tdp shadow "" ""
	for k in base patched; do
		row "$k" "$(stats "$out/cr0.$k.tdp.cycles" | cut -d' ' -f3)" \
			"$(stats "$out/cr0.$k.shadow.cycles" | cut -d' ' -f3)" "" ""
	done
	mapfile -t a < <(for mmu in tdp shadow; do
		ratio "$(stats "$out/cr0.patched.$mmu.cycles" | cut -d' ' -f3)" \
			"$(stats "$out/cr0.base.$mmu.cycles" | cut -d' ' -f3)"
		echo
	done)
	row patched/base "${a[@]}" "" ""
}

case $which in
dirty) bench_dirty ;;
nx) bench_nx ;;
cr0) bench_cr0 ;;
all) bench_dirty; bench_nx; bench_cr0 ;;
esac
