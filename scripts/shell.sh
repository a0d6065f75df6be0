#!/usr/bin/env bash
# shell.sh [VARIANT]: boot VARIANT's kernel (default patched; base, fast,
# unheld, any built variant) on the AMD platform (QEMU TCG, SVM with NPT)
# with the host's / as the read-only 9p root, load kvm and kvm-amd with
# KVM_PARAMS (the lists' words: "kvm.tdp_mmu=0 vendor.npt=0"), reserve
# HUGEPAGES 2M pages, and give an interactive shell on the guest's serial
# console, in the variant's KVM selftests directory (QEMU on the PATH for a
# nested guest, debugfs at /sys/kernel/debug).  make shell runs it.
# "exit" (or end of input) ends the VM; Ctrl-C stops QEMU; either way the
# VM is gone and the terminal restored when this returns.  What the guest
# wrote (dmesg at the end) stays in $KS_CACHE/BASE/shell/.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
need qemu-system-x86_64
[ $# -le 1 ] || die "usage: shell.sh [VARIANT]  (KVM_PARAMS, HUGEPAGES, KS_CPUS, KS_MEM in the environment)"
variant=${1:-patched}
case ${PLATFORM:-amd} in
amd) ;;
intel) die "PLATFORM=intel: no interactive shell on the Intel platform (Bochs runs its guest from an initramfs with a result channel, not a console to type on); use PLATFORM=amd, or a job with scripts/vm-intel.sh" ;;
*) die "PLATFORM wants amd, not '$PLATFORM'" ;;
esac
variant_rev "$variant" >/dev/null
kdir=$BUILD/$variant
[ -f "$kdir/arch/x86/boot/bzImage" ] || die "no $variant kernel in $kdir: build it first (make build, or scripts/build.sh $variant)"
sdir=$(selftests_of "$variant")
[ -d "$sdir" ] || die "no selftests in $sdir: build them first (scripts/build.sh $variant selftests)"
params=${KVM_PARAMS:-}
for p in $params; do
	[[ $p =~ ^(kvm|vendor)\.[a-z0-9_]+=[^[:space:]]+$ ]] ||
		die "KVM_PARAMS: '$p' is not kvm.PARAM=VALUE or vendor.PARAM=VALUE (vendor: kvm_amd)"
done
huge=${HUGEPAGES:-0}
[[ $huge =~ ^[0-9]+$ ]] || die "HUGEPAGES wants a count of 2M pages, not '$huge'"
vm_paths_ok
lock_cache -s "build-$variant"
dir=$CACHE/shell
mkdir -p "$dir"
rm -f "$dir"/{rc,dmesg,console.log,job.sh,env.sh}
{
	printf 'export KS_VARIANT=%q KS_KDIR=%q KS_TOP=%q\n' "$variant" "$kdir" "$TOP"
	printf 'export KS_SELFTESTS=%q KS_PARAMS=%q KS_HUGE=%q\n' "$sdir" "$params" "$huge"
} >"$dir/env.sh"
cat >"$dir/job.sh" <<'JOB'
# run by guest/init-amd.sh: load KVM, then a shell on the serial console
kvm_p=() ven_p=()
for p in $KS_PARAMS; do
	case $p in kvm.*) kvm_p+=("${p#kvm.}") ;; vendor.*) ven_p+=("${p#vendor.}") ;; esac
done
echo "$KS_HUGE" >/proc/sys/vm/nr_hugepages
insmod "$KS_KDIR/virt/lib/irqbypass.ko" &&
	insmod "$KS_KDIR/arch/x86/kvm/kvm.ko" "${kvm_p[@]}" &&
	insmod "$KS_KDIR/arch/x86/kvm/kvm-amd.ko" "${ven_p[@]}" ||
	echo "kvm did not load with '$KS_PARAMS' (the shell runs anyway: dmesg says why)"
cd "$KS_SELFTESTS" || cd /tmp
export PS1="[$KS_VARIANT guest \w]# " TERM=${KS_TERM:-vt100}
echo "$KS_VARIANT kernel $(uname -r), kvm loaded with: ${KS_PARAMS:-defaults}; selftests in $PWD; exit ends the VM"
setsid -c bash --norc -i </dev/ttyS0 >/dev/ttyS0 2>&1
JOB
cmdline="console=ttyS0 root=$ROOT_DEV rootfstype=9p ro"
cmdline+=" rootflags=trans=virtio,version=9p2000.L,msize=262144,cache=loose"
cmdline+=" init=$TOP/guest/init-amd.sh clocksource=tsc tsc=reliable panic=-1 loglevel=5 ${KS_CMDLINE:-}"
tty=0
[ -t 0 ] && tty=1
restore() { [ "$tty" = 0 ] || stty sane 2>/dev/null || true; }
qpid=""
# shellcheck disable=SC2317 # run by the traps
stop() {
	[ -z "$qpid" ] || kill -TERM "$qpid" 2>/dev/null || true
	[ -z "$qpid" ] || wait "$qpid" 2>/dev/null || true
	restore
}
trap 'stop; exit 130' INT
trap 'stop; exit 143' TERM HUP
log "shell: booting the $variant kernel (KVM_PARAMS: ${params:-none}); exit or Ctrl-C ends it; console copy in $dir/console.log"
# The serial console on this terminal (Ctrl-C stops QEMU: signal=on), and
# a copy in console.log.
qemu-system-x86_64 -accel "tcg,thread=single" -cpu max -smp "${KS_CPUS:-2}" -m "${KS_MEM:-6144}" \
	-nodefaults -no-reboot -display none \
	-kernel "$kdir/arch/x86/boot/bzImage" -append "$cmdline" \
	-fsdev local,id=root,path=/,security_model=none,readonly=on,multidevs=remap \
	-device virtio-9p-pci,fsdev=root,mount_tag=root \
	-fsdev local,id=out,path="$dir",security_model=none \
	-device virtio-9p-pci,fsdev=out,mount_tag=ks_out \
	-chardev "stdio,id=con,signal=on,logfile=$dir/console.log" -serial chardev:con <&0 &
qpid=$!
rc=0
wait "$qpid" || rc=$?
qpid=""
restore
[ -f "$dir/rc" ] || log "shell: the VM ended without the guest's exit (QEMU status $rc); console in $dir/console.log"
log "shell: done; dmesg of the guest in $dir/dmesg"
