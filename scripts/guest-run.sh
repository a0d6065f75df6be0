#!/bin/bash
# guest-run.sh LIST: run inside the VM (see run-tests.sh).  LIST lines are
# "name|mmu|secs|params|command".  Loads kvm + the vendor module with the
# test's parameters (reloading only when they change), runs the command
# under a time limit in the selftests directory and appends
# "name|status|secs" to $KS_OUT/results.  A test still running at its limit
# is a hang: dump task states (sysrq t, l) and KVM's exit counters first.
set -uo pipefail
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
		hugepages=* | cpus=* | accel=* | -) ;;
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
	echo "ks: ==== $name ($mmu, limit ${secs}s): $cmd"
	echo "ks: ==== $name" >/dev/kmsg
	t0=$(date +%s)
	if [ -z "$vendor" ] || ! load "$mmu" "$params"; then
		result "$name|fail|0|KVM did not load"; cur=""
		continue
	fi
	hugepages "$params"
	out=$KS_OUT/out.$name
	(cd "$KS_SELFTESTS" && exec timeout -s INT -k 10 "$((secs + 5))" stdbuf -oL -eL bash -c "$cmd") >"$out" 2>&1 &
	pid=$!
	# Watch for the limit ourselves so the dump happens before the kill.
	while kill -0 "$pid" 2>/dev/null && [ $(($(date +%s) - t0)) -lt "$secs" ]; do
		sleep 1
	done
	if kill -0 "$pid" 2>/dev/null; then
		echo "ks: HANG $name after ${secs}s; KVM counters: $(counters)"
		sleep 2
		echo "ks: 2 s later: $(counters)"
		echo t >/proc/sysrq-trigger
		echo l >/proc/sysrq-trigger
	fi
	wait "$pid"
	rc=$?
	dt=$(($(date +%s) - t0))
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
	echo "ks: ==== $name: $st (rc $rc, ${dt}s)"
	result "$name|$st|$dt|${detail:-rc $rc}"
	echo "ks: ==== $name: end" >/dev/kmsg
done <"$list"
