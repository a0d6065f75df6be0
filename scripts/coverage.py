#!/usr/bin/env python3
"""coverage.py SRC DIFF TMP: the report of scripts/coverage.sh.

SRC is the patched tree, DIFF its `git diff -U0 base-fixed patched` of
arch/x86/kvm, TMP holds amd.json and intel.json: gcov's JSON documents
(gcov --json-format --stdout) of every boot of that platform.  A changed
line "has code" when gcov has a record of it on some platform; lines
without one (declarations, comments, braces, macro bodies, which gcov
counts where the macro is used) are not counted.  A line that ran on no
platform is "explained" when the base's tests/coverage-explained names its function
and a piece of its text, with the reason; the others are "unexplained".
"""
import json
import os
import re
import subprocess
import sys
from collections import defaultdict

src, diff_path, tmp = sys.argv[1:4]
PLATFORMS = ("amd", "intel")


def rel_path(path):
    """arch/x86/... for any spelling of a path into the tree."""
    i = path.find("arch/x86/")
    return os.path.normpath(path[i:]) if i >= 0 else None


def changed_lines(path):
    """{file: set of line numbers added or changed in the patched tree}"""
    out, cur, line = defaultdict(set), None, 0
    with open(path) as f:
        for l in f:
            if l.startswith("+++ "):
                cur = l[6:].strip() if l.startswith("+++ b/") else None
            elif l.startswith("@@"):
                m = re.match(r"@@ -\S+ \+(\d+)(?:,(\d+))? @@", l)
                line = int(m.group(1))
            elif l.startswith("+") and cur:
                out[cur].add(line)
                line += 1
    return out


def counts(platform):
    """{(file, line): count} summed over the platform's gcov documents"""
    out = defaultdict(int)
    path = os.path.join(tmp, platform + ".json")
    if not os.path.exists(path):
        return out, 0
    text, dec, pos, docs = open(path).read(), json.JSONDecoder(), 0, 0
    while True:
        while pos < len(text) and text[pos].isspace():
            pos += 1
        if pos >= len(text):
            break
        doc, pos = dec.raw_decode(text, pos)
        docs += 1
        for f in doc["files"]:
            rel = rel_path(f["file"])
            if rel is None:
                continue
            for r in f["lines"]:
                out[(rel, r["line_number"])] += r["count"]
    return out, docs


def functions(path):
    """[name or None for each line] of a C file in kernel style, as the
    patched tag has it (the working tree may hold a mutant)"""
    lines = subprocess.run(["git", "-C", src, "show", "patched:" + path], check=True,
                           capture_output=True, text=True).stdout.split("\n")
    names, cur = [None] * (len(lines) + 2), None
    for i, l in enumerate(lines):
        if l.startswith("{"):
            j, sig = i - 1, []
            while j >= 0 and lines[j] and not lines[j].startswith(("}", "#")) \
                    and not lines[j].rstrip().endswith(";"):
                sig.insert(0, lines[j])
                if re.match(r"[A-Za-z_]", lines[j]):
                    break
                j -= 1
            m = re.search(r"(\w+)\s*\(", " ".join(sig))
            cur = m.group(1) if m else "(?)"
            for k in range(max(j, 0), i):
                names[k + 1] = cur
        names[i + 1] = cur
        if l.startswith("}"):
            cur = None
    return names, lines


def explained():
    """[(function, text, reason)] from the base's tests/coverage-explained"""
    out = []
    with open(os.path.join(os.environ["KS_TESTS"], "coverage-explained")) as f:
        for l in f:
            if l.strip() and not l.startswith("#"):
                fn, text, why = (x.strip() for x in l.split("|", 2))
                out.append((fn, text, why))
    return out


def nocode_ok(line):
    """a statement gcov may rightly have no record of: a declaration"""
    return bool(re.match(r"\s*(static\s+)?(const\s+)?(struct\s+\w+|u64|u32|int|bool|ulong|unsigned|gfn_t|LIST_HEAD)\b", line))


nocode = 0
changed = changed_lines(diff_path)
data = {p: counts(p) for p in PLATFORMS}
reasons = explained()
rows, missed = [], []
for path in sorted(changed):
    names, text = functions(path)
    per = defaultdict(lambda: {"code": 0, "any": 0, **{p: 0 for p in PLATFORMS}})
    for n in sorted(changed[path]):
        key = (os.path.normpath(path), n)
        if not any(key in data[p][0] for p in PLATFORMS):
            if path.endswith(".c") and text[n - 1].strip().endswith(";") \
                    and names[n] and not nocode_ok(text[n - 1]):
                nocode += 1
            continue
        fn = names[n] or "(outside a function)"
        row = per[fn]
        row["code"] += 1
        ran = [p for p in PLATFORMS if data[p][0].get(key, 0) > 0]
        for p in ran:
            row[p] += 1
        if ran:
            row["any"] += 1
        else:
            t = text[n - 1].strip()
            why = next((w for f, s, w in reasons if f == fn and s in t), None)
            missed.append((path, n, fn, t, why))
    for fn, row in per.items():
        rows.append((fn, path, row))

short = lambda p: p.replace("arch/x86/kvm/", "").replace("arch/x86/include/asm/", "asm/")
print("Lines the series changes in arch/x86/kvm that have code, and how many ran")
print("(gcov, make coverage); boots' counters: %s"
      % ", ".join("%s %d files" % (p, data[p][1]) for p in PLATFORMS))
print()
print("%-42s %-16s %5s %5s %5s %5s" % ("function", "file", "lines", "amd", "intel", "any"))
tot = defaultdict(int)
for fn, path, row in rows:
    print("%-42s %-16s %5d %5d %5d %5d%s" % (fn[:42], short(path), row["code"], row["amd"],
          row["intel"], row["any"], "" if row["any"] == row["code"] else "  <-"))
    for k in row:
        tot[k] += row[k]
print("%-42s %-16s %5d %5d %5d %5d" % ("total (%d functions)" % len(rows), "", tot["code"],
      tot["amd"], tot["intel"], tot["any"]))
print()
unexplained = [m for m in missed if not m[4]]
print("Changed lines with code that ran on no platform: %d, %d of them unexplained"
      % (len(missed), len(unexplained)))
for path, n, fn, t, why in missed:
    print("  %s:%d %s: %s\n      %s" % (short(path), n, fn, t,
          why if why else "UNEXPLAINED (add a reason to the base's tests/coverage-explained)"))
if nocode:
    print()
    print("Changed statements without a gcov record of their own (at -O2 the compiler")
    print("folds many, e.g. a call's continuation lines or an inlined lock, into another")
    print("line's record; coverage.sh names any boot whose counters were lost): %d" % nocode)
sys.exit(1 if unexplained else 0)
