#!/usr/bin/env bash
# bench.sh [dirty|nx|cr0|all] [ROUNDS]: the main job.  Boots the base and the
# patched kernel alternately (same VM settings, ROUNDS boots each, default
# 5) and prints, for each kernel, and the patched/base ratios:
#  dirty  the per-iteration clear-dirty-log time of dirty_log_perf_test
#         (series A); BENCH_ARGS overrides its arguments;
#  nx     vCPU fault latency while NX huge page recovery runs at full rate,
#         from nx_huge_pages_recovery_perf_test (series B); NX_ARGS;
#  cr0    the cost of one CR0.WP toggle seen by the guest, TDP and shadow
#         MMU, from cr0_wp_test -b (series C); CR0_ARGS.
# Each figure is shown per boot, with the patched/base ratio of each round
# (the two boots of a round ran back to back) and its range as the spread.
# Not a test: it never fails on the numbers.  BENCH_KIND=perf (default:
# kernels without lock debugging, built by "make bench"), debug (the
# lockdep kernels the tests use) or lockstat (perf plus CONFIG_LOCK_STAT:
# nx then also reports, per boot, how long vCPUs waited for mmu_lock and
# how long it was held, from /proc/lock_stat over the measured window).
# PLATFORM=amd (QEMU TCG, SVM + NPT), intel (Bochs, VMX + EPT + PML:
# smaller sizes, see below) or all (default: amd, then intel).  Raw output stays in $KS_CACHE/BASE/bench/,
# with SVG plots of it (scripts/plot.sh).
# -n checks the arguments and settings and exits (make bench runs it before
# building anything); -h prints this.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
check=0
[ "${1:-}" != -n ] || { check=1; shift; }
[ $# -le 2 ] || die "usage: bench.sh [-n] [dirty|nx|cr0|all] [ROUNDS]"
which=${1:-all}
rounds=${2:-5}
case $which in dirty | nx | cr0 | all) ;; *) die "BENCH must be dirty, nx, cr0 or all, not '$which'" ;; esac
# the benchmarks of this base (base.conf's BENCHES): all is these
read -ra benches <<<"${BENCHES:?bases/$BASE/base.conf sets no BENCHES}"
[ "$which" = all ] || [[ " ${benches[*]} " == *" $which "* ]] ||
	die "BASE=$BASE has no $which benchmark (its selftests lack the program; bases/$BASE/base.conf, BENCHES): it offers ${benches[*]}"
[[ $rounds =~ ^[1-9][0-9]*$ ]] || die "ROUNDS must be a positive number, not '$rounds'"
case ${BENCH_KIND:-perf} in
perf) kinds=(base-perf patched-perf) ;;
debug) kinds=(base patched) ;;
lockstat) kinds=(base-lockstat patched-lockstat) ;;
*) die "BENCH_KIND must be perf, debug or lockstat, not '$BENCH_KIND'" ;;
esac
case ${PLATFORM:-all} in
amd | intel) platforms=$PLATFORM ;;
all) platforms="amd intel" ;;
*) die "PLATFORM must be amd, intel or all, not '$PLATFORM'" ;;
esac
for v in NX_PERIOD_MS NX_HUGEPAGES INTEL_NX_HUGEPAGES INTEL_NX; do
	[[ ${!v:-1} =~ ^[0-9]+$ ]] || die "$v must be a number, not '${!v}'"
done
case " $platforms " in *" amd "*) vm_paths_ok ;; esac
[ "$check" = 0 ] || { log "bench.sh: arguments and settings fine"; exit 0; }
# dirty also measures the groups after tests/ (the work beyond upstream,
# e.g. d-fast-clear) where the tree has such groups: the perf kernel
# fast-perf, after base and patched (the carriers' stack)
dkinds=("${kinds[@]}")
fast=0
if [ "${BENCH_KIND:-perf}" = perf ] && { [ "$which" = dirty ] || [ "$which" = all ]; } &&
	beyond_upstream; then
	dkinds=(base-perf patched-perf fast-perf)
	fast=1
fi
# DIRTY_KERNELS: the kernels of dirty, in order, the first the reference,
# e.g. "base-perf patched-perf d2-perf d3-perf fast-perf" for a figure
# per patch (make bench builds only base, patched and fast: build the
# dN-perf kernels first, scripts/build.sh dN-perf kernel)
if [ -n "${DIRTY_KERNELS:-}" ]; then
	read -ra dkinds <<<"$DIRTY_KERNELS"
	[ ${#dkinds[@]} -ge 2 ] || die "DIRTY_KERNELS wants two kernels or more, not '$DIRTY_KERNELS'"
	for v in "${dkinds[@]}"; do
		variant_rev "$v" >/dev/null
		[ "$check" = 1 ] || [ -f "$BUILD/$v/arch/x86/boot/bzImage" ] || die "DIRTY_KERNELS: no $v kernel (scripts/build.sh $v kernel)"
	done
fi
# the kernels measured, and the debug build whose selftests they run
for v in "${dkinds[@]}"; do lock_cache -s "build-$v"; done
# The selftests come from the patched debug build (the fast one where
# dirty measures fast: its dirty_log_perf_test has -a, and every kernel
# runs the same programs): a copy of them, taken under its lock, so that
# make mutants (which rebuilds the KVM modules for each mutant) can run
# beside a benchmark.
# (Under $BUILD, as a build's selftests: vm-intel.sh packs those a job names.)
selftests=$BUILD/bench-$$/selftests
st_from=patched
[ "$fast" = 0 ] && [ -z "${DIRTY_KERNELS:-}" ] || ! beyond_upstream || st_from=fast
mkdir -p "${selftests%/*}"
(
	lock_cache -s "build-$st_from"
	[ -d "$BUILD/$st_from/selftests" ] || die "no $st_from selftests (scripts/build.sh $st_from all)"
	cp -a "$BUILD/$st_from/selftests" "$selftests"
)
on_exit="rm -rf $(printf %q "${selftests%/*}")"
# shellcheck disable=SC2064 # the path now
trap "$on_exit" EXIT
base_out=$CACHE/bench
# set_platform amd|intel: the VM script, sizes and output folder.  Bochs
# runs about 10 times slower than QEMU's TCG and gives at most 2 GiB.
set_platform() {
	plat=$1
	case $plat in
	amd)
		vm=$TOP/scripts/vm-amd.sh vm_secs=1200
		dirty_args=${BENCH_ARGS:--v 1 -b 256M -i 8}
		nx_pages=${NX_HUGEPAGES:-300}
		nx_args=${NX_ARGS:--v 2 -b 512M -s 30}
		cr0_args=${CR0_ARGS:--b -n 200000} ;;
	intel)
		vm=$TOP/scripts/vm-intel.sh vm_secs=5400
		dirty_args=${INTEL_BENCH_ARGS:--v 1 -b 64M -i 5}
		nx_pages=${INTEL_NX_HUGEPAGES:-70}
		nx_args=${INTEL_NX_ARGS:--v 2 -b 128M -s 10}
		cr0_args=${INTEL_CR0_ARGS:--b -n 20000} ;;
	esac
	nx_params="kvm.nx_huge_pages=1 kvm.nx_huge_pages_recovery_ratio=1 kvm.nx_huge_pages_recovery_period_ms=${NX_PERIOD_MS:-100} hugepages=$nx_pages"
	out=$base_out/$plat
	mkdir -p "$out"
}

# run NAME VARIANT ROUND LIST-LINE...: one boot running the list lines
# (name|mmu|secs|params|command, as in tests/list) through guest/run.sh.
run() {
	local what=$1 v=$2 r=$3 dir
	shift 3
	dir=$out/$what.$v.$r
	rm -rf "$dir"
	mkdir -p "$dir"
	printf '%s\n' "$@" >"$dir/list"
	log "$plat: round $r/$rounds: $v: $what"
	# Both kernels run the same selftest binaries: the patched build's,
	# which has the tests the series adds.
	"$vm" -k "$v" -t "$vm_secs" -o "$dir" -- \
		"KS_SELFTESTS=\"$selftests\" bash \"\$KS_TOP/guest/run.sh\" \"\$KS_OUT/list\"" \
		>"$dir/log" 2>&1 ||
		die "$v: $what, round $r: the VM failed, see $dir/log and $dir/console.log"
	[ "$(grep -c '|pass|' "$dir/results")" = $# ] ||
		die "$v: $what, round $r: a test did not pass, see $dir/results, $dir/out.* and $dir/console.log"
}

# stats FILE: count min median max of a column of numbers
stats() { sort -g "$1" | awk 'function f(x) { return x >= 1000 ? sprintf("%.0f", x) : sprintf("%.4g", x) }
	{ a[NR] = $1 } END {
	m = NR % 2 ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2
	printf "%d %s %s %s\n", NR, f(a[1]), f(m), f(a[NR]) }'; }
med() { stats "$1" | cut -d' ' -f3; }
# mmr FILE: "median (min-max)" of a column of numbers
mmr() { stats "$1" | awk '{ printf "%s (%s-%s)", $3, $2, $4 }'; }
# expect N FILE...: each file must hold N samples (a parse that found
# nothing must not turn into a figure)
expect() {
	local n=$1 f
	shift
	for f; do
		touch "$f"
		if [ "$(wc -l <"$f")" -ne "$n" ]; then
			die "$f: expected $n samples, found $(wc -l <"$f"); see $out"
		fi
	done
}
row() { printf '| %-12s | %10s | %10s | %10s | %10s |\n' "$@"; }
ratio() { awk -v p="$1" -v b="$2" 'BEGIN { if (b) printf "%.3g", p / b; else printf "n/a" }'; }
# paired PATCHED-FILE BASE-FILE: patched/base of each round's figures (the
# two kernels' boots of one round ran back to back, under the same host
# conditions), then their range: the spread printed beside each headline
# and their median, the headline: under TCG a boot's figures cluster on
# steps of the guest's 4 ms timer tick, so the median of all samples of a
# kernel can jump a step between runs, while the paired ratios do not.
paired() {
	local r
	r=$(paste "$1" "$2" | awk '{ print $2 ? $1 / $2 : 0 }')
	printf '%s\n' "$r" | awk '{ printf "%.3g ", $1 }'
	printf '%s\n' "$r" | sort -g | awk '{ r[NR] = $1 }
		END { m = NR % 2 ? r[(NR + 1) / 2] : (r[NR / 2] + r[NR / 2 + 1]) / 2
		      printf "(range %.3g-%.3g, median %.3g)\n", r[1], r[NR], m }'
}
# medians BENCH KERNEL METRIC...: the median of each $out/BENCH.KERNEL.METRIC
medians() {
	local b=$1 k=$2 m
	shift 2
	for m; do med "$out/$b.$k.$m"; done
}
# ratios BENCH METRIC...: patched/base of the medians of each metric
ratios() {
	local b=$1 m
	shift
	for m; do
		ratio "$(med "$out/$b.patched.$m")" "$(med "$out/$b.base.$m")"
		echo
	done
}

# bench_dirty: each boot runs dirty_log_perf_test twice: as it is (every
# SPTE the CLEAR finds dirty has W, A and D set, which KVM clears with a
# plain write) and with -a (the memory aged through page_idle before each
# CLEAR, so that the SPTEs have a volatile Accessed bit and KVM must clear
# atomically).  Kernels: $dkinds (base, patched, and after them fast, the
# groups beyond upstream, where the tree has such groups).
# Three figures per CLEAR (iteration 1, which clears the initially-set
# bitmap, left out): its wall time; the clearing thread's CPU time, in a
# guest whose clock counts instructions, i.e. the instructions the CLEAR
# retired (on AMD under QEMU -icount, one a nanosecond, ACCEL=icount; on
# Intel Bochs' clock, KS_BOCHS_IPS a second), the headline: it does not
# follow how fast the host runs the emulator, nor count the other threads
# of the guest CPU (interrupts taken during the CLEAR do count: a spread
# of a few percent between iterations); and the work (the pages found
# dirty and cleared, the vCPUs' page faults after each CLEAR, one more
# untimed pass checking the last), which must be the same for every
# kernel and boot, or the run fails: a clear that does less is not
# faster.  One guest CPU (KS_CPUS on AMD, KS_BOCHS_CPUS on Intel).
bench_dirty() {
	local r v k m a x b modes=(dirty) lines f d ref per_ns nowork=0
	# -a (age the memory) is d-fast-clear's option, in the fast build's
	# selftests only: mainline's dirty_log_perf_test -a means something
	# else (random access)
	[ "$st_from" != fast ] || modes+=(dirty-a)
	# guest instructions a guest nanosecond: AMD's icount clock counts one a
	# nanosecond; Bochs' clock KS_BOCHS_IPS a second; plain TCG's clock
	# follows the host's: no instruction figure, CPU time only
	case $plat:${ACCEL:-icount} in
	amd:icount) per_ns=1 ;;
	amd:*) per_ns="" ;;
	intel:*) per_ns=$(awk -v i="${KS_BOCHS_IPS:-100000000}" 'BEGIN { print i / 1e9 }') ;;
	esac
	rm -f "$out"/dirty*.*.ms "$out"/dirty*.*.bootmed "$out"/dirty*.*.ins "$out"/dirty*.*.insmed
	for r in $(seq "$rounds"); do
		for v in "${dkinds[@]}"; do
			lines=("dirty|tdp|900|-|./dirty_log_perf_test $dirty_args")
			[ "${#modes[@]}" = 1 ] || lines+=("dirty-a|tdp|900|-|./dirty_log_perf_test $dirty_args -a")
			ACCEL=${ACCEL:-icount} KS_CPUS=${KS_CPUS:-1} KS_BOCHS_CPUS=${KS_BOCHS_CPUS:-1} \
				run dirty "$v" "$r" "${lines[@]}"
			k=${v%%-*}
			d=$out/dirty.$v.$r
			for m in "${modes[@]}"; do
				f=$d/out.$m
				# Iteration 1 clears the initially-set bitmap: a different job.
				sed -n 's/.*Iteration \([0-9]*\) clear dirty log time: \([0-9.]*\)s.*/\1 \2/p' "$f" |
					awk '$1 > 1 { print $2 * 1000 }' >"$d/$m.ms"
				[ -s "$d/$m.ms" ] || die "$f: no clear times"
				cat "$d/$m.ms" >>"$out/$m.$k.ms"
				med "$d/$m.ms" >>"$out/$m.$k.bootmed"
				sed -n 's/.*Iteration \([0-9]*\) work: \([0-9]*\) pages dirty, \([0-9]*\) page faults (\([0-9]*\) fast).*/\1 \2 \3 \4/p' "$f" |
					awk '$1 > 1' >"$d/$m.work"
				sed -n 's/.*Iteration \([0-9]*\) clear dirty log CPU time: \([0-9.]*\)s.*/\1 \2/p' "$f" |
					awk -v n="${per_ns:-0}" '$1 > 1 { print n ? $2 * 1e9 * n / 1e6 : $2 * 1000 }' >"$d/$m.ins"
				# selftests that print neither (a base without
				# d-fast-clear/0007): wall time alone, said below
				if [ ! -s "$d/$m.work" ] && [ ! -s "$d/$m.ins" ]; then
					nowork=1
				elif [ "$(wc -l <"$d/$m.work")" -lt "$(wc -l <"$d/$m.ms")" ] || [ "$(wc -l <"$d/$m.ins")" != "$(wc -l <"$d/$m.ms")" ]; then
					die "$f: work or CPU time lines missing for some iterations"
				fi
				cat "$d/$m.ins" >>"$out/$m.$k.ins"
				med "$d/$m.ins" >>"$out/$m.$k.insmed"
			done
			# the plots (scripts/plot.sh) read the default mode's
			cp "$d/dirty.ms" "$d/ms"
		done
	done
	# the work check: every kernel's every boot did what the first did
	for m in "${modes[@]}"; do
		[ "$nowork" = 0 ] || break
		ref=$out/dirty.${dkinds[0]}.1/$m.work
		for r in $(seq "$rounds"); do
			for v in "${dkinds[@]}"; do
				cmp -s "$ref" "$out/dirty.$v.$r/$m.work" || {
					echo "iteration, pages dirty, page faults, fast ones: ${dkinds[0]%%-*} (boot 1) <, ${v%%-*} (boot $r) >" >&2
					diff "$ref" "$out/dirty.$v.$r/$m.work" >&2 || true
					die "$m: ${v%%-*} (boot $r) did other work than ${dkinds[0]%%-*} (boot 1), above: fewer pages dirty means a CLEAR left pages writable or dirty, i.e. lost them"
				}
			done
		done
	done
	echo
	echo "[$plat] dirty_log_perf_test $dirty_args, $rounds alternating boots per kernel (${dkinds[*]})"
	case $plat:$per_ns in
	amd:1) echo "QEMU TCG with -icount shift=0 (the guest clock counts instructions, one a ns), one guest CPU" ;;
	amd:) echo "QEMU TCG (ACCEL=${ACCEL}), one guest CPU: the guest clock follows the host's; CPU time, not instructions" ;;
	intel:*) echo "Bochs, ${KS_BOCHS_IPS:-100000000} instructions a guest second, one guest CPU" ;;
	esac
	for m in "${modes[@]}"; do
		echo
		case $m in
		dirty) echo "default mode (every SPTE cleared has W, A and D set: a plain write):" ;;
		dirty-a) echo "-a mode (memory aged before each CLEAR: the SPTEs have A clear, the atomic path):" ;;
		esac
		if [ "$nowork" = 1 ]; then
			echo "no work check and no CPU time: the selftests of $st_from print neither (6.1's d-fast-clear/0007 adds them)"
		else
			read -r _ a x b < <(head -1 "$out/dirty.${dkinds[0]}.1/$m.work")
			echo "work, the same for every kernel and boot (checked): $a pages dirty and cleared a CLEAR, $x page faults after it ($b fast)"
			if [ -n "$per_ns" ]; then
				echo "guest instructions retired by the clearing thread per CLEAR, millions (its CPU time under a clock that counts them), each boot:"
			else
				echo "CPU time of the clearing thread per CLEAR, ms, each boot:"
			fi
			dirty_table "$m" ins insmed "${per_ns:+$a}"
			echo
		fi
		echo "wall time per CLEAR, ms (the guest's clock: ${per_ns:+instructions, and }whatever else the guest CPU ran meanwhile), each boot:"
		dirty_table "$m" ms bootmed ""
	done
}

# dirty_table MODE FIGURE BOOTMED PAGES: each boot's samples of FIGURE
# (ms or ins), all boots, then each kernel against the first and against
# the one before it (each round's ratio of boot medians); with PAGES, the
# median over a page (instructions a page)
dirty_table() {
	local m=$1 f=$2 bm=$3 pages=$4 v r k b x a
	row kernel/boot samples min median max
	for v in "${dkinds[@]}"; do
		for r in $(seq "$rounds"); do
			read -ra a < <(stats "$out/dirty.$v.$r/$m.$f")
			row "${v%%-*} $r" "${a[@]}"
		done
	done
	echo "all boots together:"
	for v in "${dkinds[@]}"; do
		read -ra a < <(stats "$out/$m.${v%%-*}.$f")
		row "${v%%-*}" "${a[@]}"
	done
	if [ -n "$pages" ]; then
		for v in "${dkinds[@]}"; do
			echo "${v%%-*}: $(awk -v x="$(med "$out/$m.${v%%-*}.$f")" -v p="$pages" 'BEGIN { printf "%.0f", x * 1e6 / p }') instructions a page (median)"
		done
	fi
	b=${dkinds[0]%%-*}
	for v in "${dkinds[@]:1}"; do
		k=${v%%-*}
		echo "$k/$b (medians of all samples): $(ratio "$(med "$out/$m.$k.$f")" "$(med "$out/$m.$b.$f")")"
		echo "$k/$b, each round (boot medians): $(paired "$out/$m.$k.$bm" "$out/$m.$b.$bm")"
	done
	# each kernel against the one before it: one step's own figure
	x=${dkinds[1]%%-*}
	for v in "${dkinds[@]:2}"; do
		k=${v%%-*}
		echo "$k/$x, each round (boot medians): $(paired "$out/$m.$k.$bm" "$out/$m.$x.$bm")"
		x=$k
	done
}

# lockstat_row FILE: one line from the "nx-lockstat:" lines of a run: read
# acquisitions, contentions, max and total wait (us); write acquisitions,
# contentions, max wait, max and total hold (us).  /proc/lock_stat columns
# after the class name: con-bounces contentions wait-min wait-max
# wait-total wait-avg acq-bounces acquisitions hold-min hold-max
# hold-total hold-avg; a class never taken for read has a plain "name:"
# (the perf test prints no other lines).
lockstat_row() {
	awk '$1 != "nx-lockstat:" { next }
		$2 ~ /-R:$/ { ra = $10; rc = $4; rwm = $6; rwt = $7; next }
		{ wa = $10; wc = $4; wwm = $6; whm = $12; wht = $13 }
		END { printf "%d %d %.2f %.2f %d %d %.2f %.2f %.2f\n", ra, rc, rwm, rwt, wa, wc, wwm, whm, wht }' "$1"
}

bench_nx() {
	local r v k f m a lock=0 args=$nx_args
	case ${BENCH_KIND:-perf} in lockstat) lock=1 args="$nx_args -l" ;; esac
	rm -f "$out"/nx.*.{max,p999,p99,p50,hist,over100,over1000,count100,count1000,lock}
	for r in $(seq "$rounds"); do
		for v in "${kinds[@]}"; do
			run nx "$v" "$r" "nx|tdp|600|$nx_params|$ST_ARCH/nx_huge_pages_recovery_perf_test $args"
			f=$out/nx.$v.$r/out.nx
			k=${v%%-*}
			for m in max p999 p99 p50; do
				sed -n "s/^nx-latency:.* ${m}_us=\([0-9.]*\).*/\1/p" "$f" >>"$out/nx.$k.$m"
			done
			# "nx-over: threshold_us=T count=N per_million=P", T 100 and 1000
			awk -v o="$out/nx.$k" '$1 == "nx-over:" {
				sub("threshold_us=", "", $2); t = $2 + 0
				if (t != 100 && t != 1000) next
				sub("count=", "", $3); sub("per_million=", "", $4)
				print $4 >>(o ".over" t); print $3 >>(o ".count" t) }' "$f"
			sed -n 's/^nx-hist: //p' "$f" >>"$out/nx.$k.hist"
			[ "$lock" = 0 ] || lockstat_row "$f" >>"$out/nx.$k.lock"
		done
	done
	for k in base patched; do
		expect "$rounds" "$out/nx.$k".{max,p999,p99,p50,over100,over1000}
		[ "$lock" = 0 ] || expect "$rounds" "$out/nx.$k.lock"
	done
	echo
	echo "[$plat] nx_huge_pages_recovery_perf_test $args, TDP MMU, $nx_params"
	echo "$rounds alternating boots per kernel (${kinds[*]}); vCPU access latency"
	echo "during recovery, us; median over the boots of each boot's figure:"
	row kernel max p99.9 p99 p50
	for k in base patched; do
		mapfile -t a < <(medians nx "$k" max p999 p99 p50)
		row "$k" "${a[@]}"
	done
	mapfile -t a < <(ratios nx max p999 p99 p50)
	row patched/base "${a[@]}"
	echo "worst single boot: max $(stats "$out/nx.base.max" | cut -d' ' -f4) us (base),"\
		"$(stats "$out/nx.patched.max" | cut -d' ' -f4) us (patched)"
	echo "(percentiles are the upper bounds of the test's histogram buckets,"
	echo "which are 12.5-25% wide: ratios move in steps; p99.9 and max sit"
	echo "on the guest timer ticks of single-threaded TCG, 3.7-4.2 ms, and"
	echo "flip with the number of accesses a run makes: see the counts below)"
	echo
	echo "accesses at or above 100 us and 1 ms, each boot: per million accesses"
	echo "(fixed thresholds: no percentile cliff), then the plain counts (a"
	echo "kernel that does more accesses in the same time has a smaller share):"
	for k in base patched; do
		echo "$k >=100us: $(paste -sd' ' "$out/nx.$k.over100")  (median $(med "$out/nx.$k.over100")); count $(paste -sd' ' "$out/nx.$k.count100")"
		echo "$k >=1ms:   $(paste -sd' ' "$out/nx.$k.over1000")  (median $(med "$out/nx.$k.over1000")); count $(paste -sd' ' "$out/nx.$k.count1000")"
	done
	[ "$lock" = 0 ] || nx_lock_report
	echo
	echo "histogram, all boots together (bucket lower bound in us: accesses, share):"
	printf '| %10s | %12s | %9s | %12s | %9s |\n' bucket base % patched %
	awk 'FILENAME == ARGV[1] { k = 1 } FILENAME == ARGV[2] { k = 2 }
		{ c[$1, k] += $2; t[k] += $2; b[$1] = 1 } END {
		for (x in b) printf "| %10s | %12d | %9.5f | %12d | %9.5f |\n", x,
			c[x, 1], t[1] ? 100 * c[x, 1] / t[1] : 0, c[x, 2], t[2] ? 100 * c[x, 2] / t[2] : 0 }' \
		"$out/nx.base.hist" "$out/nx.patched.hist" | sort -t'|' -k2 -b -g
}

# The lock statistics of the nx runs (BENCH_KIND=lockstat), each boot.
nx_lock_report() {
	local k i
	echo
	echo "kvm->mmu_lock over each boot's measured window (/proc/lock_stat, us):"
	echo "vCPU faults take it for read (TDP MMU); recovery takes it for write"
	echo "(base) or, for TDP MMU pages, for read (patched)."
	printf '| %-7s | %4s | %9s | %9s | %10s | %12s | %8s | %8s | %10s | %12s |\n' kernel boot \
		"read acq" "read con" "rd wt max" "rd wt total" "wr acq" "wr con" "wr hd max" "wr hd total"
	for k in base patched; do
		i=0
		while read -r ra rc rwm rwt wa wc _ whm wht; do
			i=$((i + 1))
			printf '| %-7s | %4d | %9d | %9d | %10s | %12s | %8d | %8d | %10s | %12s |\n' \
				"$k" "$i" "$ra" "$rc" "$rwm" "$rwt" "$wa" "$wc" "$whm" "$wht"
		done <"$out/nx.$k.lock"
	done
	for k in base patched; do
		awk '{ print $3 }' "$out/nx.$k.lock" >"$out/nx.$k.rdwaitmax"
		awk '{ print $4 }' "$out/nx.$k.lock" >"$out/nx.$k.rdwaittotal"
		awk '{ print $8 }' "$out/nx.$k.lock" >"$out/nx.$k.wrholdmax"
		awk '{ print $5 }' "$out/nx.$k.lock" >"$out/nx.$k.wracq"
		awk '{ print $9 }' "$out/nx.$k.lock" >"$out/nx.$k.wrholdtotal"
	done
	echo "medians over the boots (min-max), base / patched:"
	echo "  read wait total $(mmr "$out/nx.base.rdwaittotal") / $(mmr "$out/nx.patched.rdwaittotal") us"
	echo "  read wait max   $(mmr "$out/nx.base.rdwaitmax") / $(mmr "$out/nx.patched.rdwaitmax") us"
	echo "  write hold max  $(mmr "$out/nx.base.wrholdmax") / $(mmr "$out/nx.patched.wrholdmax") us"
	echo "  base: write acquisitions $(mmr "$out/nx.base.wracq"), write hold total $(mmr "$out/nx.base.wrholdtotal") us"
}

bench_cr0() {
	local r v k mmu a f
	rm -f "$out"/cr0.*.cycles "$out"/cr0.*.pgoff
	for r in $(seq "$rounds"); do
		for v in "${kinds[@]}"; do
			run cr0 "$v" "$r" "cr0.tdp|tdp|600|-|$ST_ARCH/cr0_wp_test $cr0_args" \
				"cr0.shadow|shadow|600|-|$ST_ARCH/cr0_wp_test $cr0_args"
			for mmu in tdp shadow; do
				f=$out/cr0.$v.$r/out.cr0.$mmu
				sed -n 's/^cr0-wp-toggle:.* cycles_per_toggle=\([0-9.]*\).*/\1/p' \
					"$f" | head -1 >>"$out/cr0.${v%%-*}.$mmu.cycles"
				sed -n 's/^cr0-wp-toggle-pgoff:.* cycles_per_toggle=\([0-9.]*\).*/\1/p' \
					"$f" | head -1 >>"$out/cr0.${v%%-*}.$mmu.pgoff"
			done
		done
	done
	for k in base patched; do
		expect "$rounds" "$out/cr0.$k".{tdp,shadow}.{cycles,pgoff}
	done
	echo
	echo "[$plat] cr0_wp_test $cr0_args, $rounds alternating boots per kernel (${kinds[*]})"
	echo "guest TSC cycles per CR0.WP toggle, median over the boots; paging on"
	echo "(path unchanged by the series) and paging off (CR0.PG=0: the series"
	echo "skips the MMU reset there):"
	row kernel tdp shadow "tdp PG=0" "shadow PG=0"
	for k in base patched; do
		mapfile -t a < <(medians cr0 "$k" tdp.cycles shadow.cycles tdp.pgoff shadow.pgoff)
		row "$k" "${a[@]}"
	done
	mapfile -t a < <(ratios cr0 tdp.cycles shadow.cycles tdp.pgoff shadow.pgoff)
	row patched/base "${a[@]}"
	echo "each boot:"
	for k in base patched; do
		r=0
		while read -ra a; do
			r=$((r + 1))
			row "$k $r" "${a[@]}"
		done < <(paste -d' ' "$out/cr0.$k".{tdp.cycles,shadow.cycles,tdp.pgoff,shadow.pgoff})
	done
	echo "patched/base, each round:"
	for m in tdp.cycles shadow.cycles tdp.pgoff shadow.pgoff; do
		echo "  $m: $(paired "$out/cr0.patched.$m" "$out/cr0.base.$m")"
	done
}

# nx_huge_pages_recovery_test stops Bochs (docs/platforms.md, "The Intel VM"): on
# the Intel platform the nx benchmark runs only when asked for by
# INTEL_NX=1.
nx_or_note() {
	if [ "$plat" = intel ] && [ "${INTEL_NX:-0}" != 1 ]; then
		echo
		echo "[intel] nx: not run (nx_huge_pages_recovery_test stops Bochs; INTEL_NX=1 to try)"
		return
	fi
	bench_nx
}

# record BENCH: runs the benchmark and keeps what it printed, with its
# stamp (lib.sh), in $base_out/runs/DATE.PLATFORM.BENCH.KIND: make report
# shows the last two runs of each
record() {
	local f svg pre kind
	if [ "$1" = nx ] && [ "$plat" = intel ] && [ "${INTEL_NX:-0}" != 1 ]; then
		nx_or_note
		return
	fi
	mkdir -p "$base_out/runs"
	kind=${BENCH_KIND:-perf}
	# dirty on AMD under another clock than icount measures something
	# else: a key of its own (make report shows the last two of each key)
	if [ "$1" = dirty ] && [ "$plat" = amd ] && [ "${ACCEL:-icount}" != icount ]; then
		kind=$kind-$ACCEL
	fi
	f=$base_out/runs/$(date -u +%Y%m%dT%H%M%S).$plat.$1.$kind
	record_open "$f"
	{
		pre=""
		[ "$1" != dirty ] || [ -z "${DIRTY_KERNELS:-}" ] || pre="DIRTY_KERNELS='$DIRTY_KERNELS' "
		case " ${DIRTY_KERNELS:-} " in *" probe-perf "*)
			pre="KS_PROBE=$(cat "$BUILD/probe-perf/.ks-probe-name" 2>/dev/null || echo '?') $pre" ;;
		esac
		[ "$plat" != amd ] || [ -z "${ACCEL:-}" ] || pre="${pre}ACCEL=$ACCEL "
		stamp "${pre}make bench BENCH=$1 BENCH_KIND=${BENCH_KIND:-perf} PLATFORM=$plat ROUNDS=$rounds"
		if [ "$1" = dirty ]; then
			echo "kernels: ${dkinds[*]} (selftests of $st_from)"
		else
			echo "kernels: ${kinds[*]} (selftests of $st_from)"
		fi
	} >"$f.part"
	"bench_$1" | tee "$f.out"
	echo "host speed loop at the end: $(host_loop_ms) ms" >>"$f.part"
	record_close "$f"
	# its plot beside the raw data (scripts/plot.sh), and a copy with the record
	if command -v gnuplot >/dev/null; then
		if "$TOP/scripts/plot.sh" "$out" "$1" "$rounds" "${BENCH_KIND:-perf}"; then
			svg=$out/$1.svg
			[ "$1" != nx ] || svg=$out/nx-hist.svg
			[ ! -f "$svg" ] || cp "$svg" "$f.svg"
		else
			log "plots failed (the figures above stand)"
		fi
	else
		log "no gnuplot: no plots (scripts/setup.sh installs gnuplot-nox)"
	fi
}
for p in $platforms; do
	set_platform "$p"
	case $which in
	all) for b in "${benches[@]}"; do record "$b"; done ;;
	*) record "$which" ;;
	esac
done
