#!/usr/bin/env bash
# deb.sh [-w] [VARIANT]: VARIANT's kernel (default patched: the carriers'
# stack, what make test runs) built with Debian's own configuration as
# installable packages, with the kernel's own packaging target
# (bindeb-pkg); make deb runs it.  -w: only the warnings check below.
# The configuration is Debian's (the base's linux-config package, pinned in
# bases/BASE/base.conf and checked by sha256 like the base), flavour
# DEB_FLAVOUR: cloud-amd64 (default: 1119 modules, KVM, KVM_INTEL and
# KVM_AMD built) or amd64 (3853 modules, hours more on 2 cores); docs/deb.md
# says why and how they differ for KVM.  What is changed from Debian's
# file: no debug info (no -dbg package; BTF needs it and pahole) and
# LOCALVERSION; what Debian's file leaves to its own build is set here as
# the kernel's defaults set it (module signing with a key made at build,
# no extra trusted keys, no build salt): config.diff shows every line.
# The packages' version, BASE_PIN+kvmseries.N.gID (N patches after the
# base, ID the tree commit), says what they carry; CARRIES lists the
# patches.  Release (uname -r): 6.1.192-kvmseries-FLAVOUR for patched,
# 6.1.192-kvmseries-VARIANT-FLAVOUR for the others.
# Warnings check: arch/x86/kvm (and virt/kvm) built with the same
# configuration on the base and on VARIANT, and any compiler or objtool
# warning VARIANT has that the base lacks fails the run (Debian sets
# KVM_WERROR, so a compiler warning in KVM already stops the build).
# Everything is in $KS_CACHE/BASE/deb/VARIANT-FLAVOUR/: the packages,
# SHA256SUMS, CARRIES, build.log, warnings.{base,VARIANT}, report.txt.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
need make gcc ccache flex bison bc dpkg-buildpackage dpkg-deb fakeroot xz sha256sum openssl
warn_only=0
if [ "${1:-}" = -w ]; then warn_only=1; shift; fi
[ $# -le 1 ] || die "usage: deb.sh [-w] [VARIANT]  (DEB_FLAVOUR=cloud-amd64|amd64)"
variant=${1:-patched}
flavour=${DEB_FLAVOUR:-cloud-amd64}
[ -n "${CONFIG_PKG:-}" ] ||
	die "BASE=$BASE: bases/$BASE/base.conf names no Debian configuration package (CONFIG_PKG, CONFIG_PIN, CONFIG_DEB_SHA256)"
case $flavour in cloud-amd64 | amd64) ;; *) die "DEB_FLAVOUR wants cloud-amd64 or amd64, not '$flavour'" ;; esac
case $variant in base | patched | fast | unheld | stable | stable-*) ;;
*) die "deb.sh builds base, patched, fast, unheld, stable or stable-GROUP, not '$variant'" ;;
esac
rev=$(variant_rev "$variant")
[ -d "$SRC/.git" ] || die "no tree at $SRC (make tree)"
localversion=-kvmseries-$flavour
[ "$variant" = patched ] || localversion=-kvmseries-$variant-$flavour
out=$CACHE/deb/$variant-$flavour
mkdir -p "$out" "$DL"
avail=$(df -Pk "$CACHE" | awk 'NR==2 {print $4}')
[ "$avail" -ge 12000000 ] || die "need 12 GB free in $CACHE for a Debian-configured build, found $((avail / 1024)) MB"
exec {lockfd}>>"$CACHE/.lock.deb"
flock -n "$lockfd" || die "another make deb runs in $CACHE (lock $CACHE/.lock.deb)"

# Debian's configuration, checked
cdeb=$DL/${CONFIG_PKG}_${CONFIG_PIN}_amd64.deb
if [ ! -f "$cdeb" ]; then
	log "downloading $CONFIG_PKG=$CONFIG_PIN"
	(cd "$DL" && apt_base download "$CONFIG_PKG=$CONFIG_PIN" >/dev/null 2>"$DL/apt-config.log") ||
		die "apt cannot fetch $CONFIG_PKG=$CONFIG_PIN (offered: $(pkg_versions "$CONFIG_PKG" | paste -sd' ' -)); see $DL/apt-config.log"
fi
sum=$(sha256sum "$cdeb" | cut -d' ' -f1)
[ "$sum" = "$CONFIG_DEB_SHA256" ] || { rm -f "$cdeb"; die "$cdeb: sha256 $sum, expected $CONFIG_DEB_SHA256"; }
dpkg-deb --fsys-tarfile "$cdeb" | tar -xO "./usr/src/$CONFIG_PKG/config.amd64_none_$flavour.xz" | xz -dc >"$out/config.debian" ||
	die "$CONFIG_PKG has no config.amd64_none_$flavour.xz"

# src_at DIR REV: the tree's REV as plain files in DIR (no git: the
# version string is only what the configuration says); kept while REV is
src_at() {
	local id old
	id=$(git -C "$SRC" rev-parse "$2")
	old=$(cat "$1/.ks-rev" 2>/dev/null || true)
	[ "$old" != "$id" ] || return 0
	log "unpacking $2 (${id:0:12}) into $1"
	rm -rf "$1"
	mkdir -p "$1"
	git -C "$SRC" archive "$id" | tar -x -C "$1"
	# git archive dates every file at the commit; files that changed
	# since the last unpack (all, if none is known) are made newer than
	# the objects already built from them, so that make rebuilds them
	if git -C "$SRC" cat-file -e "$old^{commit}" 2>/dev/null; then
		(cd "$1" && git -C "$SRC" diff --name-only "$old" "$id" | while read -r f; do
			[ ! -e "$f" ] || touch "$f"; done)
	else
		find "$1" -type f -exec touch {} +
	fi
	echo "$id" >"$1/.ks-rev"
}

# configure DIR SRC: Debian's file with our two changes and the kernel's
# defaults for what it leaves to Debian's build, checked
configure() {
	mkdir -p "$1"
	cp "$out/config.debian" "$1/.config"
	"$2/scripts/config" --file "$1/.config" \
		--set-str LOCALVERSION "$localversion" \
		--disable DEBUG_INFO_DWARF_TOOLCHAIN_DEFAULT --disable DEBUG_INFO_DWARF4 \
		--disable DEBUG_INFO_DWARF5 --enable DEBUG_INFO_NONE \
		--enable MODULE_SIG_ALL --set-str MODULE_SIG_KEY certs/signing_key.pem \
		--set-str SYSTEM_TRUSTED_KEYS "" --set-str BUILD_SALT ""
	mk "$2" "$1" olddefconfig >/dev/null
	! grep -q '^CONFIG_DEBUG_INFO=y' "$1/.config" || die "$1/.config still has DEBUG_INFO"
	grep -qx 'CONFIG_KVM=m' "$1/.config" || die "$1/.config has no KVM module"
}
mk() {
	local s=$1 o=$2
	shift 2
	LOCALVERSION="" nice make -s -C "$s" O="$o" -j"$(nproc)" CC="ccache gcc" "$@"
}

# kvm_warnings SRC DIR FILE: arch/x86/kvm and virt/kvm of SRC built afresh
# in DIR; their compiler and objtool warnings in FILE, with what differs
# between two trees taken out: the source path, line numbers, objtool's
# offsets
kvm_warnings() {
	configure "$2" "$1"
	rm -rf "$2/arch/x86/kvm" "$2/virt/kvm"
	mk "$1" "$2" arch/x86/kvm/ >"$2/kvm.log" 2>&1 || { tail -20 "$2/kvm.log" >&2; die "arch/x86/kvm of $1 did not build with Debian's $flavour configuration"; }
	{ grep -E 'warning:' "$2/kvm.log" || true; } |
		sed -E "s#$1/##g; s/:[0-9]+(:[0-9]+)?:/:/; s/\+0x[0-9a-f]+//g" | sort >"$3"
}

# the sources and what they carry, read while the tree cannot change
(
	lock_cache -s tree
	src_at "$out/src" "$rev"
	src_at "$CACHE/deb/src-base" base-fixed
	n=$(git -C "$SRC" rev-list --count "base-fixed..$(cat "$out/src/.ks-rev")")
	echo "$n" >"$out/src/.ks-count"
	{
		echo "$BASE_NAME with the $n patches up to $rev of bases/$BASE/patches (tree commit $(cut -c1-12 "$out/src/.ks-rev")):"
		git -C "$SRC" log --reverse --format='  %s' "base-fixed..$(cat "$out/src/.ks-rev")"
	} >"$out/CARRIES"
)
src=$out/src
bsrc=$CACHE/deb/src-base
log "warnings check: arch/x86/kvm of base-fixed and $rev with Debian's $flavour configuration"
kvm_warnings "$bsrc" "$CACHE/deb/warn-base-$flavour" "$out/warnings.base"
kvm_warnings "$src" "$out/warn-$variant" "$out/warnings.$variant"
new=$(comm -13 "$out/warnings.base" "$out/warnings.$variant")
[ -z "$new" ] || { echo "$new" >&2; die "arch/x86/kvm: warnings $variant has and the base does not (above; all in $out/warnings.$variant)"; }
log "warnings check: none new ($(wc -l <"$out/warnings.base") on the base, $(wc -l <"$out/warnings.$variant") on $variant)"
[ "$warn_only" = 0 ] || exit 0

obj=$out/build
id=$(cut -c1-12 "$src/.ks-rev")
# N first: a later build of a longer stack sorts after an earlier one
pkgver="$BASE_PIN+kvmseries.$(cat "$src/.ks-count").g$id"
configure "$obj" "$src"
diff "$out/config.debian" "$obj/.config" >"$out/config.diff" || true
rm -f "$out"/*.deb "$out"/*.buildinfo "$out"/*.changes "$out/SHA256SUMS" "$out/report.txt"
log "building $variant ($id) with Debian's $flavour configuration, as packages $pkgver; log in $out/build.log"
start=$(date +%s)
# dpkg-buildpackage runs in $obj and writes the packages into $out
if ! mk "$src" "$obj" KDEB_PKGVERSION="$pkgver" bindeb-pkg >"$out/build.log" 2>&1; then
	tail -30 "$out/build.log" >&2
	die "the package build failed (above; all in $out/build.log)"
fi
secs=$(($(date +%s) - start))
(cd "$out" && sha256sum ./*.deb | sed 's# \./# #' >SHA256SUMS)
krel=$(cat "$obj/include/config/kernel.release")
{
	stamp "scripts/deb.sh $variant (DEB_FLAVOUR=$flavour)"
	echo "kernel release: $krel"
	echo "config: $CONFIG_PKG $CONFIG_PIN config.amd64_none_$flavour; changed: no debug info, LOCALVERSION; set as the kernel's defaults: MODULE_SIG_ALL, MODULE_SIG_KEY, SYSTEM_TRUSTED_KEYS, BUILD_SALT (config.diff)"
	echo "modules: $(find "$obj" -path "$obj/debian" -prune -o -name '*.ko' -print | wc -l)"
	echo "build: $secs s on $(nproc) cores, load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
	echo "arch/x86/kvm and virt/kvm warnings: $(wc -l <"$out/warnings.base") on the base, $(wc -l <"$out/warnings.$variant") on $variant, none new"
	echo "packages (sha256):"
	sed 's/^/  /' "$out/SHA256SUMS"
} >"$out/report.txt"
cat "$out/report.txt"
log "packages in $out"
