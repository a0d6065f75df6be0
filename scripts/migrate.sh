#!/usr/bin/env bash
# migrate.sh [-p amd|intel] [-f REGEX] [-n] [-h]: the live-migration check
# on the base and on the patched kernel (make migrate; PLATFORM=intel
# make migrate for Intel).  amd: the migrate.* entries of tests/list
# (guest/migrate/l1-migrate.sh: QEMU live-migrates a Linux guest that checks its
# own pages, twice, in dirty-bitmap and dirty-ring mode, and with NX huge
# pages and hugetlbfs) with run-tests.sh on each kernel.  intel: the bitmap
# (PML) and ring modes in the Intel VM (Bochs), which gets QEMU, its
# libraries and SeaBIOS in its initramfs (KS_BOCHS_PUT) and boots with
# noxsave (Bochs' XSAVE emulation corrupts the L2 otherwise; docs/platforms.md).
# Then prints, per test and hop, QEMU's figures for both kernels:
# migration time, downtime, dirty-sync rounds.  Fails if a test fails on
# either kernel.  -f picks entries (amd; default 'migrate\..*'); -n checks
# and exits.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
plat=${PLATFORM:-amd} filter='migrate\..*' check=0
while getopts p:f:nh o; do
	case $o in
	p) plat=$OPTARG ;; f) filter=$OPTARG ;; n) check=1 ;; h) help ;;
	*) die "usage: migrate.sh [-p amd|intel] [-f regex] [-n]" ;;
	esac
done
case $plat in
amd) "$TOP/scripts/run-tests.sh" -k patched -p amd -f "$filter" -n ;;
intel) need bochs-bin qemu-system-x86_64 ;;
*) die "-p (PLATFORM) wants amd or intel, not '$plat'" ;;
esac
[ "$check" = 0 ] || exit 0
for v in base patched; do
	[ -f "$BUILD/$v/migrate/initrd.gz" ] || die "no $v build with the migration guest (make build build-base)"
done

# intel_run VARIANT MODE DIR: l1-migrate.sh MODE in the Intel VM
intel_run() {
	local b=$BUILD/$1 f firm
	firm=$(for f in /usr/share/seabios /usr/share/qemu/linuxboot_dma.bin \
		/usr/share/qemu/linuxboot.bin /usr/share/qemu/kvmvapic.bin; do
		[ ! -e "$f" ] || echo "$f"; done)
	rm -rf "$3"
	mkdir -p "$3"
	# shellcheck disable=SC2016 # $KS_KDIR and $KS_TOP are the guest's
	# nosoftlockup: Bochs runs the L2 so slowly that its clock jumps past
	# the soft-lockup threshold while its vCPU thread waits ("soft lockup -
	# CPU#0 stuck for 22s" on a source, in the second hop)
	printf '%s\n' 'for m in virt/lib/irqbypass arch/x86/kvm/kvm arch/x86/kvm/kvm-intel; do insmod "$KS_KDIR/$m.ko" || exit 1; done' \
		"MIG_L2_ARGS=nosoftlockup bash \"\$KS_TOP/guest/migrate/l1-migrate.sh\" $2 2" >"$3/mjob.sh"
	KS_BOCHS_CMDLINE="clearcpuid=avx512f noxsave" \
	KS_BOCHS_PUT="$(command -v qemu-system-x86_64) $firm $b/arch/x86/boot/bzImage $b/migrate/initrd.gz $TOP/guest/migrate/l1-migrate.sh" \
		"$TOP/scripts/vm-intel.sh" -k "$1" -t 3000 -o "$3" -- "bash /ks/out/mjob.sh"
}

rc=0
# the figures and where they come from, kept for make report
runs=$CACHE/results/migrate-runs
mkdir -p "$runs"
rec=$runs/$(date -u +%Y%m%dT%H%M%S).$plat
record_open "$rec"
stamp "PLATFORM=$plat make migrate (migrate.sh -p $plat -f $filter)" >"$rec.part"
for v in base patched; do
	mkdir -p "$CACHE/results/$v-migrate"
	log "$v kernel"
	case $plat in
	amd) KS_RUN=migrate "$TOP/scripts/run-tests.sh" -k "$v" -p amd -f "$filter" || rc=1 ;;
	intel)
		for m in bitmap ring; do
			# not in $v-migrate, which run-tests.sh -k $v remakes
			if intel_run "$v" "$m" "$CACHE/results/$v-migrate-intel/$m" >"$CACHE/results/$v-migrate-intel.$m.log" 2>&1; then
				log "$v intel.migrate.$m: pass"
			else
				rc=1
				log "$v intel.migrate.$m: FAIL (see $CACHE/results/$v-migrate-intel/$m/console.log)"
			fi
		done ;;
	esac
done
echo
{
echo "| test | hop | kernel | time | downtime | dirty-sync rounds | sent |"
echo "| --- | --- | --- | --- | --- | --- | --- |"
for v in base patched; do
	# this platform's runs only; the Intel console's lines end in CR
	case $plat in
	amd) files=("$CACHE/results/$v-migrate/amd"/boot*/out.migrate.*) ;;
	intel) files=("$CACHE/results/$v-migrate-intel"/*/console.log) ;;
	esac
	for f in "${files[@]}"; do
		[ -f "$f" ] || continue
		case $f in *-intel/*) t=intel.migrate.$(basename "$(dirname "$f")") ;; *) t=${f##*/out.} ;; esac
		tr -d '\r' <"$f" | sed -n 's/^migrate: hop \([0-9]*\) ([a-z]*): \([0-9]*\) ms, downtime \([0-9]*\) ms, \([0-9]*\) dirty-sync rounds, \([0-9]*\) MiB sent$/\1 \2 \3 \4 \5/p' |
			while read -r hop ms down rounds mib; do
				printf '| %s | %s | %s | %s ms | %s ms | %s | %s MiB |\n' "$t" "$hop" "$v" "$ms" "$down" "$rounds" "$mib"
			done
	done
done | sort -t'|' -k2,2 -k3,3n -k4,4
} | tee "$rec.out"
echo "result: $([ "$rc" = 0 ] && echo "every test passed on both kernels" || echo "a test failed")" >>"$rec.part"
record_close "$rec"
exit "$rc"
