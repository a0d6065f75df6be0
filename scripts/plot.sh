#!/usr/bin/env bash
# plot.sh DIR [dirty|nx|cr0|all [ROUNDS [perf|lockstat|debug]]]: SVG plots of a bench.sh output
# folder ($KS_CACHE/BASE/bench/PLATFORM, or a copy of one), written into DIR
# beside the raw data, for what DIR has (of boots 1..ROUNDS, default all):
#  dirty.svg    each boot's per-iteration clear-dirty-log times, base and
#               patched (series A)
#  nx-hist.svg  the vCPU access latency histogram of all boots, base and
#               patched, log-log (series B)
#  cr0.svg      each boot's cost of a CR0.WP toggle, four cases (series C)
# Needs gnuplot (scripts/setup.sh installs gnuplot-nox).  bench.sh runs it.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
need gnuplot
dir=${1:?usage: plot.sh DIR [dirty|nx|cr0|all [ROUNDS]]}
which=${2:-all}
rounds=${3:-9999}
case ${4:-perf} in perf) sfx=-perf ;; lockstat) sfx=-lockstat ;; debug) sfx="" ;; *) die "plot.sh: no kind '$4'" ;; esac
[ -d "$dir" ] || die "no folder $dir"
case $which in dirty | nx | cr0 | all) ;; *) die "plot.sh: no benchmark '$which'" ;; esac
[[ $rounds =~ ^[1-9][0-9]*$ ]] || die "ROUNDS must be a positive number, not '$rounds'"
want() { [ "$which" = all ] || [ "$which" = "$1" ]; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
term="set terminal svg size 900,520 dynamic font 'sans,12' background '#ffffff'"
made=()
# points NAME PS SETTINGS: NAME.svg, $tmp/NAME.base and $tmp/NAME.patched
# ("x y" lines) as points of size PS from 0 up, with gnuplot SETTINGS
points() {
	gnuplot <<EOF
$term
set output '$dir/$1.svg'
$3
set yrange [0:*]
set grid ytics
plot '$tmp/$1.base' using 1:2 with points pt 7 ps $2 title 'base', \
     '$tmp/$1.patched' using 1:2 with points pt 5 ps $2 title 'patched'
EOF
	made+=("$1.svg")
}

# dirty: one point per iteration, x = boot + iteration / 10
if want dirty && compgen -G "$dir/dirty.base$sfx.[0-9]*/ms" >/dev/null; then
	for k in base patched; do
		for f in "$dir/dirty.$k$sfx".[0-9]*/ms; do
			[ -f "$f" ] || continue
			b=${f%/ms}
			b=${b##*.}
			[ "$b" -le "$rounds" ] || continue
			awk -v b="$b" '{ printf "%.2f %s\n", b + NR / 10, $1 }' "$f"
		done >"$tmp/dirty.$k"
	done
	points dirty 0.7 "set title 'dirty\\_log\\_perf\\_test: clear-dirty-log time of each iteration, per boot'
set xlabel 'boot (each boot: its iterations, left to right)'
set ylabel 'ms'
set key top right"
fi

# nx: the histogram of all boots, summed by bucket
if want nx && [ -s "$dir/nx.base.hist" ] && [ -s "$dir/nx.patched.hist" ]; then
	for k in base patched; do
		awk '{ n[$1] += $2; t += $2 } END { for (b in n) if (n[b]) printf "%s %d %.8g\n", b, n[b], n[b] / t }' \
			"$dir/nx.$k.hist" | sort -g >"$tmp/nx.$k"
	done
	gnuplot <<EOF
$term
set output '$dir/nx-hist.svg'
set title 'vCPU access latency while NX huge page recovery runs, all boots'
set xlabel 'latency, us (bucket lower bound)'
set ylabel 'share of accesses'
set logscale xy
set format y '10^{%L}'
set key top right
set grid
plot '$tmp/nx.base' using 1:3 with linespoints pt 7 ps 0.6 title 'base', \
     '$tmp/nx.patched' using 1:3 with linespoints pt 5 ps 0.6 title 'patched'
EOF
	made+=(nx-hist.svg)
fi

# cr0: one point per boot for each case
if want cr0 && [ -s "$dir/cr0.base.shadow.pgoff" ]; then
	i=0
	for m in tdp.cycles shadow.cycles tdp.pgoff shadow.pgoff; do
		i=$((i + 1))
		for k in base patched; do
			awk -v x="$i" -v d="$([ $k = base ] && echo -0.12 || echo 0.12)" \
				'{ printf "%.2f %s\n", x + d, $1 }' "$dir/cr0.$k.$m" >>"$tmp/cr0.$k"
		done
	done
	points cr0 0.8 "set title 'guest cycles per CR0.WP toggle, one point per boot'
set ylabel 'guest TSC cycles per toggle'
set xtics ('TDP, paging on' 1, 'shadow, paging on' 2, 'TDP, CR0.PG=0' 3, 'shadow, CR0.PG=0' 4)
set xrange [0.5:4.5]
set key bottom right"
fi
[ ${#made[@]} -gt 0 ] || die "nothing to plot in $dir"
log "plots in $dir: ${made[*]}"
