#!/usr/bin/env bash
# splat.sh LOG...: exit 0 (and print them) if the log holds a kernel splat:
# WARN, BUG, oops, lockdep or KASAN report, hung task, soft lockup.
# KS_SPLAT_IGNORE names a file of extended regexes (one a line, # comments)
# for known emulator faults that do not count (tests/splat-ignore.intel).
set -euo pipefail
. "$(dirname "$0")/lib.sh"  # -h
pat='WARNING:|BUG:|Oops|kernel BUG|general protection fault|possible circular locking|possible recursive locking|inconsistent lock state|suspicious RCU usage|KASAN:|UBSAN:|INFO: task .* blocked|soft lockup|hard LOCKUP|detected stalls|Kernel panic'
ign=/dev/null
# Exit 2 on a missing or broken ignore file: callers count that as a splat.
if [ -n "${KS_SPLAT_IGNORE:-}" ]; then
	[ -f "$KS_SPLAT_IGNORE" ] || { echo "error: no file $KS_SPLAT_IGNORE" >&2; exit 2; }
	ign=$(mktemp)
	trap 'rm -f "$ign"' EXIT
	grep -v -e '^#' -e '^[[:space:]]*$' "$KS_SPLAT_IGNORE" >"$ign" || true
	rc=0
	grep -E -f "$ign" </dev/null || rc=$?
	[ "$rc" = 1 ] || { echo "error: bad regex in $KS_SPLAT_IGNORE" >&2; exit 2; }
fi
# sysrq dumps asked for by the harness itself are not splats.
found=$(grep -a -v -e 'sysrq: ' "$@" | grep -v -E -f "$ign" | grep -E "$pat" | head -20 || true)
[ -n "$found" ] || exit 1
echo "$found" >&2
