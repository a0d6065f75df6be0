#!/usr/bin/env bash
# series.sh: write mails for git send-email into out/series/<group>/, one
# directory per sub-series with a cover letter, base named, From and
# Signed-off-by from the submitter's git config.  base/ fixes are not sent.
set -euo pipefail
. "$(dirname "$0")/lib.sh"
name=$(git -C "$TOP" config user.name || true)
email=$(git -C "$TOP" config user.email || true)
if [ -z "$name" ] || [ -z "$email" ]; then
	die "set git config user.name and user.email first: they become From and Signed-off-by"
fi
[ -d "$SRC/.git" ] || die "no tree at $SRC (run scripts/mktree.sh)"
outdir=$TOP/out/series
rm -rf "$outdir"
prev=base-fixed
while read -r grp; do
	case $grp in '#'* | '' | base) continue ;; esac
	git -C "$SRC" rev-parse -q --verify "grp/$grp" >/dev/null || continue
	n=$(git -C "$SRC" rev-list --count "$prev..grp/$grp")
	if [ "$n" -gt 0 ]; then
		git -C "$SRC" branch -f "send/$grp" "grp/$grp"
		# Re-author every commit as the submitter and add their sign-off.
		git -C "$SRC" -c user.name="$name" -c user.email="$email" rebase -q \
			--onto "$prev" "$prev" "send/$grp" \
			--exec "git commit -q --amend --no-edit --reset-author -s" >/dev/null
		git -C "$SRC" -c user.name="$name" -c user.email="$email" \
			format-patch -q --cover-letter --thread -o "$outdir/$grp" \
			--base="$(git -C "$SRC" rev-parse base)" --subject-prefix=PATCH \
			"$prev..send/$grp" >/dev/null
		cover=$TOP/patches/$grp/cover
		if [ -f "$cover" ]; then
			# First line: the subject; the rest: the blurb.
			python3 - "$outdir/$grp"/0000-cover-letter.patch "$cover" \
				"Based on Debian's $BASE_PKG $BASE_VER (Linux 6.1.192); the base-commit below is that tree as imported." <<'PY'
import sys
letter, cover = sys.argv[1], open(sys.argv[2]).read().split('\n', 1)
s = open(letter).read()
s = s.replace('*** SUBJECT HERE ***', cover[0].strip())
s = s.replace('*** BLURB HERE ***', (cover[1].strip() if len(cover) > 1 else '') + '\n\n' + sys.argv[3])
open(letter, 'w').write(s)
PY
		fi
		git -C "$SRC" checkout -q -f main
		git -C "$SRC" branch -D "send/$grp" >/dev/null
		log "$grp: $n patches + cover letter in $outdir/$grp (edit the cover letter's subject and blurb)"
	fi
	prev=grp/$grp
done <"$TOP/patches/groups"
