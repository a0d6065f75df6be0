#!/bin/bash
# repro-stable-1.sh: the race that stable patch 1 fixes, on the base kernel.
# Plain 6.1.192 (base-fixed) with the window widened: udelay(100) between
# the cmpxchg that links a new page table and its list_add(); the NX
# recovery stress test (patched selftests) on it.  Then the base restored.
set -euo pipefail
C=${KS_CACHE:-$HOME/.cache/kvm-series}
cd "$(dirname "$0")/.."
B=$C/linux-base
[ -z "$(git -C "$B" status --porcelain --untracked-files=no)" ] || { echo "error: $B has edits" >&2; exit 1; }
python3 - "$B/arch/x86/kvm/mmu/tdp_mmu.c" <<'PY'
import sys
p=sys.argv[1]; s=open(p).read()
s=s.replace('#include <asm/cmpxchg.h>\n','#include <asm/cmpxchg.h>\n#include <linux/delay.h> /* REPRO */\n',1)
old="""	} else {
		tdp_mmu_set_spte(kvm, iter, spte);
	}

	spin_lock(&kvm->arch.tdp_mmu_pages_lock);
	list_add(&sp->link, &kvm->arch.tdp_mmu_pages);"""
new="""	} else {
		tdp_mmu_set_spte(kvm, iter, spte);
	}

	udelay(100);	/* REPRO: the window widened */
	spin_lock(&kvm->arch.tdp_mmu_pages_lock);
	list_add(&sp->link, &kvm->arch.tdp_mmu_pages);"""
assert s.count(old)==1
open(p,'w').write(s.replace(old,new))
PY
trap 'git -C "$B" checkout -q -- arch; scripts/build.sh base kvm >/dev/null 2>&1' EXIT
scripts/build.sh base kvm
KS_TESTS_FROM=patched KS_RUN=udelay scripts/run-tests.sh -k base -p amd -f 'nx_huge_pages_recovery_test\.stress' || true
