#!/bin/bash
# guest/run.sh LIST: run inside the VM (see run-tests.sh).  LIST lines are
# "name|mmu|secs|params|command".  Loads kvm + the vendor module with the
# test's parameters (reloading only when they change), runs the command
# under a time limit in the selftests directory and appends
# "name|status|secs|detail" to $KS_OUT/results (docs/protocol.md).  A test still running at its limit
# is a hang: dump task states (sysrq t, l) and KVM's exit counters first.
#
# Limits count work, not the host's seconds: a limit is the guest's seconds
# on the reference machine.  Where the guest's clock follows the host's
# (QEMU TCG; the default), a second of it counts 1/factor second of work,
# factor being how many times slower than on the reference machine the
# host runs a fixed loop now: run-tests.sh measures that on the host every
# 20 s and writes it, in thousandths, to $KS_OUT/hostspeed (never below
# 1000; 1000 without the file).  Where the guest's clock follows its
# instructions (Bochs; KS_WORK_CLOCK=guest), a guest second is a second of
# work.  So a slow or crowded host stretches the limits with it, also in
# the middle of a test.  For the host's watchdog, the test's name, work
# and limit go to $KS_OUT/progress (and to the result channel as "@@P ...")
# every 5 s; each test's times go to $KS_OUT/times: "name|guest secs|work
# secs|limit|max factor".
set -uo pipefail
# shellcheck source=guest/protocol.sh
. "$(dirname "$0")/protocol.sh"
list=$1
res=$KS_OUT/results
cur=""
if grep -qw svm /proc/cpuinfo; then vendor=kvm-amd tdp=npt
elif grep -qw vmx /proc/cpuinfo; then vendor=kvm-intel tdp=ept
else vendor="" tdp=""; fi

load() { # load MMU PARAMS
	local want="$1 $2" p kvm_p=() ven_p=()
	[ "$want" = "$cur" ] && return 0
	rmmod "$vendor" kvm irqbypass 2>/dev/null
	for p in $2; do
		case $p in
		kvm.*) kvm_p+=("${p#kvm.}") ;;
		vendor.*) ven_p+=("${p#vendor.}") ;;
		hugepages=* | cpus=* | accel=* | group=* | needs=* | -) ;;
		*) echo "bad param $p"; return 1 ;;
		esac
	done
	[ "$1" = shadow ] && ven_p+=("$tdp=0")
	[ "$1" = tdp ] && ven_p+=("$tdp=1")
	insmod "$KS_KDIR/virt/lib/irqbypass.ko" || return 1
	insmod "$KS_KDIR/arch/x86/kvm/kvm.ko" "${kvm_p[@]}" || return 1
	insmod "$KS_KDIR/arch/x86/kvm/$vendor.ko" "${ven_p[@]}" || return 1
	# The Intel platform exists for EPT, its A/D bits and PML: a TDP test
	# must have them on unless it turns one off itself (PML needs A/D).
	if [ "$vendor" = kvm-intel ] && [ "$1" = tdp ]; then
		for p in ept eptad pml; do
			case " ${ven_p[*]} " in *" $p=0 "*) continue ;; esac
			[ "$p" = pml ] && case " ${ven_p[*]} " in *" eptad=0 "*) continue ;; esac
			[ "$(cat "/sys/module/kvm_intel/parameters/$p")" = Y ] ||
				{ echo "kvm_intel: $p is off"; rmmod "$vendor" kvm irqbypass; return 1; }
		done
	fi
	cur=$want
}

# result LINE: append to $res; on the Intel platform (no shared directory)
# also send it to the host as it happens, over the result channel.
result() {
	echo "$1" >>"$res"
	[ -z "${KS_CHAN:-}" ] || echo "@@R $1" >"$KS_CHAN"
	sync
}

counters() {
	local f
	for f in exits pf_guest pf_fixed pf_spurious; do
		printf '%s=%s ' "$f" "$(cat "/sys/kernel/debug/kvm/$f" 2>/dev/null)"
	done
}

# The work clock: now_ms, and factor (thousandths) from the host
factor=1000 t=0 t0ms=0 last=0
# now_ms VAR: the time in ms into VAR, with no subshell (a command
# substitution in the once-a-second loop below was seen to fail once in
# bash 5.2 on the Intel guest, "command substitution: syntax error", and
# end the run)
now_ms() { local us=${EPOCHREALTIME/./}; printf -v "$1" %s "${us%???}"; }
speed() {
	local f=1000
	[ "${KS_WORK_CLOCK:-wall}" = guest ] || read -r f 2>/dev/null <"$KS_OUT/hostspeed" || f=1000
	[[ $f =~ ^[0-9]+$ ]] && [ "$f" -ge 1000 ] || f=1000
	factor=$f
}
progress() { # NAME WORK-MS LIMIT
	local line="$1 $(($2 / 1000)) $3 $factor"
	echo "$line" >"$KS_OUT/progress.new" && mv "$KS_OUT/progress.new" "$KS_OUT/progress"
	[ -z "${KS_CHAN:-}" ] || echo "@@P $line" >"$KS_CHAN"
}

hugepages() {
	local p n=0
	for p in $1; do case $p in hugepages=*) n=${p#hugepages=} ;; esac; done
	echo "$n" >/proc/sys/vm/nr_hugepages
}

[ -n "$vendor" ] || echo "ks: no svm/vmx in the VM's CPU: KVM cannot load"
while IFS='|' read -r name mmu secs params cmd; do
	# The previous test's modules go before this test's marker, so that
	# what their unloading prints is "between tests" (run-tests.sh).
	if [ -n "$vendor" ] && [ -n "$cur" ] && [ "$mmu $params" != "$cur" ]; then
		rmmod "$vendor" kvm irqbypass 2>/dev/null
		cur=""
	fi
	result "$name|START"
	progress "$name" 0 "$secs"
	echo "$KS_MARK $name ($mmu, limit ${secs}s): $cmd"
	echo "$KS_MARK $name" >/dev/kmsg
	t0=$(date +%s)
	now_ms t0ms
	if [ -z "$vendor" ] || ! load "$mmu" "$params"; then
		result "$name|fail|0|KVM did not load"; cur=""
		continue
	fi
	hugepages "$params"
	out=$KS_OUT/out.$name
	speed
	# a session of its own: a hang's INT and KILL reach all its processes
	(cd "$KS_SELFTESTS" && exec setsid stdbuf -oL -eL bash -c "$cmd") >"$out" 2>&1 &
	pid=$!
	# The limit is on the work clock (above); the dump comes before the kill.
	work=0 fmax=$factor hung=0 next=0
	now_ms last
	while kill -0 "$pid" 2>/dev/null; do
		sleep 1
		now_ms t
		work=$((work + (t - last) * 1000 / factor))
		last=$t
		if [ "$work" -ge $((secs * 1000)) ]; then
			hung=1
			break
		fi
		speed
		fmax=$((factor > fmax ? factor : fmax))
		if [ "$t" -ge "$next" ]; then
			progress "$name" "$work" "$secs"
			next=$((t + 5000))
		fi
	done
	if [ "$hung" = 1 ]; then
		echo "ks: HANG $name after ${secs}s of work ($(((last - t0ms) / 1000))s of the guest's clock, host speed factor $factor/1000); KVM counters: $(counters)"
		sleep 2
		echo "ks: 2 s later: $(counters)"
		echo t >/proc/sysrq-trigger
		echo l >/proc/sysrq-trigger
		progress "$name" "$work" "$secs"
		kill -INT -- "-$pid" 2>/dev/null
		for _ in 1 2 3 4 5 6 7 8 9 10; do kill -0 "$pid" 2>/dev/null || break; sleep 1; done
		kill -KILL -- "-$pid" 2>/dev/null
	fi
	wait "$pid"
	rc=$?
	[ "$hung" = 0 ] || rc=$KS_RC_HANG
	now_ms t
	work=$((work + (t - last) * 1000 / factor))
	dt=$(($(date +%s) - t0))
	line="$name|$dt|$((work / 1000))|$secs|$fmax"
	echo "$line" >>"$KS_OUT/times"
	[ -z "${KS_CHAN:-}" ] || echo "@@T $line" >"$KS_CHAN"
	cat "$out"
	detail="rc $rc"
	case $rc in
	0) st=pass ;;
	4) st=skip; detail=$(grep -m1 -o 'SKIP.*' "$out" | sed 's/^SKIP[ -]*//' | tr -d '|') ;;
	124 | 137) st=hang ;;
	127) st=absent; detail="no such test in this kernel's selftests" ;;
	*)
		st=fail
		# selftests: "  file.c:line: expr" after the header, message last
		detail=$( (grep -A1 'Test Assertion Failure' "$out" | sed -n 2p
			grep -E '^  [^ 0-9]' "$out" | tail -1) | tr -d '|' | tr -s ' \n' ' ' | cut -c1-160) ;;
	esac
	echo "$KS_MARK $name: $st (rc $rc, ${dt}s)"
	result "$name|$st|$dt|${detail:-rc $rc}"
	echo "$KS_MARK $name: end" >/dev/kmsg
done <"$list"

# The coverage kernel (make coverage, CONFIG_GCOV_KERNEL): arch/x86/kvm's
# counters, which the kernel keeps when the modules are unloaded and adds
# up when they are loaded again, to $KS_OUT/gcov/ by their path below
# arch/x86/kvm, for scripts/coverage.sh.
if [ -d /sys/kernel/debug/gcov ]; then
	# dotglob: the build directory is below ~/.cache
	shopt -s globstar nullglob dotglob
	n=0
	for f in /sys/kernel/debug/gcov/**/arch/x86/kvm/**/*.gcda; do
		d=$KS_OUT/gcov/${f#*/arch/x86/kvm/}
		mkdir -p "${d%/*}"
		cat "$f" >"$d" && n=$((n + 1))
	done
	echo "ks: gcov: the counters of $n files of arch/x86/kvm saved"
fi
