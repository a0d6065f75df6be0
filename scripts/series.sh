#!/usr/bin/env bash
# series.sh [-h]: write the mails of each group for git send-email into
# out/series/<group>/v<N>/: a cover letter (patches/<group>/cover: first line
# the subject, the rest the text; for a one-patch group the text goes below
# the patch's "---" line instead) and one mail per patch, re-authored as the
# submitter with their Signed-off-by (git config user.name/user.email), with
# To/Cc from the base's scripts/get_maintainer.pl and base-commit
# information.  N is patches/<group>/version (default 1); for N > 1 the
# cover must have a "Changes in v<N>:" section.  base/ fixes and the
# project's own tests (tests/: run by the harness, never posted) are not
# sent.
# A group with a file patches/<group>/hold is written to
# out/series/HELD-<group>/ instead, not to be sent until the hold goes.
# The stable groups (stable*) go to stable@vger.kernel.org as [PATCH 6.1.y], the
# others to the KVM maintainers as [PATCH 6.1].  patches/mainline*/ each hold a
# posting for mainline (written against mainline's source, which cannot be
# built here, so it is not in the tree): out/series/<folder>/v<N>/, [PATCH],
# To the KVM maintainers, Cc kvm@vger.kernel.org and the other lists, no
# base-commit.  Send a group with
#   git send-email out/series/<group>/v<N>/*.patch
# (the To/Cc headers are in the files).
set -euo pipefail
. "$(dirname "$0")/lib.sh"
lock_cache -s tree
[ $# = 0 ] || die "usage: series.sh [-h]"
need git perl python3
name=$(git -C "$TOP" config user.name || true)
email=$(git -C "$TOP" config user.email || true)
if [ -z "$name" ] || [ -z "$email" ]; then
	die "set git config user.name and user.email first: they become From and Signed-off-by"
fi
[ "$email" != kvm-series@invalid ] ||
	die "git config user.email is the repo's neutral identity: set your own (git config user.email you@example.org); it becomes From and Signed-off-by"
[ -d "$SRC/.git" ] || die "no tree at $SRC (run scripts/mktree.sh)"
outdir=$TOP/out/series
rm -rf "$outdir"
g() { git -C "$SRC" "$@"; }
# addrs REGEX OPTION...: one line, comma-separated, of get_maintainer.pl's
# answer for the group's patches (persons with --no-l, lists with --no-m
# --no-r) whose role matches REGEX (! before it: does not match)
addrs() {
	local f files=() re=$1
	shift
	for f in "$dir"/*.patch; do
		case $f in *0000-cover-letter.patch) ;; *) files+=("$f") ;; esac
	done
	(cd "$SRC" && perl scripts/get_maintainer.pl --no-git --no-git-fallback \
		--no-fixes "$@" "${files[@]}") |
		awk -v re="$re" '{ a = $0; sub(/ \(.*\)$/, "", a)
			if ((substr(re, 1, 1) == "!" ? $0 !~ substr(re, 2) : $0 ~ re) && !seen[a]++) print a }' |
		paste -sd, -
}
# The postings before a group: its prerequisite-patch-id lines name them.
posted=()
prev=base-fixed
while read -r grp; do
	case $grp in '#'* | '' | base | tests) continue ;; esac
	g rev-parse -q --verify "grp/$grp" >/dev/null || continue
	n=$(g rev-list --count "$prev..grp/$grp")
	if [ "$n" -gt 0 ]; then
		cover=$TOP/patches/$grp/cover
		[ -f "$cover" ] || die "patches/$grp/cover is missing"
		ver=1
		[ -f "$TOP/patches/$grp/version" ] && ver=$(cat "$TOP/patches/$grp/version")
		[[ $ver =~ ^[1-9][0-9]*$ ]] || die "patches/$grp/version: not a number: '$ver'"
		[ "$ver" = 1 ] || grep -q "^Changes in v$ver:" "$cover" ||
			die "patches/$grp/cover: v$ver needs a 'Changes in v$ver:' section"
		prefix="PATCH 6.1"
		case $grp in stable*) prefix="PATCH 6.1.y" ;; esac
		dir=$outdir/$grp/v$ver
		# patches/GROUP/hold (its first line the reason): a posting that
		# waits (stable-clear-dirty until mainline has its fix); its mails
		# are written apart, so that they are not sent with the others
		if [ -f "$TOP/patches/$grp/hold" ]; then
			dir=$outdir/HELD-$grp/v$ver
			log "$grp is held ($(head -1 "$TOP/patches/$grp/hold")): its mails go to ${dir#"$TOP"/}, not to be sent yet"
		fi
		# The tree is not touched: the mails are re-authored below.
		vopt=()
		[ "$ver" = 1 ] || vopt=(-v "$ver")
		[ "$n" = 1 ] || vopt+=(--cover-letter)
		g -c user.name="$name" -c user.email="$email" \
			format-patch -q --thread "${vopt[@]}" -o "$dir" \
			--base="$(g rev-parse base-fixed)" --subject-prefix="$prefix" \
			"$prev..grp/$grp" >/dev/null
		# To: the KVM maintainers; Cc: the other maintainers, the lists
		kvm=$(addrs 'KVM' --no-l)
		others=$(addrs '!KVM' --no-l)
		lists=$(addrs . --no-m --no-r)
		if [ "${grp#stable}" != "$grp" ]; then
			to="stable@vger.kernel.org" cc="$kvm${others:+,$others},$lists"
		else
			to=$kvm cc="${others:+$others,}$lists"
		fi
		note="Based on Debian's $BASE_PKG $BASE_VER (Linux ${BASE_VER%-*}): the base-commit below is that tree as imported, with $(g rev-list --count base..base-fixed) fixes for its KVM selftests that are not posted (the kernel patches do not need them)."
		if [ ${#posted[@]} -gt 0 ]; then
			note+=" This posting applies on top of, and its prerequisite-patch-id lines are, the postings before it: $(printf '"%s", ' "${posted[@]}" | sed 's/, $//')."
		fi
		posted+=("$(head -1 "$cover")")
		# Cover subject and text; every patch from the submitter, with
		# their sign-off; To/Cc in every mail.
		# git 2.39's format-patch --base computes some prerequisite ids
		# differently from "git patch-id --stable" on the posted patch,
		# which is what b4 matches: write them from the commits instead.
		ids=$(for c in $(g rev-list --reverse "base-fixed..$prev"); do
			g show "$c" | git patch-id --stable | cut -d' ' -f1; done | paste -sd' ' -)
		python3 - "$dir" "$cover" "$to" "$cc" "$name <$email>" "$note" "$ids" <<'PY'
import glob, re, sys, textwrap
d, cover, to, cc, me, note, ids = sys.argv[1:]
prereq = ''.join('prerequisite-patch-id: %s\n' % i for i in ids.split())
subject, _, text = open(cover).read().partition('\n')
for f in sorted(glob.glob(d + '/*.patch')):
    s = open(f).read()
    if '0000-cover-letter' in f:
        s = s.replace('*** SUBJECT HERE ***', subject.strip())
        s = s.replace('*** BLURB HERE ***', text.strip() + '\n\n' + textwrap.fill(note, 72, break_on_hyphens=False))
        # The shortlog names the commits' author: the submitter.
        s = re.sub(r'(?m)^kvm-series \((\d+)\):$', me.split(' <')[0] + r' (\1):', s)
    else:
        msg, sep, diff = s.partition('\n---\n')
        if not sep:
            sys.exit(f + ': no "---" line')
        msg = msg.rstrip('\n')
        tags = re.match(r'^[A-Za-z-]+: ', msg.split('\n')[-1])
        s = msg + ('\n' if tags else '\n\n') + 'Signed-off-by: ' + me + sep
        if not glob.glob(d + '/*0000-cover-letter.patch'):
            # one patch, no cover letter: the cover's text is the note
            # below "---", which git am drops
            s += text.strip() + '\n\n' + textwrap.fill(note, 72, break_on_hyphens=False) + '\n\n'
        s += diff
    head, sep, body = s.partition('\n\n')
    # Replace the From: header, with its folded continuation lines.
    out, skip = [], False
    for line in head.split('\n'):
        if skip and line[:1] in (' ', '\t'):
            continue
        skip = line.startswith('From: ')
        out.append('From: ' + me if skip else line)
    head = '\n'.join(out)
    head += '\nTo: ' + to.replace(',', ',\n    ')
    head += '\nCc: ' + cc.replace(',', ',\n    ')
    body = re.sub(r'(?m)(^prerequisite-patch-id: .*\n)+', lambda _: prereq, body)
    open(f, 'w').write(head + sep + body)
PY
		if [ "$n" = 1 ]; then
			log "$grp: v$ver, 1 patch (cover text below its ---) in $dir"
		else
			log "$grp: v$ver, $n patches + cover letter in $dir"
		fi
	fi
	prev=grp/$grp
done <"$TOP/patches/groups"

# The mainline postings: each patches/mainline*/ folder is one, its patches
# as they are there, a cover letter made here (format-patch needs the tree
# they apply to), written to out/series/<folder>/v<N>/.
for md in "$TOP"/patches/mainline*/; do
	md=${md%/}
	mname=$(basename "$md")
	[ -f "$md/cover" ] || continue
	ver=1
	[ -f "$md/version" ] && ver=$(cat "$md/version")
	[[ $ver =~ ^[1-9][0-9]*$ ]] || die "patches/$mname/version: not a number: '$ver'"
	dir=$outdir/$mname/v$ver
	mkdir -p "$dir"
	mapfile -t mp < <(find "$md" -name '*.patch' | sort)
	[ ${#mp[@]} -gt 0 ] || die "patches/$mname/ has a cover but no patch"
	for f in "${mp[@]}"; do cp "$f" "$dir/"; done
	kvm=$(addrs 'KVM' --no-l)
	others=$(addrs '!KVM' --no-l)
	lists=$(addrs . --no-m --no-r)
	stat=$(cat "${mp[@]}" | git apply --stat)
	python3 - "$dir" "$md/cover" "$kvm" "${others:+$others,}$lists" "$name <$email>" "$ver" "$stat" <<'PY'
import glob, re, sys, email.utils
d, cover, to, cc, me, ver, stat = sys.argv[1:]
subject, _, text = open(cover).read().partition('\n')
files = sorted(f for f in glob.glob(d + '/*.patch') if '0000-cover' not in f)
n = len(files)
v = '' if ver == '1' else ' v' + ver
def hdr(subj, date):
    return ('From 0000000000000000000000000000000000000000 Mon Sep 17 00:00:00 2001\n'
            'From: %s\nDate: %s\nSubject: [PATCH%s %d/%d] %s\nTo: %s\nCc: %s\n\n'
            % (me, date, v, 0, n, subj, to.replace(',', ',\n    '), cc.replace(',', ',\n    ')))
titles = []
for i, f in enumerate(files, 1):
    s = open(f).read()
    head, sep, body = s.partition('\n\n')
    m = re.search(r'(?m)^Subject: \[PATCH\] (.*(?:\n .*)*)', head)
    title = re.sub(r'\n ', ' ', m.group(1))
    titles.append(title)
    head = re.sub(r'(?m)^From: .*$', 'From: ' + me, head)
    head = head.replace(m.group(0), 'Subject: [PATCH%s %d/%d] %s' % (v, i, n, title))
    head += '\nTo: ' + to.replace(',', ',\n    ') + '\nCc: ' + cc.replace(',', ',\n    ')
    msg, sep2, diff = body.partition('\n---\n')
    msg = msg.rstrip('\n')
    tags = re.match(r'^[A-Za-z-]+: ', msg.split('\n')[-1])
    body = msg + ('\n' if tags else '\n\n') + 'Signed-off-by: ' + me + sep2 + diff
    open(f, 'w').write(head + sep + body)
date = email.utils.formatdate(usegmt=True)
short = '%s (%d):\n' % (me.split(' <')[0], n) + ''.join('  %s\n' % t for t in titles)
body = text.strip() + '\n\n' + short + '\n' + stat + '\n'
open(d + '/0000-cover-letter.patch', 'w').write(hdr(subject.strip(), date) + body)
PY
	log "$mname: v$ver, ${#mp[@]} patches + cover letter in $dir"
done
