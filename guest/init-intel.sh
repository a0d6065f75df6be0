#!/bin/bash
# PID 1 of the Intel (Bochs) VM, from the initramfs that scripts/vm-intel.sh
# packs: mount what tests need, run /ks/job.sh, then send $KS_OUT (results,
# test output, dmesg, exit status) to the host over the second serial port
# as a base64 tar between @@OUT-BEGIN and @@OUT-END, and power off.
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
# shellcheck source=guest/protocol.sh
. /ks/protocol.sh
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
mount -t tmpfs tmp /tmp
mount -t tmpfs run /run
mkdir -p /dev/shm /dev/hugepages
mount -t tmpfs shm /dev/shm
mount -t debugfs debugfs /sys/kernel/debug
mount -t hugetlbfs hugetlbfs /dev/hugepages
# Tests map more than 2 GiB of guest memory they never touch.
echo 1 >/proc/sys/vm/overcommit_memory
stty -F /dev/ttyS1 115200 raw -echo 2>/dev/null
export KS_OUT=/ks/out HOME=/tmp TERM=dumb
echo "$KS_INIT_STARTED" >/dev/console
echo "$KS_CLOCK_START $(cut -d' ' -f1 /proc/uptime) s" >/dev/console
cd /tmp || exit 1
# A heartbeat for the host (vm-intel.sh): the guest's clock moves.
(while sleep 5; do echo "@@H $(cut -d' ' -f1 /proc/uptime)" >/dev/ttyS1; done) &
beat=$!
# shellcheck disable=SC1091
. /ks/env.sh
bash /ks/job.sh </dev/null >/dev/console 2>&1
echo $? >"$KS_OUT/rc"
kill "$beat"
wait "$beat" 2>/dev/null
echo "$KS_CLOCK_END $(cut -d' ' -f1 /proc/uptime) s" >/dev/console
dmesg >"$KS_OUT/dmesg"
{
	echo "@@OUT-BEGIN"
	tar -czf - -C "$KS_OUT" . | base64
	echo "@@OUT-END"
} >/tmp/ks-out
# tx_sent: the bytes that ttyS1's UART has sent ("tx:" of port 1 in
# /proc/tty/driver/serial).  A write to the tty returns once the bytes are
# in the kernel's buffer, and closing it does not wait here for the UART,
# so the power must not go before the UART has sent all of it: a large
# output (a dmesg full of an emulator fault's WARNs) takes seconds of the
# guest's time at 115200 baud, and cut short it reads on the host as a
# guest that died before its job finished.
tx_sent() { sed -n 's/^1: .* tx:\([0-9]*\).*/\1/p' /proc/tty/driver/serial 2>/dev/null; }
sent=$(tx_sent)
cat /tmp/ks-out >/dev/ttyS1
echo "$KS_JOB_DONE" >/dev/console
if [ -n "$sent" ]; then
	want=$((sent + $(stat -c %s /tmp/ks-out)))
	# at most 10 minutes of the guest's time
	for _ in $(seq 3000); do
		[ "$(tx_sent)" -lt "$want" ] || break
		sleep 0.2
	done
else
	# no count to read: the time 115200 baud needs, twice over
	sleep $(($(stat -c %s /tmp/ks-out) / 5000 + 2))
fi
# the UART's FIFO and the host's side of the port
sleep 1
poweroff -f
