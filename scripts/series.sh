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
# A group with a file patches/<group>/request (one upstream commit that the
# stable tree lacks and that applies as it is) is one mail asking stable to
# apply it: the cover's subject and text, no patch.
# A group with a file patches/<group>/hold is written to
# out/series/HELD-<group>/ instead, not to be sent until the hold goes.
# The stable groups (stable*) go to stable@vger.kernel.org as
# [STABLE_PREFIX] (bases/BASE/base.conf: [PATCH 6.1.y] on 6.1), the others
# to the KVM maintainers as [SERIES_PREFIX] ([PATCH 6.1]; on the base that
# stands in for mainline, 7.3, [PATCH]).  SERIES_STACKED=no: each group is a
# posting of its own that applies to the base alone (no
# prerequisite-patch-id lines); SERIES_BASE_COMMIT=no: no base-commit
# line (the imported Debian tree is no commit of the tree it goes to).
# Send a group with
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
# results_of FILE: the lines a cover's @RESULTS@ becomes.  FILE: one line
# per kept run, "FOLDER | what ran | REGEX": the run's results folder
# under $CACHE/results (run-tests.sh; KS_RUN=NAME gives VARIANT-NAME), a
# label, and the list entries to report (an extended regex that must match
# the whole name).  Each run gives its label and stamp date, then one line
# per entry and platform: its outcome and, for a failure, what the test
# said.  A run that is missing, or that has none of the entries, stops it.
trim() { sed 's/^[[:space:]]*//; s/[[:space:]]*$//' <<<"$1"; }
results_of() {
	local folder label re p r n
	while IFS='|' read -r folder label re; do
		folder=$(trim "$folder") label=$(trim "$label") re=$(trim "$re")
		case $folder in '#'* | '') continue ;; esac
		r=$CACHE/results/$folder
		[ -f "$r/stamp" ] || die "$1: no kept run $r (run it first)"
		echo "- $label, $(sed -n 's/^date: //p' "$r/stamp"):"
		n=0
		for p in amd intel; do
			[ -f "$r/$p/results" ] || continue
			while IFS='|' read -r name st _ detail; do
				n=$((n + 1))
				case $st in
				pass) echo "  $name ($p): pass" ;;
				*) echo "  $name ($p): $st${detail:+: $detail}" ;;
				esac
			done < <(grep -E "^($re)\|" "$r/$p/results")
		done
		[ "$n" -gt 0 ] || die "$1: the run in $r has no entry matching '$re'"
	done <"$1"
}
# The postings before a group: its prerequisite-patch-id lines name them.
posted=()
declare -A title range
prev=base-fixed
while read -r grp; do
	case $grp in '#'* | '' | base) continue ;; tests) prev=grp/tests; continue ;; esac
	g rev-parse -q --verify "grp/$grp" >/dev/null || continue
	n=$(g rev-list --count "$prev..grp/$grp")
	if [ "$n" -gt 0 ]; then
		cover=$PATCHES/$grp/cover
		[ -f "$cover" ] || die "bases/$BASE/patches/$grp/cover is missing"
		ver=1
		[ -f "$PATCHES/$grp/version" ] && ver=$(cat "$PATCHES/$grp/version")
		[[ $ver =~ ^[1-9][0-9]*$ ]] || die "bases/$BASE/patches/$grp/version: not a number: '$ver'"
		[ "$ver" = 1 ] || grep -q "^Changes in v$ver:" "$cover" ||
			die "bases/$BASE/patches/$grp/cover: v$ver needs a 'Changes in v$ver:' section"
		prefix=$SERIES_PREFIX
		case $grp in stable*) prefix=$STABLE_PREFIX ;; esac
		dir=$outdir/$grp/v$ver
		# patches/GROUP/hold (its first line the reason): a posting that
		# waits (stable-clear-dirty until mainline has its fix); its mails
		# are written apart, so that they are not sent with the others
		if [ -f "$PATCHES/$grp/hold" ]; then
			dir=$outdir/HELD-$grp/v$ver
			log "$grp is held ($(head -1 "$PATCHES/$grp/hold")): its mails go to ${dir#"$TOP"/}, not to be sent yet"
		fi
		# The tree is not touched: the mails are re-authored below.
		vopt=()
		[ "$ver" = 1 ] || vopt=(-v "$ver")
		[ "$n" = 1 ] || vopt+=(--cover-letter)
		[ "$SERIES_BASE_COMMIT" = no ] || vopt+=(--base="$(g rev-parse base-fixed)")
		g -c user.name="$name" -c user.email="$email" \
			format-patch -q --thread "${vopt[@]}" -o "$dir" \
			--subject-prefix="$prefix" "$prev..grp/$grp" >/dev/null
		# To: the KVM maintainers; Cc: the other maintainers, the lists
		kvm=$(addrs 'KVM' --no-l)
		others=$(addrs '!KVM' --no-l)
		lists=$(addrs . --no-m --no-r)
		if [ "${grp#stable}" != "$grp" ]; then
			to="stable@vger.kernel.org" cc="$kvm${others:+,$others},$lists"
		else
			to=$kvm cc="${others:+$others,}$lists"
		fi
		nfix=$(g rev-list --count base..base-fixed)
		if [ "$SERIES_BASE_COMMIT" = no ]; then
			note="Tested on Debian's $BASE_PKG $BASE_VER (Linux ${BASE_VER%%-*})"
			[ "$nfix" = 0 ] && note+="." || note+=" with $nfix fixes for its KVM selftests that are not posted."
		else
			note="Based on Debian's $BASE_PKG $BASE_VER (Linux ${BASE_VER%%-*}): the base-commit below is that tree as imported, with $nfix fixes for its KVM selftests that are not posted (the kernel patches do not need them)."
		fi
		# What the posting applies on: a stable posting on the base alone
		# (each is a request of its own); a group with a needs file (one
		# group per line) on those groups; any other on every group
		# before it.
		if [ "${grp#stable}" != "$grp" ]; then
			before=() before_ranges=()
		elif [ -f "$PATCHES/$grp/needs" ]; then
			before=() before_ranges=()
			while read -r need; do
				[ -n "${title[$need]:-}" ] || die "bases/$BASE/patches/$grp/needs names '$need', which is not a posting before it"
				before+=("${title[$need]}") before_ranges+=("${range[$need]}")
			done < <(sed 's/#.*//; s/[[:space:]]//g; /^$/d' "$PATCHES/$grp/needs")
		else
			before=("${posted[@]}") before_ranges=("base-fixed..$prev")
		fi
		if [ "$SERIES_STACKED" = yes ] && [ ${#before[@]} -gt 0 ]; then
			note+=" This posting applies on top of, and its prerequisite-patch-id lines are: $(printf '"%s", ' "${before[@]}" | sed 's/, $//')."
		elif [ "$SERIES_STACKED" = yes ]; then
			note+=" It applies to the base by itself."
		fi
		posted+=("$(head -1 "$cover")")
		title[$grp]=$(head -1 "$cover") range[$grp]=$prev..grp/$grp
		# Cover subject and text; every patch from the submitter, with
		# their sign-off; To/Cc in every mail.
		# git 2.39's format-patch --base computes some prerequisite ids
		# differently from "git patch-id --stable" on the posted patch,
		# which is what b4 matches: write them from the commits instead.
		ids=""
		[ "$SERIES_STACKED" = no ] || [ ${#before_ranges[@]} = 0 ] ||
			ids=$(for r in "${before_ranges[@]}"; do for c in $(g rev-list --reverse "$r"); do
				g show "$c" | git patch-id --stable | cut -d' ' -f1; done; done | paste -sd' ' -)
		# @HARNESS@ in the cover: the harness's repository (KS_REPO_URL,
		# where it is published) and commit, for a recipient to rerun it
		harness="kvm-series ${KS_REPO_URL:-(no public URL yet: ask the sender)} at commit $(git -C "$TOP" rev-parse --short=12 HEAD)"
		[ -z "$(git -C "$TOP" status --porcelain)" ] || harness+=" plus uncommitted changes"
		# @RESULTS@ in the cover: what ran where, from the kept runs
		# that patches/GROUP/results names (results_of)
		results=""
		if grep -q '@RESULTS@' "$cover"; then
			[ -f "$PATCHES/$grp/results" ] || die "bases/$BASE/patches/$grp/cover has @RESULTS@ but there is no bases/$BASE/patches/$grp/results"
			results=$(results_of "$PATCHES/$grp/results")
		fi
		# A group with a file "request" asks stable to apply an upstream
		# commit as it is: one mail, the cover's text, no patch (the
		# tree's commit of it is what the harness tests)
		request=""
		if [ -f "$PATCHES/$grp/request" ]; then
			[ "$n" = 1 ] || die "bases/$BASE/patches/$grp/request: a request names one upstream commit, and the group has $n"
			request="STABLE REQUEST ${STABLE_PREFIX#PATCH }"
		fi
		python3 - "$dir" "$cover" "$to" "$cc" "$name <$email>" "$note" "$ids" "$results" "$harness" "$request" <<'PY'
import glob, re, sys, textwrap
d, cover, to, cc, me, note, ids, results, harness, request = sys.argv[1:]
prereq = ''.join('prerequisite-patch-id: %s\n' % i for i in ids.split())
subject, _, text = open(cover).read().partition('\n')
text = text.replace('@RESULTS@', results)
# @HARNESS@: where the harness is, at which commit; the line it is on is
# wrapped again
text = '\n'.join(textwrap.fill(l.replace('@HARNESS@', harness), 72, break_on_hyphens=False)
                 if '@HARNESS@' in l else l for l in text.split('\n'))
for f in sorted(glob.glob(d + '/*.patch')):
    s = open(f).read()
    if '0000-cover-letter' in f:
        s = s.replace('*** SUBJECT HERE ***', subject.strip())
        s = s.replace('*** BLURB HERE ***', text.strip() + '\n\n' + textwrap.fill(note, 72, break_on_hyphens=False))
        # The shortlog names the commits' author: the submitter.
        s = re.sub(r'(?m)^kvm-series \((\d+)\):$', me.split(' <')[0] + r' (\1):', s)
    elif request:
        # the request: the patch mail's headers, the cover's subject and
        # text as its body, no diff
        head = s.partition('\n\n')[0]
        head = re.sub(r'(?m)^Subject: .*(\n[ \t].*)*$', lambda _: 'Subject: [%s] %s' % (request, subject.strip()), head)
        s = head + '\n\n' + text.strip() + '\n'
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
		if [ -n "$request" ]; then
			log "$grp: v$ver, a request to apply the upstream commit as it is (no patch) in $dir"
		elif [ "$n" = 1 ]; then
			log "$grp: v$ver, 1 patch (cover text below its ---) in $dir"
		else
			log "$grp: v$ver, $n patches + cover letter in $dir"
		fi
	fi
	prev=grp/$grp
done <"$PATCHES/groups"

