#!/usr/bin/env bash
# run-tests.sh [-k base|patched] [-p amd|intel|all] [-f REGEX] [-r N] [-w] [-l] [-n] [-h]
# Run the selftest lists in VMs booted on the variant's kernel, print TAP
# and end with "N passed, N failed, N skipped", judged against the
# baselines.  Platforms: amd (tests/list, tests/baseline: QEMU TCG, AMD SVM
# with NPT, scripts/vm-amd.sh) and intel (tests/list.intel,
# tests/baseline.intel: Bochs, Intel VMX with EPT and PML,
# scripts/vm-intel.sh); "all" (the default) runs both side by side, each
# emulator on one host core.  A test that passes on the base and does not
# pass here is a failure; tests the baseline records as failing/hanging on
# the base are reported as TAP "not ok ... # TODO" and do not count, as
# long as they fail the same way (the failure text kept in the baseline,
# numbers aside).  -w writes the baselines from this run instead (use with
# -k base; with -f it updates only the tests it ran).  A test the baseline marks "flaky"
# (passes on the base but has a known race of its own, written next to it,
# and runs no code the series changes) is run a second time if it does not
# pass, and judged on that second run; such passes are counted and marked
# "passed on retry".  -r N runs each selected test N times (as NAME~1 ...
# NAME~N, in the same boots, no retry) and prints how often each passed:
# the way to re-examine a flaky mark.  -f REGEX picks tests by name: an
# extended regex that must match the whole name (so "cr0" matches nothing,
# ".*cr0.*" or "cr0_wp_test|shadow.cr0_wp_test" work); -l lists the tests
# that would run (name, MMU, limit in guest seconds, parameters, platform)
# and exits; -n checks the arguments, paths and kernel and exits; -h helps.
# KS_TESTS_FROM=VARIANT runs the selftests built with another variant, e.g.
# KS_TESTS_FROM=patched KS_RUN=repro run-tests.sh -k base -f 'NAME.*': a
# test the series adds, on the base kernel (not with -w: a baseline
# records the base's own selftests).
set -euo pipefail
. "$(dirname "$0")/lib.sh"
variant=patched platforms=${PLATFORM:-${KS_PLATFORM:-all}} filter="" write=0 repeat=1 listing=0 check=0
cmdline="run-tests.sh $*"
usage="usage: run-tests.sh [-k variant] [-p amd|intel|all] [-f regex] [-r N] [-w] [-l] [-n] [-h]"
while getopts k:p:f:r:wlnh o; do
	case $o in
	k) variant=$OPTARG ;; p) platforms=$OPTARG ;; f) filter=$OPTARG ;; w) write=1 ;;
	r) repeat=$OPTARG ;; l) listing=1 ;; n) check=1 ;;
	h) help ;;
	*) die "$usage" ;;
	esac
done
shift $((OPTIND - 1))
[ $# = 0 ] || die "$usage (unexpected: $*)"
# a regex grep -E rejects would select nothing, silently
{ echo | grep -E -- "^(${filter:-.*})\|" >/dev/null; [ $? -le 1 ]; } 2>/dev/null ||
	die "-f: '$filter' is not an extended regular expression"
[[ $repeat =~ ^[1-9][0-9]*$ ]] || die "-r wants a count, not '$repeat'"
[ "$repeat" = 1 ] || [ "$write" = 0 ] || die "-r and -w do not go together"
[ -z "${KS_TESTS_FROM:-}" ] || [ "$write" = 0 ] ||
	die "-w records the base's own selftests: unset KS_TESTS_FROM"
case $platforms in
all) platforms="amd intel" ;;
amd | intel) ;;
*) die "-p wants amd, intel or all, not '$platforms'" ;;
esac
# KS_BASELINES: the directory of baseline and baseline.intel (default
# tests/; make rebase records and uses those of another base elsewhere).
baselines=${KS_BASELINES:-$TESTS}
[ -d "$baselines" ] || die "KS_BASELINES: no directory $baselines"
# plat_files PLATFORM -> "list baseline vm-script [splat-ignore]"
# Time limits in the lists are seconds of work, enforced in the guest
# (guest/run.sh: the guest's seconds, scaled by its measured speed where
# its clock follows the host's), so they mean the same on a slow host.
# The host's watchdog goes by the guest's own account of its progress.
plat_files() {
	case $1 in
	amd) echo "$TESTS/list $baselines/baseline $TOP/scripts/vm-amd.sh" ;;
	intel) echo "$TESTS/list.intel $baselines/baseline.intel $TOP/scripts/vm-intel.sh" \
		"$TESTS/splat-ignore.intel" ;;
	esac
}
# A boot's own time limit, a last resort behind the watchdog: its tests'
# limits as if the host ran them KS_MAX_SLOWDOWN (default 10) times slower
# than the reference machine.
slowest=${KS_MAX_SLOWDOWN:-10}
[[ $slowest =~ ^[1-9][0-9]*$ ]] || die "KS_MAX_SLOWDOWN wants a whole number, not '$slowest'"
stall=${KS_STALL:-300}
[[ $stall =~ ^[1-9][0-9]*$ ]] || die "KS_STALL wants seconds, not '$stall'"
# host_speed DIR: how many times slower than on the reference machine this
# host runs a fixed loop now, in thousandths (never below 1000), averaged
# with the previous figure, into DIR/hostspeed: the AMD guest's work clock
# (guest/run.sh).  host_ref_ms: the loop's time on the reference machine, a
# 2-core host of our kind running make test (both emulators busy): lib.sh.
host_speed() {
	local ms f prev
	ms=$(host_loop_ms)
	echo "$ms" >>"$1/hostspeed.log"
	f=$((ms * 1000 / host_ref_ms))
	read -r prev 2>/dev/null <"$1/hostspeed" || prev=$f
	f=$(((f + prev) / 2))
	[ "$f" -ge 1000 ] || f=1000
	echo "$f" >"$1/hostspeed.new" && mv "$1/hostspeed.new" "$1/hostspeed"
}
# KS_GROUPS: the groups of the lists to run (group=NAME in an entry's
# parameters; an entry without one is in "default", what make test and CI
# run); make test-full adds "full".  -f picks by name from all groups.
groups=${KS_GROUPS:-default}
[[ $groups =~ ^[a-z0-9\ ]+$ ]] || die "KS_GROUPS wants group names (default, full, mttcg, migrate), not '$groups'"
variant_rev "$variant" >/dev/null
[ "$write" = 0 ] || [ "$variant" = base ] || [ "${KS_FORCE:-0}" = 1 ] ||
	die "-w writes the baselines of the base kernel: use it with -k base (KS_FORCE=1 to record $variant's outcomes anyway)"
# selected PLATFORM: the list's entries that -f picks, name|mmu|secs|params|command
selected() {
	local list
	read -r list _ <<<"$(plat_files "$1")"
	[ -f "$list" ] || die "no test list $list"
	# comments and blank lines dropped
	sed -e 's/[[:space:]]*|[[:space:]]*/|/g' -e 's/^[[:space:]]*//' "$list" |
		{ grep -v -e '^#' -e '^$' || true; } | { grep -E -- "^(${filter:-.*})\|" || true; } |
		# the groups asked for (group=NAME parameters; none: "default"),
		# or any test -f names
		awk -F'|' -v want=" $groups " -v f="$filter" '
			{ g = ""; n = split($4, p, " ")
			  for (i = 1; i <= n; i++) if (p[i] ~ /^group=/) g = g " " substr(p[i], 7)
			  if (g == "") g = " default"
			  keep = f != ""; n = split(g, q, " ")
			  for (i = 1; i <= n; i++) if (index(want, " " q[i] " ")) keep = 1 }
			keep'
}
if [ "$listing" = 1 ]; then
	for p in $platforms; do
		selected "$p" | awk -F'|' -v p="$p" '{ printf "%-40s %-7s %5s s  %-28s %s\n", $1, $2, $3, $4, p }'
	done
	exit 0
fi
n=0
for p in $platforms; do n=$((n + $(selected "$p" | wc -l))); done
[ "$n" -gt 0 ] || die "no test matches -f '$filter' (-l lists them; the regex must match a whole name)"
for p in $platforms; do
	read -r _ _ vm _ <<<"$(plat_files "$p")"
	case $vm in */vm-amd.sh) vm_paths_ok ;; esac
	[ -f "$BUILD/$variant/arch/x86/boot/bzImage" ] || [ "$check" = 1 ] ||
		die "no $variant kernel in $BUILD/$variant (make build, or scripts/build.sh $variant)"
done
[ "$check" = 0 ] || { log "run-tests.sh: $n tests selected, arguments and paths fine"; exit 0; }
lock_cache -s "build-$variant"
# KS_RUN=NAME keeps this run's results apart ($KS_CACHE/BASE/results/VARIANT-NAME),
# so that two runs of one variant can go side by side.
top=$(results_dir "$variant")
# One run at a time per results folder: a second one would delete it.
mkdir -p "$CACHE/results"
exec 8>"$CACHE/results/.${top##*/}.lock"
flock -n 8 || die "another run-tests.sh uses $top (KS_RUN=NAME keeps runs apart)"
rm -rf "$top"
mkdir -p "$top"
# where this run comes from, and at the end its counts: make report shows them
stamp "${KS_GROUPS:+KS_GROUPS=\"$KS_GROUPS\" }$cmdline" >"$top/stamp"
t_run=$(date +%s)

# watchdog PID DIR DONE TOTAL SPEED: the host's guard on a boot's VM, by
# the guest's own account of its work (DIR/progress, "name work limit
# factor", from guest/run.sh): it kills the VM when the running test's work
# is 120 s past its limit (the guest did not stop it), or when the guest
# reported no progress for $stall s (it stopped).  While no test runs (the
# boot, the step from one test to the next, the end) the guest's only sign
# of life is what it writes, so once the kernel has printed its first
# line it kills the VM when neither its console nor DIR/progress changed
# for $stall s times the host's slowness (DIR/hostspeed): a boot that
# stops would otherwise run to the VM's time limit.  (Before the first
# line, e.g. Bochs' BIOS loading the kernel for a minute or two, only the
# time limit guards; on Intel, once the guest's channel exists,
# vm-intel.sh's heartbeat check has this job and calls it a stall.)
# Meanwhile it prints each result as it comes (DONE of TOTAL before this
# boot), and with SPEED=1 it measures the host's speed every 20 s for the
# guest (host_speed).
watchdog() {
	local pid=$1 dir=$2 done=$3 total=$4 calib=$5 shown=0 seen="" since=0 cal
	local last cur w lim age why n name st secs f m newest quiet qlim
	cal=$(date +%s)
	while kill -0 "$pid" 2>/dev/null; do
		sleep 5
		if [ "$calib" = 1 ] && [ $(($(date +%s) - cal)) -ge 20 ]; then
			host_speed "$dir"
			cal=$(date +%s)
		fi
		n=0
		while IFS='|' read -r name st secs _; do
			[ "$st" != START ] || continue
			n=$((n + 1))
			[ "$n" -gt "$shown" ] || continue
			shown=$n
			w=$(awk -F'|' -v n="$name" '$1 == n { print " (" $3 " s of work, limit " $4 ")" }' "$dir/times" 2>/dev/null || true)
			log "$((done + n))/$total $st $name ${secs}s$w"
		done < <(cat "$dir/results" 2>/dev/null)
		last=$(tail -n 1 "$dir/results" 2>/dev/null || true)
		case $last in
		*'|START') ;;
		*)
			# no test runs: the newest write of the guest (console,
			# progress; not results, which vm-intel.sh rewrites every
			# 5 s)
			if [ ! -s "$dir/console.log" ] || [ -f "$dir/chan.log" ]; then
				continue
			fi
			newest=0
			for f in console.log progress; do
				m=$(stat -c %Y "$dir/$f" 2>/dev/null) || continue
				[ "$m" -le "$newest" ] || newest=$m
			done
			quiet=$(($(date +%s) - newest))
			read -r f 2>/dev/null <"$dir/hostspeed" && [[ $f =~ ^[0-9]+$ ]] || f=1000
			qlim=$((stall * f / 1000))
			# (no vm.pid: the emulator is gone, its script is judging)
			if [ "$quiet" -gt "$qlim" ] && [ -s "$dir/vm.pid" ]; then
				why="no output from the guest for ${quiet} s (limit ${qlim} s) ${last:+after ${last%%|*}}"
				[ -n "$last" ] || why+="during the boot"
				kill_vm "$dir" "$why"
				break
			fi
			continue
			;;
		esac
		[ "$last" = "$seen" ] || { seen=$last; since=$(date +%s); }
		cur="" w=0 age=0
		[ ! -f "$dir/progress" ] || read -r cur w _ <"$dir/progress" || true
		# a line of the serial channel can be read half written: the limit
		# comes from the list, and a work figure that is not a number is 0
		[[ $w =~ ^[0-9]+$ ]] || w=0
		lim=$(awk -F'|' -v n="${last%|START}" '$1 == n { print $3 }' "$dir/tests" 2>/dev/null || true)
		[[ $lim =~ ^[0-9]+$ ]] || lim=600
		age=$(($(date +%s) - since))
		if [ -f "$dir/progress" ] && [ "$(stat -c %Y "$dir/progress")" -gt "$since" ]; then
			age=$(($(date +%s) - $(stat -c %Y "$dir/progress")))
		fi
		why=""
		if [ "$cur" = "${last%|START}" ] && [ "$w" -gt $((lim + 120)) ]; then
			why="${cur} is past its limit (${w} s of work, limit ${lim})"
		elif [ "$age" -gt "$stall" ]; then
			why="no progress from the guest for ${age} s during ${last%|START}"
		fi
		if [ -n "$why" ]; then
			kill_vm "$dir" "$why"
			break
		fi
	done
}
# kill_vm DIR WHY: the watchdog's kill: the reason to DIR/killed (the VM
# then counts as hung), TERM to DIR/vm.pid (timeout's: it passes it on)
kill_vm() {
	log "watchdog: $2; killing the VM"
	echo "the host's watchdog killed the VM: $2" >"$1/killed"
	[ ! -s "$1/vm.pid" ] || kill -TERM "$(cat "$1/vm.pid")" 2>/dev/null || true
}

# VM parameters among a test's parameters give it boots of its own: cpus=N
# (a VM with N CPUs) and accel=mttcg (AMD: multi-threaded TCG, whose vCPUs
# interleave finely: the race tests catch more with it).  The others run
# in the VM script's defaults.
vmkey_of() {
	awk -F'|' '{ k = ""; n = split($4, p, " ")
		for (i = 1; i <= n; i++) if (p[i] ~ /^(cpus=[0-9]+|accel=[a-z]+)$/) k = k (k == "" ? "" : " ") p[i]
		print k }'
}
# splat_in TAG NAME: the kernel lines of $dir/log.tagged tagged TAG into
# $dir/log.NAME, the splats found there into $dir/splat.NAME; true if there
# is one (or the check itself failed)
splat_in() {
	local src=0
	awk -F'\t' -v t="$1" '$1 == t' "$dir/log.tagged" | cut -f2- >"$dir/log.$2"
	KS_SPLAT_IGNORE=$ignore "$TOP/scripts/splat.sh" "$dir/log.$2" 2>"$dir/splat.$2" || src=$?
	[ "$src" != 1 ]  # 0: a splat, 2: the check itself failed
}
run_boots() {
	local key cpus accel copt logs src again=1
	while [ -s "$out/todo" ]; do
		boot=$((boot + 1))
		dir=$out/boot$boot
		mkdir -p "$dir"
		# the tests that want the same VM as the first one left
		key=$(head -1 "$out/todo" | vmkey_of)
		paste -d'|' <(vmkey_of <"$out/todo") "$out/todo" |
			awk -F'|' -v c="$key" '$1 == c' | cut -d'|' -f2- >"$dir/tests"
		cpus=$(sed -n 's/.*cpus=\([0-9]*\).*/\1/p' <<<"$key")
		accel=$(sed -n 's/.*accel=\([a-z]*\).*/\1/p' <<<"$key")
		copt=()
		[ -z "$cpus" ] || copt=(-c "$cpus")
		limit=$(awk -F'|' -v f="$slowest" '{ s += ($3 + 30) * f } END { print s + 60 }' "$dir/tests")
		t_boot=$(date +%s)
		# the host's speed: the AMD guest's work clock, and for both the
		# watchdog's patience while no test runs
		rm -f "$dir/hostspeed" "$dir/hostspeed.log"
		host_speed "$dir"
		speed=", host speed x$(awk '{ printf "%.2f", $1 / 1000 }' "$dir/hostspeed") (loop $(cat "$dir/hostspeed.log") ms, reference $host_ref_ms ms)"
		log "boot $boot: $(wc -l <"$dir/tests") tests${key:+ ($key)}$speed"
		vrc=0
		ACCEL=${accel:-${ACCEL:-tcg}} "$vm" -k "$variant" "${copt[@]}" -t "$limit" -o "$dir" -- \
			"bash \"\$KS_TOP/guest/run.sh\" \"\$KS_OUT/tests\"" >/dev/null 2>"$dir/vm.err" 8>&- &
		# (8>&-: the VM's processes do not hold the results folder's lock,
		# so one that outlives this run does not fail the next one)
		# (the watchdog's process substitutions change $!)
		vmpid=$!
		watchdog "$vmpid" "$dir" "$(wc -l <"$out/results")" "$(wc -l <"$out/all")" "$([ "$p" = amd ] && echo 1 || echo 0)"
		wait "$vmpid" || vrc=$?
		# Bochs: how fast the emulated machine ran (its clock follows its
		# instructions), from the guest's clock at the job's end
		g=$(sed -n "s/.*$KS_CLOCK_END \\([0-9]*\\).*/\\1/p" "$dir/console.log" 2>/dev/null | tail -1 || true)
		[ -z "$g" ] || [ "$g" = 0 ] ||
			log "boot $boot: $g guest s in $(($(date +%s) - t_boot)) host s, the boot included"
		cat "$dir/times" >>"$out/times" 2>/dev/null || true
		# A boot the watchdog stopped before init without a splat (the
		# emulator went idle in the kernel's boot: seen once in QEMU
		# TCG) is tried once more in each pass over the tests, and the
		# stamp says so; a kernel that stops there again does not boot.
		if [ "$vrc" = "$KS_RC_NOBOOT" ] && [ -f "$dir/killed" ] && [ "$again" = 1 ]; then
			src=0
			KS_SPLAT_IGNORE=$ignore "$TOP/scripts/splat.sh" "$dir/console.log" 2>"$dir/splat.boot" || src=$?
			if [ "$src" = 1 ]; then
				again=0
				log "boot $boot: $(cat "$dir/killed") (console in $dir/console.log); booting once more"
				echo "boot retried: $p boot $boot stopped before init, $(cat "$dir/killed")" >>"$top/stamp"
				continue
			fi
			[ "$src" != 0 ] || log "boot $boot: a splat before init, not booted again (see $dir/splat.boot)"
		fi
		[ "$vrc" = "$KS_RC_NOBOOT" ] && { cat "$dir/vm.err" >&2; die "kernel did not boot (see $dir/console.log)"; }
		touch "$dir/results"
		# A test that started but left no result took the VM down with it.
		# (a stall: the emulated machine itself stopped, see vm-intel.sh)
		awk -F'|' -v vrc="$vrc" -v hang="$KS_RC_HANG" -v stall="$KS_RC_STALL" '
			$2 == "START" { started[$1] = 1; order[++n] = $1; next }
			{ done[$1] = 1; print }
			END { for (i = 1; i <= n; i++) if (!done[order[i]])
				printf "%s|%s|0|VM %s during the test\n", order[i],
				       vrc == hang ? "hang" : vrc == stall ? "stall" : "crash",
				       vrc == hang ? "hung" : vrc == stall ? "stopped making progress (no guest heartbeat)" : "died" }
		' "$dir/results" >"$dir/final"
		# Splats fail the test they happened in: the console has every
		# kernel message up to KERN_WARNING even if the VM died, dmesg
		# (saved at the end) the rest.
		logs=("$dir/console.log")
		[ ! -f "$dir/dmesg" ] || logs+=("$dir/dmesg")
		awk -v m="] $KS_MARK " '
			# each log starts at boot, unless the dmesg buffer wrapped
			FNR == 1 { t = ""; wrapped = FILENAME ~ /dmesg$/ && $0 !~ /^\[ *0\.0+\]/ }
			{ sub(/\r$/, "") }
			# the marker guest/run.sh writes to /dev/kmsg: the echo of
			# the same line to the console can be cut by kernel lines
			# (and its end marker: what follows is between tests)
			(i = index($0, m)) {
				t = substr($0, i + length(m))
				sub(/[ :].*/, "", t)
				if (substr($0, i + length(m) + length(t)) == ": end") { t = "between:" t; next }
			}
			# kernel messages only (timestamped): tests print WARNINGs too;
			# printk can land in the middle of a line the tty is sending
			match($0, /\[ *[0-9]+\.[0-9]+\] /) { print (t != "" ? t : wrapped ? "wrapped" : "boot") "\t" substr($0, RSTART) }' "${logs[@]}" >"$dir/log.tagged"
		while IFS= read -r t; do
			if splat_in "$t" "$t"; then
				awk -F'|' -v t="$t" 'BEGIN { OFS = "|" } $1 == t { $2 = "splat" } 1' \
					"$dir/final" >"$dir/final.new"
				mv "$dir/final.new" "$dir/final"
			fi
		done < <(cut -d'|' -f1 "$dir/final")
		# Splats at boot (before the first test) or between tests (after a
		# test's end, e.g. its modules unloading) fail the run under names
		# of their own: boot@PLATFORM-N, between@TEST.
		while IFS= read -r t; do
			case $t in boot) r=boot@$p-$boot ;; *) r=between@$p:${t#between:} ;; esac
			if splat_in "$t" "$r"; then
				case $t in
				boot) echo "$r|splat|0|a kernel splat at boot, before the first test" ;;
				*) echo "$r|splat|0|a kernel splat between tests, after ${t#between:}" ;;
				esac >>"$out/extra"
			fi
		done < <(cut -f1 "$dir/log.tagged" | sort -u | grep -E '^(boot$|between:)' || true)
		# a VM that died or hung with no test running: between tests
		if [ "$vrc" = "$KS_RC_STALL" ] || [ "$vrc" = "$KS_RC_CRASH" ] || [ "$vrc" = "$KS_RC_HANG" ]; then
			if ! grep -q 'during the test$' "$dir/final"; then
				lt=$(tail -n 1 "$dir/final" | cut -d'|' -f1)
				echo "between@$p:${lt:-boot$boot}|crash|0|the VM went down between tests (rc $vrc), after ${lt:-the boot}" >>"$out/extra"
			fi
		fi
		cat "$dir/final" >>"$out/results"
		awk -F'|' 'FILENAME == ARGV[1] { seen[$1] = 1; next } !seen[$1]' "$dir/final" "$out/todo" >"$out/todo.new"
		if cmp -s "$out/todo" "$out/todo.new"; then
			cat "$dir/vm.err" >&2
			die "boot $boot ran no test (see $dir/console.log)"
		fi
		mv "$out/todo.new" "$out/todo"
	done
}

# run_platform PLATFORM: the platform's list, into $top/PLATFORM/results
# (and .../first: the first outcome of flaky tests that were retried)
run_platform() {
	local p=$1 list baseline vm ignore out boot
	read -r list baseline vm ignore <<<"$(plat_files "$p")"
	[ -f "$list" ] || die "no test list $list"
	[ -f "$baseline" ] || baseline=/dev/null
	out=$top/$p
	mkdir -p "$out"
	# which source the kernel was built from (build.sh), for the record
	# and for coverage.sh
	cp "$BUILD/$variant/.ks-rev" "$out/kernel-rev" 2>/dev/null || true
	selected "$p" >"$out/all"
	: >"$out/first"
	: >"$out/extra"
	: >"$out/results"
	: >"$out/times"
	[ -s "$out/all" ] || { log "$p: no test matches '$filter'"; return 0; }
	cut -d'|' -f1 "$out/all" | sort | uniq -d | grep . && die "duplicate test names in $list"
	if [ "$repeat" -gt 1 ]; then
		awk -F'|' -v n="$repeat" 'BEGIN { OFS = "|" }
			{ t = $1; for (i = 1; i <= n; i++) { $1 = t "~" i; print } }' \
			"$out/all" >"$out/all.new"
		mv "$out/all.new" "$out/all"
	fi
	cp "$out/all" "$out/todo"
	: >"$out/results"
	boot=0
	run_boots
	# Tests that tests/baseline marks flaky (a race in the test itself, see the
	# reason there) and did not pass get one more run, in a fresh boot.  So
	# do tests that hung or crashed under multi-threaded TCG (a platform
	# fault one long run in five): they run again single-threaded.
	# Not with -r: that counts how often they pass.
	[ "$repeat" -gt 1 ] ||
		awk 'FILENAME == ARGV[1] { if ($2 == "flaky") f[$1] = 1; next }
			FILENAME == ARGV[2] { if ($4 ~ /(^| )accel=mttcg( |$)/) m[$1] = 1; next }
			{ split($0, a, "|") }
			(a[1] in f) && a[2] != "pass" && a[2] != "skip" && a[2] != "splat"
			(a[1] in m) && (a[2] == "hang" || a[2] == "crash")' \
			"$baseline" "$out/all" "$out/results" >"$out/first"
	if [ -s "$out/first" ]; then
		log "retrying: $(cut -d'|' -f1 "$out/first" | tr '\n' ' ')"
		awk -F'|' 'BEGIN { OFS = "|" } FILENAME == ARGV[1] { r[$1] = 1; next }
			($1 in r) { sub(/(^| )accel=mttcg/, "", $4); if ($4 == "") $4 = "-"; print }' \
			"$out/first" "$out/all" >"$out/todo"
		awk -F'|' 'FILENAME == ARGV[1] { r[$1] = 1; next } !($1 in r)' "$out/first" "$out/results" >"$out/results.new"
		mv "$out/results.new" "$out/results"
		run_boots
	fi

	[ "$(wc -l <"$out/results")" = "$(wc -l <"$out/all")" ] ||
		die "$(wc -l <"$out/results") results for $(wc -l <"$out/all") tests (see $out)"
}

# Ctrl-C or a kill: stop both platforms' VMs too.  The VM scripts run in
# the background, so they ignore SIGINT, and the subshells between them
# and this script may be gone already (a terminal's Ctrl-C reaches them
# too): the emulators are stopped by the pids their VM scripts wrote
# (timeout's, which passes the signal on, and QEMU's own), then what is
# left of the process tree.
killtree() {
	local c
	for c in $(pgrep -P "$1"); do killtree "$c"; done
	kill -TERM "$1" 2>/dev/null || true
}
stop_all() {
	local f p
	trap - INT TERM
	for f in "$top"/*/boot*/vm.pid "$top"/*/boot*/qemu.pid; do
		[ ! -s "$f" ] || kill -TERM "$(cat "$f" 2>/dev/null)" 2>/dev/null || true
	done
	for p in "${pids[@]}"; do killtree "$p"; done
	exit 130
}
trap stop_all INT TERM
pids=()
for p in $platforms; do
	# a subshell, so that $! is the pipeline's parent, not sed
	(run_platform "$p" 2>&1 | sed -u "s/^/[$p] /" >&2) &
	pids+=("$!")
done
prc=0
for pid in "${pids[@]}"; do wait "$pid" || prc=1; done
[ "$prc" = 0 ] || die "a platform's run did not finish (see the messages above and $top)"
out=$top
cat "$top"/*/results "$top"/*/extra >"$out/results"
cat "$top"/*/first >"$out/first"
cat "$top"/*/all >"$out/all"
[ -s "$out/all" ] || die "no test matches '$filter'"
baseline=$(mktemp)
trap 'rm -f "$baseline"' EXIT
# A baseline line: "name status # reason ## failure: text", the last two
# optional; text is what the test printed when it failed on the base.
reason_of() { # NAME FILE
	awk -v n="$1" '$1 == n { sub(/ *## failure: .*/, ""); sub(/^[^ ]+ +[^ ]+ *(# *)?/, ""); print; exit }' "$2"
}
failure_of() { # NAME FILE
	awk -v n="$1" '$1 == n && (i = index($0, " ## failure: ")) { print substr($0, i + 13); exit }' "$2"
}
# the gist of a failure text: numbers (values, addresses, line numbers) out
gist() { sed -E 's/0x[0-9a-fA-F]+/N/g; s/[0-9]+/N/g; s/[[:space:]]+/ /g; s/^ //; s/ $//'; }
# same_failure TEXT TEXT: the same gist; guest/run.sh cuts a failure text
# at 160 characters (the baseline's is trimmed), so when one was cut the
# gists are compared as far as both go
same_failure() {
	local a b n
	a=$(gist <<<"$1") b=$(gist <<<"$2")
	if [ ${#1} -ge 159 ] || [ ${#2} -ge 159 ]; then
		n=$((${#a} < ${#b} ? ${#a} : ${#b}))
		a=${a:0:n} b=${b:0:n}
	fi
	[ "$a" = "$b" ]
}
for p in $platforms; do
	read -r _ b _ <<<"$(plat_files "$p")"
	[ ! -f "$b" ] || cat "$b" >>"$baseline"
done

if [ "$write" = 1 ]; then
	for p in $platforms; do
		read -r list b _ <<<"$(plat_files "$p")"
		[ -f "$b" ] || : >"$b"
		{
			echo "# Expected outcome of each test of ${list#"$TOP/"} on the base kernel"
			echo "# (written by scripts/run-tests.sh -k base -w).  name status # reason,"
			echo "# and for a failure \"## failure: \" and what the test printed, which"
			echo "# later runs compare (numbers aside): a different failure is a failure."
			echo "# flaky: passes on the base; if it fails it is run once more (only for tests"
			echo "# that run no code the series changes, with the cause written next to it)."
			echo "# absent: not in the base's selftests (added by the series)."
			# every test of the list; those this run left out (-f) as before
			while IFS='|' read -r name _; do
				st=$(awk -F'|' -v n="$name" '$1 == n { print $2 }' "$top/$p/results")
				if [ -z "$st" ]; then
					grep "^$name " "$b" || true
					continue
				fi
				why=$(reason_of "$name" "$b")
				old=$(awk -v n="$name" '$1 == n { print $2 }' "$b")
				[ "$old" = flaky ] && [ "$st" = pass ] && st=flaky
				# a failure keeps its text, which later runs compare
				text=""
				case $st in pass | flaky | skip | absent) ;; *)
					text=$(awk -F'|' -v n="$name" '$1 == n { print $4 }' "$top/$p/results" | tr -s ' ' | sed 's/^ //; s/ $//') ;;
				esac
				echo "$name $st${why:+ # $why}${text:+ ## failure: $text}"
			done < <(sed -e 's/[[:space:]]*|[[:space:]]*/|/g' -e 's/^[[:space:]]*//' "$list" | grep -v -e '^#' -e '^$')
		} >"$b.new"
		mv "$b.new" "$b"
		log "wrote ${b#"$TOP/"}"
	done
fi

# log_of NAME: "; log: PATH", the guest output of NAME's last run
log_of() {
	local f l=""
	for f in "$top"/*/boot*/"out.$1"; do
		[ -f "$f" ] && l=$f
	done
	echo "${l:+; log: $l}"
}

# lacks_group NAME: for an entry whose parameters say needs=GROUP (a test
# of a group that a kernel may lack, e.g. a held fix: make test-unheld),
# GROUP if the kernel its platform ran was built from a tree without that
# group's commits; nothing otherwise.  Such an entry's test is absent from
# that kernel's own selftests and counts as skipped, not failed; run with
# another variant's selftests (KS_TESTS_FROM) it runs, and is judged.
lacks_group() {
	local g rev f
	g=$(awk -F'|' -v n="$1" '$1 == n { k = split($4, p, " ")
		for (i = 1; i <= k; i++) if (p[i] ~ /^needs=/) print substr(p[i], 7) }' "$out/all" | head -1)
	[ -n "$g" ] || return 0
	git -C "$SRC" rev-parse -q --verify "grp/$g" >/dev/null || die "$1: needs=$g, but the tree has no group $g"
	for f in "$top"/*/kernel-rev; do
		rev=$(cat "$f" 2>/dev/null) || continue
		rev=${rev%%+*}
		git -C "$SRC" merge-base --is-ancestor "grp/$g" "$rev" 2>/dev/null || { echo "$g"; return 0; }
	done
}

pass=0 fail=0 skip=0 retried=0 i=0
echo "TAP version 13"
echo "1..$(wc -l <"$out/results")"
while IFS='|' read -r name st secs detail; do
	i=$((i + 1))
	# NAME~K (-r): the K-th run of NAME
	exp=$(awk -v n="${name%~*}" '$1 == n { print $2 }' "$baseline")
	[ "$exp" = flaky ] && exp=pass
	[ "$exp" = absent ] && exp=""  # added by the series: judged like a new test
	first=$(awk -F'|' -v n="$name" '$1 == n { print "; first run: " $2 " (" $4 ")" }' "$out/first")
	case $st in
	pass)
		pass=$((pass + 1))
		if [ -n "$first" ]; then
			retried=$((retried + 1))
			echo "ok $i $name # passed on retry, ${secs}s$first"
		else
			echo "ok $i $name # ${secs}s${exp:+ (base: $exp)}"
		fi ;;
	skip)
		if [ "$exp" = pass ]; then fail=$((fail + 1)); echo "not ok $i $name # skipped, but passes on the base"
		elif [ -z "$exp" ]; then fail=$((fail + 1)); echo "not ok $i $name # skipped ($detail), but not on the base: a new test must run"
		else skip=$((skip + 1)); echo "ok $i $name # SKIP $detail"; fi ;;
	*)
		if [ "$st" = absent ] && [ "$write" = 1 ]; then
			skip=$((skip + 1)); echo "ok $i $name # SKIP not in this kernel's selftests"
		elif [ "$st" = absent ] && lacks=$(lacks_group "${name%~*}") && [ -n "$lacks" ]; then
			skip=$((skip + 1)); echo "ok $i $name # SKIP needs group $lacks, which this kernel does not have"
		elif [ "$st" = "$exp" ] && [ "$st" != splat ]; then
			# a known failure of the base: TODO if it fails the same way
			was=$(failure_of "${name%~*}" "$baseline")
			if [ -n "$was" ] && ! same_failure "$detail" "$was"; then
				fail=$((fail + 1))
				echo "not ok $i $name # ${st^^}, but not as on the base: '$detail' (base: '$was'), ${secs}s$(log_of "$name")"
			else
				skip=$((skip + 1))
				echo "not ok $i $name # TODO $st, as on the base${was:+ (the same failure)}: $detail$(log_of "$name")"
			fi
		else
			fail=$((fail + 1))
			echo "not ok $i $name # ${st^^} ($detail, ${secs}s)$first$(log_of "$name")"
			for f in "$top"/*/boot*/"splat.$name"; do
				[ -f "$f" ] && sed 's/^/#   /' "$f"
			done
		fi ;;
	esac
done <"$out/results"
echo "# results and guest logs: $out"
# the tests nearest their limits (work seconds: guest/run.sh), and the
# host's speed per boot, kept in the results (PLATFORM/times,
# bootN/hostspeed.log)
for p in $platforms; do
	[ -s "$top/$p/times" ] || continue
	echo "# $p: the slowest tests, as a share of their limits (work s / limit s, guest s, speed factor):"
	awk -F'|' '$4 > 0 { printf "%d\t#   %s %d%% (%d / %d s, %d guest s, x%.2f)\n", 1000 * $3 / $4, $1, 100 * $3 / $4, $3, $4, $2, $5 / 1000 }' \
		"$top/$p/times" | sort -rn | head -5 | cut -f2- || true
	s=$(cat "$top/$p"/boot*/hostspeed.log 2>/dev/null | sort -n | awk '{ v[NR] = $1 }
		END { if (NR) printf "%d-%d ms, median %d, in %d runs", v[1], v[NR], v[int((NR + 1) / 2)], NR }' || true)
	[ -z "$s" ] || echo "# $p: the host's speed loop took $s (reference $host_ref_ms ms)"
done
if [ "$repeat" -gt 1 ]; then
	echo "# passes per test, of $repeat runs:"
	awk -F'|' '{ t = $1; sub(/~[0-9]+$/, "", t); n[t]++; p[t] += $2 == "pass"
		if (!(t in o)) o[t] = ++k; if ($2 != "pass") w[t] = w[t] " " $2 }
		END { for (t in o) printf "%d\t# %s: %d of %d passed%s\n", o[t], t, p[t], n[t], w[t] }' \
		"$out/results" | sort -n | cut -f2-
fi
echo "# passed on retry (flaky, counted as passed): $retried"
t_run=$(($(date +%s) - t_run))
echo "result: $pass passed, $fail failed, $skip skipped in $((t_run / 60)) min $((t_run % 60)) s" >>"$top/stamp"
echo "$pass passed, $fail failed, $skip skipped"
[ "$fail" = 0 ]
