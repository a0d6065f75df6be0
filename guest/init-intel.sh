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
} >/dev/ttyS1
echo "$KS_JOB_DONE" >/dev/console
# let the serial ports drain before the power goes
sleep 2
poweroff -f
