#!/usr/bin/env bash
# vm-intel.sh [-k variant] [-t secs] [-o dir] [-c cpus] [-m MiB] -- command...
# The Intel platform: like vm-amd.sh, but the variant's kernel boots in Bochs,
# which emulates a Skylake-X with VMX, EPT, EPT A/D bits, PML and nested
# VMX.  Bochs has no 9p, so the guest gets everything in an initramfs, at
# the same paths as on the host: busybox, bash and the host tools the
# harness uses, the KVM modules, guest/run.sh, the selftests the job
# names, and the files already in the -o dir (the job's input, $KS_OUT).
# While the job runs the guest streams its result lines ("@@R ...") over a
# second serial port; at the end it sends $KS_OUT back over that port.
# -t is host seconds for the job, enforced here (the guest's clock follows
# Bochs' instruction count, not the host's); the boot's time is added.
# The guest's init sends a heartbeat every 5 guest seconds: when the second
# serial port stays silent for KS_BOCHS_STALL host seconds (default 300)
# after init started, the emulated machine has stopped (its clock stands
# still: no timer interrupt is handled on any CPU) and the VM is killed.
# Bochs cannot be told not to reboot: a second boot kills it (a crash).
# Exit codes as vm-amd.sh: the command's, 123 the guest died, 124 hang (time
# limit), 125 no boot, 126 WARN/BUG/lockdep in the console or dmesg; and
# 122 such a stall.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
need bochs-bin xorriso cpio gzip busybox timeout base64 strip ldd
vm_opts "${KS_BOCHS_CPUS:-1}" "${KS_BOCHS_MEM:-2048}" "$@"
shift "$vm_nopts"
[ $# -gt 0 ] || die "usage: vm-intel.sh [-k variant] [-t secs] [-o dir] -- command..."
variant_rev "$variant" >/dev/null
lock_cache -s "build-$variant"
[[ $limit =~ ^[0-9]+$ ]] || die "-t wants seconds, not '$limit'"
[ "$mem" -le 2048 ] || die "Bochs gives a guest at most 2048 MiB, not $mem"
kdir=$BUILD/$variant
sdir=$(selftests_of "$variant")
for f in /usr/share/bochs/BIOS-bochs-latest /usr/share/vgabios/vgabios.bin \
	/usr/lib/ISOLINUX/isolinux.bin /usr/lib/syslinux/modules/bios/ldlinux.c32; do
	[ -f "$f" ] || die "missing $f (run scripts/setup.sh)"
done
[ -f "$kdir/arch/x86/boot/bzImage" ] || die "no kernel in $kdir (run scripts/build.sh $variant)"
grep -q '^CONFIG_BLK_DEV_INITRD=y' "$kdir/.config" ||
	die "the $variant kernel has no initramfs support (rebuild: scripts/build.sh $variant)"
[ -n "$dir" ] || dir=$(mktemp -d "$CACHE/vm.XXXXXX")
mkdir -p "$dir"
rm -rf "$dir"/{rc,dmesg,console.log,chan.log,results,times,progress,bochs.log,boot.iso,initrd,stalled,rebooted}
job="$*"
ips=${KS_BOCHS_IPS:-100000000}

# --- the initramfs -------------------------------------------------------
root=$dir/initrd
mkdir -p "$root"/{proc,sys,dev,tmp,run,ks/out}
# put FILE...: copy host files to the same path in the guest, ELF files
# stripped, with the shared libraries they need.
put() {
	local f d l
	for f; do
		d=$root$f
		[ -e "$d" ] && continue
		mkdir -p "$(dirname "$d")"
		if [ "$(head -c4 "$f" | od -An -c | tr -d ' ')" = '177ELF' ]; then
			strip --strip-debug -o "$d" "$f" 2>/dev/null || cp "$f" "$d"
			chmod --reference="$f" "$d"
			for l in $(ldd "$f" 2>/dev/null | grep -o '/[^ ]*' || true); do put "$l"; done
		else
			cp "$f" "$d"
		fi
	done
}
for a in $(busybox --list-full); do
	mkdir -p "$root/$(dirname "$a")"
	[ -e "$root/$a" ] || ln -s /bin/busybox "$root/$a"
done
rm -f "$root/bin/busybox"
put /bin/busybox
for t in bash timeout stdbuf setpriv; do
	p=$(command -v "$t") || die "missing command '$t'"
	rm -f "$root$p"
	put "$(realpath "$p")"
	[ "$(realpath "$p")" = "$p" ] || ln -sf "$(realpath "$p")" "$root$p"
done
[ -e "$root/bin/bash" ] || ln -s "$(realpath "$(command -v bash)")" "$root/bin/bash"
put /usr/libexec/coreutils/libstdbuf.so
put "$kdir/virt/lib/irqbypass.ko" "$kdir/arch/x86/kvm/kvm.ko" "$kdir/arch/x86/kvm/kvm-intel.ko"
put "$TOP"/guest/run.sh "$TOP"/guest/protocol.sh
# KS_BOCHS_PUT: more host files (absolute paths, directories whole) for
# jobs that need them, e.g. QEMU and its firmware for a nested VMM
for f in ${KS_BOCHS_PUT:-}; do
	case $f in /*) ;; *) die "KS_BOCHS_PUT: '$f' is not an absolute path" ;; esac
	[ -e "$f" ] || die "KS_BOCHS_PUT: no $f"
	if [ -d "$f" ]; then
		while IFS= read -r g; do put "$g"; done < <(find -L "$f" -type f)
	else
		put "$f"
	fi
done
# The selftests the job (or its input files) names, from the variant's
# selftests and from any other build's selftests the job names.
mapfile -t inputs < <(find "$dir" -maxdepth 1 -type f -size -1024k ! -name '*.log' ! -name vm.err)
words=$({ echo "$job"; cat /dev/null "${inputs[@]}"; } | tr -c 'A-Za-z0-9_./-' '\n' | sort -u)
# A job that names another build's selftests (bench.sh: the patched ones, for
# both kernels) does not need the variant's own.
named=$(echo "$job" | grep -o "$BUILD/[a-z0-9-]*/selftests" | sort -u || true)
for s in "$sdir" $named; do
	if [ ! -d "$s" ]; then
		[ "$s" = "$sdir" ] && [ -n "$named" ] && continue
		v=${s#"$BUILD/"}
		die "no selftests in $s (run scripts/build.sh ${v%/selftests} selftests)"
	fi
	while read -r t; do
		if grep -qxF -e "$t" -e "./$t" -e "$s/$t" <<<"$words"; then put "$s/$t"; fi
	done < <(cd "$s" && find . -type f -perm -u+x ! -name '*.sh' | sed 's|^\./||')
	[ ! -f "$s/$ST_ARCH/nx_huge_pages_test.sh" ] || put "$s/$ST_ARCH/nx_huge_pages_test.sh"
done
for f in "${inputs[@]}"; do cp "$f" "$root/ks/out/"; done
{
	printf 'export KS_VARIANT=%q KS_KDIR=%q KS_TOP=%q\n' "$variant" "$kdir" "$TOP"
	# the guest's clock follows Bochs' instructions: a guest second is work
	printf 'export KS_SELFTESTS=%q KS_CHAN=/dev/ttyS1 KS_WORK_CLOCK=guest\n' "$sdir"
} >"$root/ks/env.sh"
printf '%s\n' "$job" >"$root/ks/job.sh"
cp "$TOP/guest/init-intel.sh" "$root/init"
cp "$TOP/guest/protocol.sh" "$root/ks/protocol.sh"
(cd "$root" && find . | cpio -o -H newc --quiet | gzip -1) >"$dir/initrd.gz"
rm -rf "$root"

# --- the boot CD: isolinux, the kernel, the initramfs -------------------
# Bochs' TSC counts instructions, but the CPU model's CPUID says 3.5 GHz and
# the kernel trusts it: its clock would run 35 times slower than Bochs' own
# (ips: instructions per emulated second, which the HPET, the PIT and the
# APIC timer follow).  tsc_early_khz makes all the guest's clocks agree.
# clearcpuid=avx512f: Bochs' AVX-512 state sizes fail the kernel's XSAVE
# consistency check (a boot WARNING); without AVX-512 they pass.
# mem=: Bochs ends RAM 64 KiB below the size asked for, so the last page
# frame is not a multiple of 64; access_tracking_perf_test reads the idle
# page bitmap in 64-page words and fails ("pread from page_idle") when one
# of its pages lies in that last, partial word.  A limit 1 MiB lower ends
# RAM on a 64-page boundary.
cmdline="console=ttyS0,115200 rdinit=/init panic=-1 loglevel=5 printk.devkmsg=on"
cmdline+=" watchdog_thresh=60 tsc_early_khz=$((ips / 1000)) mem=$((mem - 1))M ${KS_BOCHS_CMDLINE-clearcpuid=avx512f} ${KS_CMDLINE:-}"
iso=$dir/iso
mkdir -p "$iso/isolinux"
cp /usr/lib/ISOLINUX/isolinux.bin /usr/lib/syslinux/modules/bios/ldlinux.c32 "$iso/isolinux/"
cp "$kdir/arch/x86/boot/bzImage" "$iso/bzimage"
mv "$dir/initrd.gz" "$iso/initrd.gz"
printf 'default ks\nprompt 0\ntimeout 0\nlabel ks\n  kernel /bzimage\n  append initrd=/initrd.gz %s\n' \
	"$cmdline" >"$iso/isolinux/isolinux.cfg"
xorriso -as mkisofs -quiet -R -J -o "$dir/boot.iso" -b isolinux/isolinux.bin \
	-c isolinux/boot.cat -no-emul-boot -boot-load-size 4 -boot-info-table "$iso" 2>"$dir/xorriso.log" ||
	{ cat "$dir/xorriso.log" >&2; die "could not make the boot CD"; }
rm -rf "$iso"

# --- Bochs ---------------------------------------------------------------
cat >"$dir/bochsrc" <<EOF
config_interface: textconfig
display_library: rfb, options="timeout=0"
memory: guest=$mem, host=$mem
romimage: file=/usr/share/bochs/BIOS-bochs-latest
vgaromimage: file=/usr/share/vgabios/vgabios.bin
cpu: model=${KS_BOCHS_MODEL:-corei7_skylake_x}, count=$cpus, ips=$ips, quantum=${KS_BOCHS_QUANTUM:-16}, reset_on_triple_fault=0, ignore_bad_msrs=1
clock: sync=none, time0=local
pci: enabled=1, chipset=i440fx
ata0-master: type=cdrom, path=$dir/boot.iso, status=inserted
boot: cdrom
com1: enabled=1, mode=file, dev=$dir/console.log
com2: enabled=1, mode=file, dev=$dir/chan.log
sound: waveoutdrv=dummy, waveindrv=dummy, midioutdrv=dummy
speaker: enabled=0
mouse: enabled=0
log: $dir/bochs.log
panic: action=fatal
error: action=ignore
info: action=ignore
debug: action=ignore
EOF
printf 'c\nq\n' >"$dir/bochs.rc"
boot=${KS_BOCHS_BOOT_SECS:-420}
start=$(date +%s)
rc=0
# Result lines reach $dir/results as they come, so that run-tests.sh's
# watchdog sees which test runs.
# chan_results: the result lines the guest sent so far
chan_results() { chan_lines R; }
# chan_lines X: the "@@X ..." lines the guest sent so far (R results, T
# times, P progress)
chan_lines() { { grep -a "^@@$1 " "$dir/chan.log" || true; } | cut -c5- | tr -d '\r'; }
stall=${KS_BOCHS_STALL:-300}
[[ $stall =~ ^[1-9][0-9]*$ ]] || die "KS_BOCHS_STALL wants seconds, not '$stall'"
(
	set +e
	size=0 quiet=0
	while sleep 5; do
		[ -f "$dir/chan.log" ] || continue
		chan_results >"$dir/results.new"
		mv "$dir/results.new" "$dir/results"
		chan_lines T >"$dir/times"
		# progress changes (and its time with it) only when the guest moves
		p=$(chan_lines P | tail -n 1)
		[ -z "$p" ] || [ "$p" = "$(cat "$dir/progress" 2>/dev/null)" ] || echo "$p" >"$dir/progress"
		if [ "$(grep -acF "$KS_INIT_STARTED" "$dir/console.log")" -gt 1 ]; then
			echo "the guest rebooted" >"$dir/rebooted"
			kill -TERM "$(cat "$dir/vm.pid")"
			break
		fi
		grep -aqF "$KS_INIT_STARTED" "$dir/console.log" || continue
		if [ "$(stat -c %s "$dir/chan.log")" != "$size" ]; then
			size=$(stat -c %s "$dir/chan.log") quiet=0
		elif [ $((quiet += 5)) -ge "$stall" ]; then
			echo "no heartbeat from the guest for ${stall}s" >"$dir/stalled"
			kill -TERM "$(cat "$dir/vm.pid")"
			break
		fi
	done
) &
feeder=$!
# Bochs runs in the background, so that a signal to this script runs the
# trap at once: it stops Bochs (through timeout's pid, $dir/vm.pid, which
# passes the signal on) and the feeder, never by pattern.  A caller that
# kills the VM itself (run-tests.sh's watchdog) first writes the reason to
# $dir/killed, and such a VM counts as hung.
rm -f "$dir/killed"
# shellcheck disable=SC2317 # run by run_emulator's traps
stop_vm() {
	kill -TERM "$feeder" 2>/dev/null || true
	kill -TERM "${tpid:-$!}" 2>/dev/null || true
}
run_emulator "$dir" timeout -k 10 "$((limit + boot))" bochs-bin -q -f "$dir/bochsrc" -rc "$dir/bochs.rc" \
	</dev/null >"$dir/bochs.out" 2>&1
kill "$feeder" 2>/dev/null || true
wait "$feeder" 2>/dev/null || true
log "bochs: $(($(date +%s) - start)) s, console in $dir/console.log"
rm -f "$dir/boot.iso" "$dir/results.new"
if [ -f "$dir/chan.log" ] && grep -aq '^@@OUT-END' "$dir/chan.log"; then
	tr -d '\r' <"$dir/chan.log" | sed -n '/^@@OUT-BEGIN/,/^@@OUT-END/p' | sed '1d;$d' |
		base64 -d | tar -xzf - -C "$dir" || log "could not unpack the guest's output"
elif [ -f "$dir/chan.log" ]; then
	chan_results >"$dir/results"
fi
[ ! -f "$dir/rebooted" ] || rm -f "$dir/rc"
vm_verdict "$dir" "$dir/bochs.out" Bochs "$rc" "$TESTS/splat-ignore.intel"
