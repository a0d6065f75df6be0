#!/usr/bin/env bash
# l1-migrate.sh MODE [HOPS]: live-migrate a Linux guest inside the test VM,
# and check that no page was lost.  Runs inside the VM (a tests/list entry,
# KVM loaded by guest/run.sh).  MODE: bitmap (QEMU's dirty bitmap: on this
# kernel KVM_GET_DIRTY_LOG + KVM_CLEAR_DIRTY_LOG) or ring (the dirty ring,
# -accel kvm,dirty-ring-size).  The guest is the kernel under test
# ($KS_KDIR's bzImage) with migrate/pagecheck as /init: it writes and runs
# pages and checks all of them against its own journal every period
# (guest/migrate/pagecheck.c).  QEMU 0 boots it; QEMU N+1 takes it over from QEMU
# N over a unix socket (precopy, bandwidth-limited), HOPS times.  Fails on
# a "verdict BAD" line (a lost page), an oops of the guest's kernel (on a
# destination, lost memory can do that too), a guest that stops
# reporting, or a migration that does not complete, all within MIG_LIMIT
# seconds (540: under the tests/list limit, so that the reason is
# printed).
# Settings (environment): MIG_MEM guest MiB (192), MIG_WORK pagecheck MiB
# (64), MIG_THREADS (2), MIG_RATE page writes per second per thread (250),
# MIG_BW MiB/s (4), MIG_BACKING thp or hugetlb (thp; hugetlb needs
# hugepages= in the list entry), MIG_ROUNDS good verdicts after the boot
# and after each hop (2; on a destination the first line after the
# switchover does not count: its checks may have begun on the source),
# MIG_L2_ARGS more arguments for the guest's kernel.
set -euo pipefail
mode=${1:-}
hops=${2:-2}
case $mode in
bitmap) accel=kvm ;;
ring) accel=kvm,dirty-ring-size=4096 ;;
*) echo "usage: l1-migrate.sh bitmap|ring [HOPS]" >&2; exit 2 ;;
esac
mem=${MIG_MEM:-192} work=${MIG_WORK:-64} threads=${MIG_THREADS:-2}
rate=${MIG_RATE:-250} bw=${MIG_BW:-4} backing=${MIG_BACKING:-thp} rounds=${MIG_ROUNDS:-2}
end=$((SECONDS + ${MIG_LIMIT:-540}))
kernel=$KS_KDIR/arch/x86/boot/bzImage
initrd=$KS_KDIR/migrate/initrd.gz
for f in "$kernel" "$initrd"; do
	[ -f "$f" ] || { echo "missing $f (scripts/build.sh builds it)"; exit 2; }
done
case $backing in
thp) ram=(-m "$mem") ;;
hugetlb) ram=(-m "$mem" -object "memory-backend-file,id=ram,size=${mem}M,mem-path=/dev/hugepages,prealloc=on"
	-machine memory-backend=ram) ;;
*) echo "MIG_BACKING must be thp or hugetlb" >&2; exit 2 ;;
esac
d=$(mktemp -d /tmp/mig.XXXXXX)
pids=()
# QMP ports: port + N for QEMU N; the loopback may still be down
port=$((44400 + RANDOM % 500 * 10))
ip link set lo up 2>/dev/null || busybox ip link set lo up
# The guests' consoles are kept in the job's output folder ($KS_OUT).
# shellcheck disable=SC2317 # run by the trap
cleanup() {
	local f
	if [ ${#pids[@]} -gt 0 ]; then
		kill -9 "${pids[@]}" 2>/dev/null || true
		# gone before guest/run.sh unloads KVM
		wait "${pids[@]}" 2>/dev/null || true
	fi
	[ -d "${KS_OUT:-}" ] || return 0
	for f in "$d"/con*.log; do [ ! -f "$f" ] || cp "$f" "$KS_OUT/migrate-$mode-$backing-${f##*/}"; done
}
trap cleanup EXIT
# The guest's kernel lines, with "(L2 secs)" for "[ secs]": the test
# VM's splat check reads timestamped lines in this output as its own.
l2() { sed 's/\[ *\([0-9]*\.[0-9]*\)\]/(L2 \1)/'; }
# (to stderr: fail may run in a command substitution)
fail() {
	local f
	{
		echo "migrate: FAIL: $*" | l2
		for f in "$d"/con*.log; do echo "--- ${f##*/} (tail)"; tail -15 "$f" | l2; done
	} >&2
	exit 1
}
# qmp N CMD [JSON]: run a QMP command on QEMU N, print its reply (one
# line).  QMP over TCP on the loopback, with bash's /dev/tcp: the Intel VM
# (Bochs) has no Python.  Events before the reply are skipped.
qmp() {
	local fd line t=$((end - SECONDS < 60 ? end - SECONDS : 60))
	[ "$t" -gt 0 ] || fail "QMP $2 to QEMU $1: no time left"
	exec {fd}<>"/dev/tcp/127.0.0.1/$((port + $1))" || fail "QMP: no connection to QEMU $1"
	read -r -t "$t" line <&"$fd" || fail "QMP: no greeting from QEMU $1"
	echo '{"execute": "qmp_capabilities"}' >&"$fd"
	read -r -t "$t" line <&"$fd" || fail "QMP: QEMU $1 did not answer"
	printf '{"execute": "%s", "arguments": %s}\n' "$2" "${3:-"{}"}" >&"$fd"
	while read -r -t "$t" line <&"$fd"; do
		case $line in *'"return"'* | *'"error"'*) break ;; esac
	done
	exec {fd}>&-
	case $line in
	*'"return"'*) echo "$line" ;;
	*) fail "QMP $2 to QEMU $1: ${line:-no reply}" ;;
	esac
}
left() { [ $SECONDS -lt $end ] || fail "$* (MIG_LIMIT reached)"; }
bad='pagecheck: verdict BAD|BUG:|WARNING:|Oops|Kernel panic|general protection'

# start N [ARGS...]: QEMU number N, its console in con N.log
start() {
	local n=$1
	shift
	: >"$d/con$n.log"
	qemu-system-x86_64 -accel "$accel" -cpu qemu64 -smp 1 "${ram[@]}" \
		-nodefaults -no-reboot -display none \
		-kernel "$kernel" -initrd "$initrd" \
		-append "console=ttyS0 rdinit=/pagecheck panic=-1 loglevel=5 ${MIG_L2_ARGS:-} -- $work $threads 1500 $rate" \
		-serial "file:$d/con$n.log" -qmp "tcp:127.0.0.1:$((port + n)),server=on,wait=off" "$@" &
	pids[n]=$!
	# QMP listens once QEMU is set up
	until (: <>"/dev/tcp/127.0.0.1/$((port + n))") 2>/dev/null; do
		kill -0 "${pids[n]}" 2>/dev/null || fail "QEMU $n exited at start"
		left "QEMU $n: no QMP"
		sleep 0.2
	done
}

# verdicts N COUNT: wait for COUNT good verdict lines on QEMU N's console;
# a lost page, an oops of the guest's kernel or a QEMU that exits fails
verdicts() {
	local n=$1 want=$2 b c
	while :; do
		! b=$(grep -m1 -E "$bad" "$d/con$n.log") || fail "QEMU $n: $b"
		c=$(grep -c 'pagecheck: verdict ok' "$d/con$n.log" || true)
		[ "${c:-0}" -ge "$want" ] && return
		kill -0 "${pids[n]}" 2>/dev/null || fail "QEMU $n exited"
		left "QEMU $n: ${c:-0} of $want verdicts"
		sleep 1
	done
}

# KVM's page counters over all VMs: huge pages NX-split, 2M and 4K mappings
kvmstat() {
	local f out=""
	for f in nx_lpage_splits pages_2m pages_4k; do
		out+=" $f=$(cat "/sys/kernel/debug/kvm/$f" 2>/dev/null || echo -)"
	done
	echo "kvm:$out"
}

# field JSON KEY: the first value of KEY in a QMP reply (a number or a
# string; "-" if absent).  query-migrate's keys used here are unique.
field() {
	local v
	v=$(grep -o "\"$2\": *\(\"[^\"]*\"\|[0-9]*\)" <<<"$1" | head -1 | sed 's/^[^:]*: *//; s/"//g')
	echo "${v:--}"
}

echo "migrate: $mode, $hops hops, guest ${mem} MiB ($backing), pagecheck $work MiB x $threads threads x $rate writes/s, link ${bw} MiB/s"
start 0
verdicts 0 "$rounds"
echo "migrate: guest up: $(grep 'pagecheck: verdict' "$d/con0.log" | tail -1); $(kvmstat)"
for hop in $(seq "$hops"); do
	src=$((hop - 1))
	# -incoming defer: migrate-incoming answers once QEMU listens
	start "$hop" -incoming defer
	qmp "$hop" migrate-incoming "{\"uri\": \"unix:$d/mig$hop\"}" >/dev/null
	qmp "$src" migrate-set-parameters "{\"max-bandwidth\": $((bw << 20))}" >/dev/null
	qmp "$src" migrate "{\"uri\": \"unix:$d/mig$hop\"}" >/dev/null
	while :; do
		info=$(qmp "$src" query-migrate)
		st=$(field "$info" status)
		case $st in completed) break ;; failed | cancelled) fail "hop $hop: migration $st: $info" ;; esac
		left "hop $hop: migration not done ($info)"
		sleep 1
	done
	echo "migrate: hop $hop ($mode): $(field "$info" total-time) ms," \
		"downtime $(field "$info" downtime) ms," \
		"$(field "$info" dirty-sync-count) dirty-sync rounds," \
		"$(( $(field "$info" transferred | tr -c '0-9\n' 0) >> 20 )) MiB sent"
	qmp "$src" quit >/dev/null
	while kill -0 "${pids[src]}" 2>/dev/null; do left "QEMU $src did not quit"; sleep 0.2; done
	wait "${pids[src]}" || true
	unset "pids[src]"
	verdicts "$hop" $((rounds + 1))
	echo "migrate: hop $hop: destination: $(grep 'pagecheck: verdict' "$d/con$hop.log" | tail -1); $(kvmstat)"
done
# a late report on a console that was already judged
for f in "$d"/con*.log; do
	! b=$(grep -m1 -E "$bad" "$f") || fail "${f##*/}: $b"
done
echo "migrate: ok, no page lost in $hops hops"
