#!/bin/bash
# nx-params-live.sh (in the guest, from tests/list, in the selftests
# directory): the NX huge page parameters written while a VM runs, as an
# administrator does (set_nx_huge_pages() and the recovery period's
# setter walk the VM list and wake each VM's recovery thread).  Starts
# dirty_log_perf_test, waits for its VM's debugfs folder (not for a
# time), writes nx_huge_pages 0 then 1 and the recovery period 2000 then
# 1000 ms, checks that the VM was still there, and ends with the test.
set -uo pipefail
./dirty_log_perf_test -v 2 -b 64M -i 5 &
p=$!
m=/sys/module/kvm/parameters
until ls -d /sys/kernel/debug/kvm/"$p"-* >/dev/null 2>&1; do
	kill -0 "$p" 2>/dev/null || { echo "the VM's test ended before its VM appeared in debugfs"; exit 1; }
	sleep 0.1
done
echo 0 >"$m/nx_huge_pages" && echo 1 >"$m/nx_huge_pages" &&
	echo 2000 >"$m/nx_huge_pages_recovery_period_ms" &&
	echo 1000 >"$m/nx_huge_pages_recovery_period_ms" || exit 1
ls -d /sys/kernel/debug/kvm/"$p"-* >/dev/null 2>&1 || { echo "the VM ended before the parameters were written"; exit 1; }
echo "parameters written while the VM ran"
wait "$p"
