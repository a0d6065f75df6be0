#!/usr/bin/env bash
# splat.sh LOG...: exit 0 (and print them) if the log holds a kernel splat:
# WARN, BUG, oops, lockdep or KASAN report, hung task, soft lockup.
set -euo pipefail
pat='WARNING:|BUG:|Oops|kernel BUG|general protection fault|possible circular locking|possible recursive locking|inconsistent lock state|suspicious RCU usage|KASAN:|UBSAN:|INFO: task .* blocked|soft lockup|hard LOCKUP|Kernel panic'
# sysrq dumps asked for by the harness itself are not splats.
found=$(grep -v -e 'sysrq: ' "$@" | grep -E "$pat" | head -20 || true)
[ -n "$found" ] || exit 1
echo "$found" >&2
