#!/usr/bin/env bash
# splat.sh DMESG: exit 0 (and print them) if the log holds a kernel splat:
# WARN, BUG, oops, lockdep or KASAN report, hung task, soft lockup.
set -euo pipefail
pat='WARNING:|BUG:|Oops|kernel BUG|general protection fault|possible circular locking|possible recursive locking|inconsistent lock state|suspicious RCU usage|KASAN:|UBSAN:|INFO: task .* blocked|soft lockup|hard LOCKUP|Kernel panic'
# sysrq dumps asked for by the harness itself are not splats.
grep -v -e 'sysrq: ' "$1" | grep -E -m 20 "$pat" >&2 || exit 1
exit 0
