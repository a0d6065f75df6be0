#!/bin/bash
# PID 1 inside the test VM: the root is the host's / over 9p (read-only); the
# job directory comes over 9p as "ks_out".  Mount what tests need, run
# $KS_OUT/job.sh, save dmesg and the exit status, then reboot (QEMU exits).
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
# shellcheck source=guest/protocol.sh
. "$(dirname "$0")/protocol.sh"
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev 2>/dev/null
mount -t tmpfs tmp /tmp
mount -t tmpfs run /run
mkdir -p /dev/shm /dev/hugepages /tmp/ks_out
mount -t tmpfs shm /dev/shm
mount -t debugfs debugfs /sys/kernel/debug
mount -t hugetlbfs hugetlbfs /dev/hugepages
mount -t 9p -o trans=virtio,version=9p2000.L,msize=262144 ks_out /tmp/ks_out
export KS_OUT=/tmp/ks_out HOME=/tmp TERM=dumb
echo "$KS_INIT_STARTED" >/dev/console
cd /tmp || exit 1
# shellcheck disable=SC1091
. "$KS_OUT/env.sh"
bash "$KS_OUT/job.sh" </dev/null >/dev/console 2>&1
echo $? >"$KS_OUT/rc"
dmesg >"$KS_OUT/dmesg"
sync
umount /tmp/ks_out
echo "$KS_JOB_DONE" >/dev/console
reboot -f
