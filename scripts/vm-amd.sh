#!/usr/bin/env bash
# vm-amd.sh [-k base|patched] [-t secs] [-o dir] [-c cpus] [-m MiB] -- command...
# Boot the variant's kernel in QEMU (TCG, -cpu max: AMD SVM with NPT; or
# ACCEL=kvm for -accel kvm -cpu host on a host with VMX/SVM; ACCEL=mttcg
# for multi-threaded TCG, one host thread per vCPU: vCPUs interleave finely,
# but it hung about one long run in five on this platform; ACCEL=icount
# for single-threaded TCG whose guest clock counts instructions, one a
# nanosecond: a guest's CPU time is then the instructions it retired,
# whatever the host's speed; make bench's dirty runs use it), the host's /
# as a read-only 9p root, run the command (bash) in the guest and exit with
# its status.  The guest's console and dmesg are saved in the -o dir.
# Exit codes: the command's, or 123 the guest died (panic, reboot), 124
# hang (time limit hit, or QEMU killed from outside), 125 no boot, 126
# WARN/BUG/lockdep in the console or dmesg.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
need qemu-system-x86_64 timeout
vm_opts "${KS_CPUS:-2}" "${KS_MEM:-6144}" "$@"
shift "$vm_nopts"
[ $# -gt 0 ] || die "usage: vm-amd.sh [-k variant] [-t secs] [-o dir] -- command..."
variant_rev "$variant" >/dev/null
lock_cache -s "build-$variant"
kdir=$BUILD/$variant
sdir=$(selftests_of "$variant")
[ -f "$kdir/arch/x86/boot/bzImage" ] || die "no kernel in $kdir (run scripts/build.sh $variant)"
vm_paths_ok
[ -n "$dir" ] || dir=$(mktemp -d "$CACHE/vm.XXXXXX")
mkdir -p "$dir"
rm -f "$dir"/{rc,dmesg,console.log,progress,times}

case ${ACCEL:-tcg} in
tcg) accel=(-accel "tcg,thread=single" -cpu max) ;;
mttcg) accel=(-accel "tcg,thread=multi" -cpu max) ;;
icount) accel=(-accel "tcg,thread=single" -icount "shift=0,sleep=off" -cpu max) ;;
kvm)
	[ -w /dev/kvm ] || die "ACCEL=kvm: /dev/kvm missing or not writable"
	grep -qwE 'vmx|svm' /proc/cpuinfo ||
		die "ACCEL=kvm: this host's CPU offers neither VMX nor SVM, so KVM cannot run nested guests; use the default ACCEL=tcg"
	accel=(-accel kvm -cpu host) ;;
*) die "ACCEL must be tcg, mttcg, icount or kvm, not '$ACCEL'" ;;
esac

{
	printf 'export KS_VARIANT=%q KS_KDIR=%q KS_TOP=%q\n' "$variant" "$kdir" "$TOP"
	printf 'export KS_SELFTESTS=%q\n' "$sdir"
} >"$dir/env.sh"
printf '%s\n' "$*" >"$dir/job.sh"

# Guest-side limit first (the job gets sysrq dumps), then QEMU's own.
cmdline="console=ttyS0 root=$ROOT_DEV rootfstype=9p ro"
cmdline+=" rootflags=trans=virtio,version=9p2000.L,msize=262144,cache=loose"
cmdline+=" init=$TOP/guest/init-amd.sh clocksource=tsc tsc=reliable"
cmdline+=" panic=-1 loglevel=5 watchdog_thresh=30 printk.devkmsg=on"
cmdline+=" hung_task_panic=1 softlockup_panic=1 ${KS_CMDLINE:-}"
start=$(date +%s)
rc=0
# QEMU runs in the background, so that a signal to this script (Ctrl-C, a
# caller's kill) runs the trap at once: it stops QEMU by its pid, never by
# pattern.  $dir/vm.pid is the pid to kill from outside (timeout's: it
# passes the signal on); a caller that does (run-tests.sh's watchdog) first
# writes the reason to $dir/killed, and such a VM counts as hung.
rm -f "$dir/qemu.pid" "$dir/vm.pid" "$dir/killed"
# shellcheck disable=SC2317 # run by run_emulator's traps
stop_vm() {
	# (a signal right after the fork, before tpid is set: $! is the job)
	kill -TERM "${tpid:-$!}" 2>/dev/null || true
	[ ! -s "$dir/qemu.pid" ] || kill -TERM "$(cat "$dir/qemu.pid" 2>/dev/null)" 2>/dev/null || true
}
run_emulator "$dir" timeout -k 10 "$((limit + 60))" qemu-system-x86_64 "${accel[@]}" -pidfile "$dir/qemu.pid" \
	-smp "$cpus" -m "$mem" -nodefaults -no-reboot -display none \
	-kernel "$kdir/arch/x86/boot/bzImage" -append "$cmdline" \
	-fsdev local,id=root,path=/,security_model=none,readonly=on,multidevs=remap \
	-device virtio-9p-pci,fsdev=root,mount_tag=root \
	-fsdev local,id=out,path="$dir",security_model=none \
	-device virtio-9p-pci,fsdev=out,mount_tag=ks_out \
	-chardev file,id=con,path="$dir/console.log" -serial chardev:con \
	</dev/null >"$dir/qemu.log" 2>&1
log "vm: $(($(date +%s) - start)) s, console in $dir/console.log"
vm_verdict "$dir" "$dir/qemu.log" QEMU "$rc"
