#!/usr/bin/env bash
# deb-test.sh [VARIANT]: boot the kernel of make deb's packages (default
# patched, DEB_FLAVOUR as make deb) on the AMD platform (QEMU TCG, SVM with
# NPT) and run KVM selftests on it with its own modules; make deb-test
# runs it.  The kernel is the package's /boot/vmlinuz; the initramfs is
# made here from the package's modules (those modprobe needs for kvm_amd),
# busybox, and the KVM selftests of the packages' source (built here
# against their headers) with the libraries they link.  kvm and kvm_amd
# are loaded as Debian loads them: modprobe, no options (Debian's packages
# set none); a test's list parameters (bases/BASE/tests/list) are then
# written to /sys/module/*/parameters, as an administrator would, and a
# test that needs one that cannot change at run time fails.
# DEB_TESTS: list entry names (default: dirty_log_test's three modes,
# nx_huge_pages_test.reboot, cr0_wp_test).  Prints each result as it
# comes, then "N passed, N failed, N skipped" (a selftest's own skip, exit
# 4, is a skip); the console stays in
# $KS_CACHE/BASE/deb/VARIANT-FLAVOUR/boot/console.log, the modules'
# parameters at load in boot/params.  DEB_TIMEOUT: seconds before QEMU is
# stopped (default 7200; not a verdict on speed: a boot that hangs).
set -euo pipefail
. "$(dirname "$0")/lib.sh"
need qemu-system-x86_64 dpkg-deb modprobe depmod cpio gzip busybox ldd timeout file
[ $# -le 1 ] || die "usage: deb-test.sh [VARIANT]  (DEB_FLAVOUR, DEB_TESTS)"
variant=${1:-patched}
flavour=${DEB_FLAVOUR:-cloud-amd64}
out=$CACHE/deb/$variant-$flavour
read -ra tests <<<"${DEB_TESTS:-dirty_log_test.dirty-log dirty_log_test.clear-log dirty_log_test.dirty-ring nx_huge_pages_test.reboot cr0_wp_test}"
[ ${#tests[@]} -gt 0 ] || die "DEB_TESTS names no test"
mapfile -t img < <(find "$out" -maxdepth 1 -name 'linux-image-*.deb' ! -name '*-dbg_*')
[ ${#img[@]} = 1 ] || die "no single linux-image package in $out (found ${#img[@]}): make deb VARIANT=$variant DEB_FLAVOUR=$flavour first"
# the selftests of the packages' source, against their headers
sdir=$out/selftests
{ [ -f "$out/build/.config" ] && [ -f "$out/src/.ks-rev" ]; } || die "no build of make deb in $out"
if ! cmp -s "$out/src/.ks-rev" "$sdir/.ks-rev"; then
	rm -rf "$sdir"
	log "building the KVM selftests of $out/src"
	make -s -C "$out/src" O="$out/build" headers >/dev/null
	make -s -C "$out/src/tools/testing/selftests/kvm" -j"$(nproc)" CC="ccache gcc" OUTPUT="$sdir" \
		KHDR_INCLUDES="-isystem $out/build/usr/include" >"$out/selftests.log" 2>&1 ||
		{ tail -20 "$out/selftests.log" >&2; die "the selftests did not build (all in $out/selftests.log)"; }
	cp "$out/src/.ks-rev" "$sdir/.ks-rev"
fi
busybox=$(command -v busybox)
file -L "$busybox" 2>/dev/null | grep -q 'statically linked' || die "$busybox is not static (scripts/setup.sh installs busybox-static)"

# the tests' commands and runtime parameters, from the list
job=$(mktemp)
root=$(mktemp -d "$CACHE/deb-initrd.XXXXXX")
qpid=""
# shellcheck disable=SC2317 # run by the traps
cleanup() {
	[ -z "$qpid" ] || kill -TERM "$qpid" 2>/dev/null || true
	[ -z "$qpid" ] || wait "$qpid" 2>/dev/null || true
	rm -rf "$job" "$root"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM HUP
bins=()
for t in "${tests[@]}"; do
	line=$(awk -F'|' -v n="$t" '{ x = $1; gsub(/[[:space:]]/, "", x) } x == n' "$TESTS/list")
	[ -n "$line" ] || die "DEB_TESTS: no entry '$t' in $TESTS/list"
	IFS='|' read -r _ mmu _ params cmd <<<"$line"
	[ "$(echo "$mmu" | tr -d ' ')" = tdp ] || die "DEB_TESTS: $t runs with npt=0, which cannot change at run time"
	cmd=$(echo "$cmd" | sed 's/^ *//; s/ *$//')
	{
		echo "echo '>>> $t: $cmd'"
		echo "ok=1; restore=''"
		for p in $params; do
			case $p in
			group=* | needs=* | -) ;;
			hugepages=*)
				echo "restore=\"\$restore echo \$(cat /proc/sys/vm/nr_hugepages) >/proc/sys/vm/nr_hugepages;\""
				echo "echo ${p#hugepages=} >/proc/sys/vm/nr_hugepages" ;;
			kvm.* | vendor.*)
				m=kvm
				[ "${p%%.*}" = kvm ] || m=kvm_amd
				n=${p#*.}
				f=/sys/module/$m/parameters/${n%%=*}
				echo "if [ -w $f ]; then restore=\"\$restore echo \$(cat $f) >$f;\"; echo ${n#*=} >$f; else echo '$m.${n%%=*} cannot be set at run time'; ok=0; fi" ;;
			*) die "DEB_TESTS: $t has a parameter this script cannot set: $p" ;;
			esac
		done
		echo "t0=\$(date +%s); rc=1; [ \$ok = 0 ] || { (cd /ks/selftests && $cmd); rc=\$?; }"
		echo "echo \"ks-deb-result: $t \$rc \$((\$(date +%s) - t0))\""
		echo "eval \"\$restore\""
	} >>"$job"
	read -ra w <<<"$cmd"
	for x in "${w[@]}"; do
		if [ -f "$sdir/${x#./}" ] && [ -x "$sdir/${x#./}" ]; then bins+=("${x#./}"); fi
	done
done
[ ${#bins[@]} -gt 0 ] || die "DEB_TESTS: no selftest binary found in $sdir"

log "unpacking ${img[0]##*/}"
pkg=$out/root
rm -rf "$pkg"
mkdir -p "$pkg"
dpkg-deb -x "${img[0]}" "$pkg"
krel=$(basename "$(find "$pkg/lib/modules" -mindepth 1 -maxdepth 1 -type d | head -1)")
vmlinuz=$pkg/boot/vmlinuz-$krel
[ -f "$vmlinuz" ] || die "the package has no /boot/vmlinuz-$krel"
[ -f "$pkg/lib/modules/$krel/modules.dep" ] || depmod -b "$pkg" "$krel"

# the initramfs: busybox, the modules kvm_amd needs, the selftests and
# their libraries
mkdir -p "$root"/{bin,proc,sys,dev,tmp,ks/selftests}
cp "$busybox" "$root/bin/busybox"
mods=$(modprobe -d "$pkg" -S "$krel" --show-depends kvm_amd | awk '$1 == "insmod" { print $2 }')
[ -n "$mods" ] || die "modprobe finds no kvm_amd in the package"
for m in $mods; do
	mkdir -p "$root/$(dirname "${m#"$pkg"}")"
	cp "$m" "$root/${m#"$pkg"}"
	echo "${m#"$pkg"}" >>"$root/ks/modules"
done
for b in "${bins[@]}"; do
	mkdir -p "$root/ks/selftests/$(dirname "$b")"
	cp "$sdir/$b" "$root/ks/selftests/$b"
	for l in $(ldd "$sdir/$b" | grep -o '/[^ ]*'); do
		mkdir -p "$root$(dirname "$l")"
		cp -L "$l" "$root$l"
	done
done
cp "$job" "$root/ks/job.sh"
cat >"$root/init" <<'INIT'
#!/bin/busybox sh
/bin/busybox --install -s /bin
export PATH=/bin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
mount -t tmpfs tmp /tmp
mkdir -p /dev/hugepages /sys/kernel/debug
mount -t debugfs debugfs /sys/kernel/debug
mount -t hugetlbfs hugetlbfs /dev/hugepages
echo "ks-deb: kernel $(uname -r)"
for m in $(cat /ks/modules); do insmod "$m" || echo "ks-deb: insmod $m failed"; done
for m in kvm kvm_amd; do
	for p in /sys/module/$m/parameters/*; do echo "ks-deb-param: $m.${p##*/}=$(cat "$p")"; done
done
. /ks/job.sh
dmesg | sed 's/^/ks-dmesg: /'
echo "ks-deb: done"
poweroff -f
INIT
chmod +x "$root/init"
initrd=$out/initrd.gz
(cd "$root" && find . | cpio -o -H newc --quiet) | gzip -1 >"$initrd"
boot=$out/boot
mkdir -p "$boot"
rm -f "$boot/report.txt"
: >"$boot/results"
log "booting $krel ($(du -h "$initrd" | cut -f1) initramfs) on the AMD platform: ${tests[*]}"
log "console in $boot/console.log"
# no host-speed limit: not a CI step; a boot that stops is for Ctrl-C
timeout -k 10 "${DEB_TIMEOUT:-7200}" qemu-system-x86_64 -accel tcg,thread=single -cpu max -smp 2 -m 6144 \
	-nodefaults -no-reboot -display none -kernel "$vmlinuz" -initrd "$initrd" \
	-append "console=ttyS0 panic=-1 loglevel=5 clocksource=tsc tsc=reliable" \
	-chardev "file,id=con,path=$boot/console.log" -serial chardev:con </dev/null >"$boot/qemu.log" 2>&1 &
qpid=$!
# show_results: the results on the console not shown yet, as TAP lines,
# printed and kept in boot/results, the one place a result is judged (a
# selftest's own skip, KSFT_SKIP = 4: e.g. an option Debian does not set,
# is a skip, not a pass)
seen=0
show_results() {
	local n
	n=$(grep -c '^ks-deb-result:' "$boot/console.log" 2>/dev/null || true)
	[ "${n:-0}" -gt "$seen" ] || return 0
	grep '^ks-deb-result:' "$boot/console.log" | tr -d '\r' | sed -n "$((seen + 1)),${n}p" |
		while read -r _ name rc secs; do
			case $rc in
			0) echo "ok $name # ${secs}s" ;;
			4) echo "ok $name # SKIP (the test's own skip: see the console)" ;;
			*) echo "not ok $name # rc $rc, ${secs}s" ;;
			esac
		done | tee -a "$boot/results"
	seen=$n
}
# progress: each result as it comes, and those of the last seconds
while kill -0 "$qpid" 2>/dev/null; do
	sleep 5
	show_results
done
rc=0
wait "$qpid" || rc=$?
qpid=""
show_results
grep -q '^ks-deb: done' "$boot/console.log" || die "the VM ended before the tests did (QEMU status $rc); see $boot/console.log"
tr -d '\r' <"$boot/console.log" >"$boot/console.txt"
grep '^ks-deb-param:' "$boot/console.txt" | sed 's/^ks-deb-param: /  /' >"$boot/params"
skip=$(grep -c '^ok .* # SKIP' "$boot/results" || true)
pass=$(($(grep -c '^ok ' "$boot/results" || true) - skip))
fail=$(grep -c '^not ok ' "$boot/results" || true)
[ $((pass + skip + fail)) = ${#tests[@]} ] || { fail=$((${#tests[@]} - pass - skip)); log "some tests gave no result"; }
if grep '^ks-dmesg:' "$boot/console.txt" | "$TOP/scripts/splat.sh" /dev/stdin; then
	log "a splat in the kernel's log (above)"
	fail=$((fail + 1))
fi
log "kvm and kvm_amd parameters at load: $boot/params"
# what make report's reader needs, from this run alone
{
	stamp "scripts/deb-test.sh $variant (DEB_FLAVOUR=$flavour)"
	echo "kernel: $krel from ${img[0]##*/}, sha256 $(sha256sum "${img[0]}" | cut -d' ' -f1)"
	echo "modules loaded: $(sed 's#.*/##' "$root/ks/modules" | paste -sd' ' -), no options"
	echo
	cat "$boot/results"
	echo "$pass passed, $fail failed, $skip skipped"
} >"$boot/report.txt"
echo "$pass passed, $fail failed, $skip skipped"
[ "$fail" = 0 ]
