#!/usr/bin/env bash
# Fetch the pinned base (bases/$BASE/base.conf: the package, its version and
# sums) with apt, check both sha256 sums and unpack it once into
# $CACHE/base-src.  With KS_BASE_VERSION (make rebase) another version of
# the package, its .deb checked against the SHA256 in apt's signed index.
# A base whose suite the host's apt sources lack (BASE_SUITE) is fetched
# through a private source list (lib.sh's apt_base), the host's untouched.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
need apt-get apt-cache sha256sum dpkg-deb tar xz

out=$CACHE/base-src
if [ -f "$out/.unpacked-$BASE_VER" ] || [ -d "$SRC/.git" ]; then
	exit 0  # unpacked, or already imported into the git tree
fi
mkdir -p "$DL" "$CACHE" || die "cannot create $DL and $CACHE"
deb=$DL/${BASE_PKG}_${BASE_VER}_all.deb

avail=$(df -Pk "$CACHE" | awk 'NR==2 {print $4}')
[ "$avail" -ge 6000000 ] || die "need 6 GB free in $CACHE for the base, found $((avail / 1024)) MB"

if [ ! -f "$deb" ]; then
	apt_private  # a private suite's lists, its errors shown here
	log "downloading $BASE_PKG=$BASE_VER"
	if ! (cd "$DL" && apt_base download "$BASE_PKG=$BASE_VER" >/dev/null 2>"$DL/apt.log"); then
		refresh="run apt-get update if that list is old"
		[ -z "$BASE_SUITE" ] || refresh="rm $DL/apt-$BASE_SUITE/updated to refresh that list"
		offered=$(base_versions | paste -sd' ' -)
		if ! grep -qx -- "$BASE_VER" < <(tr ' ' '\n' <<<"$offered"); then
			die "apt no longer offers $BASE_PKG $BASE_VER, the base the series is pinned to (offered: ${offered:-none}; $refresh).  Move the series to one of those: make rebase BASE=$BASE BASE_VERSION=VERSION (docs/running.md, \"A new base\")"
		fi
		die "apt offers $BASE_PKG=$BASE_VER but cannot fetch it (network? $refresh); see $DL/apt.log"
	fi
fi
if [ -z "$BASE_DEB_SHA256" ]; then
	BASE_DEB_SHA256=$(apt_base_cache show "$BASE_PKG=$BASE_VER" 2>/dev/null | awk '/^SHA256:/ && !s { s = $2 } END { print s }')
	[ -n "$BASE_DEB_SHA256" ] || die "apt's index has no SHA256 for $BASE_PKG=$BASE_VER"
fi
sum=$(sha256sum "$deb" | cut -d' ' -f1)
if [ "$sum" != "$BASE_DEB_SHA256" ]; then
	rm -f "$deb"
	die "$deb: sha256 $sum, expected $BASE_DEB_SHA256"
fi

tmp=$CACHE/base-src.tmp
rm -rf "$tmp" "$out"
mkdir -p "$tmp"
log "checking and unpacking $BASE_TAR"
dpkg-deb --fsys-tarfile "$deb" | tar -x -C "$tmp" "./$BASE_TAR"
debsum=$sum
sum=$(sha256sum "$tmp/$BASE_TAR" | cut -d' ' -f1)
[ -z "$BASE_TAR_SHA256" ] || [ "$sum" = "$BASE_TAR_SHA256" ] || die "$BASE_TAR: sha256 $sum, expected $BASE_TAR_SHA256"
# what lib.sh pins (BASE_DEB_SHA256, BASE_TAR_SHA256): to move the pin to
# this version, copy these
log "$BASE_PKG $BASE_VER: .deb sha256 $debsum, tarball sha256 $sum"
tar -xJf "$tmp/$BASE_TAR" -C "$tmp"
[ -f "$tmp/$BASE_TOPDIR/Makefile" ] || die "tarball has no $BASE_TOPDIR/Makefile"
ver=$(make -s -C "$tmp/$BASE_TOPDIR" kernelversion 2>/dev/null)
# the package's upstream version: 6.1.192-3 -> 6.1.192, 7.3.4-1~bpo13+1 -> 7.3.4
[ "$ver" = "${BASE_VER%%-*}" ] || die "base Makefile says $ver, expected ${BASE_VER%%-*}"
mv "$tmp/$BASE_TOPDIR" "$out"
rm -rf "$tmp"
touch "$out/.unpacked-$BASE_VER"
log "base unpacked in $out"
