# Entry points; see README.md.  Everything big lives in $(KS_CACHE)
# (default ~/.cache/kvm-series), never in this repo.
SHELL := /bin/bash
S := scripts
# BASE=NAME picks the base (bases/NAME; default: bases/default, 6.1); every
# target works on that base's patches, lists, cache and results.
BASE ?= $(shell cat bases/default)
export BASE
RESULTS := $(shell . bases/$(BASE)/base.conf 2>/dev/null && echo "$$RESULTS")
T := bases/$(BASE)/tests
.DEFAULT_GOAL := help

.PHONY: help setup tree retag build build-base test test-full test-stable test-unheld shell deb deb-test baseline bench migrate check checkpatch bisect series export shellcheck mutants mutants-check coverage rebase report

# Bare make: the targets (README.md has them in a table).
help:
	@echo "BASE=6.1|7.3    the base every target works on (bases/; default $$(cat bases/default))"
	@echo "make test       build the patched kernel and run the default lists (what CI runs)"
	@echo "make test-full  also the full group;  make coverage  line coverage of the series"
	@echo "make test-stable  each stable posting alone on the base (the base's own tests, and its own)"
	@echo "make test-unheld  the stack without the held groups, default lists (their tests skipped)"
	@echo "make shell      a shell on the patched kernel's console (VARIANT=, KVM_PARAMS=, HUGEPAGES=)"
	@echo "make deb        installable packages with Debian's config (DEB_FLAVOUR=); make deb-test boots them"
	@echo "make mutants    deliberate bugs the tests must catch (MUTANTS=regex)"
	@echo "make bench      base vs patched (BENCH=dirty|nx|cr0|all ROUNDS=N BENCH_KIND=perf|lockstat|debug PLATFORM=amd|intel|all)"
	@echo "make migrate    live-migration check;  make baseline  re-record the base's tests/baseline*"
	@echo "make check      checkpatch, bisect build, shellcheck, mutants apply"
	@echo "make series     the mails of each posting;  make export  tree commits back to patches/"
	@echo "make rebase BASE_VERSION=V   the series on another version of the base's package"
	@echo "make report     results page from the last run;  make setup|tree|build|build-base"
	@echo "make retag      after a rebase of the tree: each group's tag back on its last commit"
setup:
	$(S)/setup.sh
tree: setup
	$(S)/mktree.sh
# After a rebase of the tree: each group's tag onto its last commit again.
retag:
	$(S)/retag.sh
build: tree
	$(S)/build.sh patched all
build-base: tree
	$(S)/build.sh base all
# FAST: true where the base has groups after tests/ (beyond upstream, e.g.
# 6.1's d-fast-clear): the fast kernel (lib.sh, variant_rev) has them.
FAST = bash -c '. $(S)/lib.sh && beyond_upstream'
# The test command: full list in the VM on the patched kernel (the
# carriers' stack: every group up to tests/).
# Arguments and paths are checked before anything is built.
# (in the recipes, not as prerequisites: first even under make -j)
# make test runs the lists' default group (what CI runs), make test-full
# adds the "full" group, then runs the default and "fast" groups on the
# fast kernel (docs/running.md, "What CI runs").
test:
	$(S)/run-tests.sh -k patched -n
	$(MAKE) --no-print-directory build
	$(S)/mutants.sh -n
	$(S)/run-tests.sh -k patched
test-full:
	$(S)/run-tests.sh -k patched -n
	$(MAKE) --no-print-directory build
	$(S)/mutants.sh -n
	KS_GROUPS="default full" $(S)/run-tests.sh -k patched
	if $(FAST); then $(S)/build.sh fast all && KS_GROUPS="default fast" $(S)/run-tests.sh -k fast; fi
# Re-record the base's tests/baseline* from the base kernel.
baseline: build-base
	KS_GROUPS="default full" $(S)/run-tests.sh -k base -w
# The main job: base vs patched measurements (not a test).  The selftests
# come from the patched debug build; the kernels measured have no lock
# debugging.  BENCH=dirty|nx|cr0|all (default all: those of bases/BASE/base.conf, BENCHES), ROUNDS=boots per kernel,
# BENCH_KIND=perf (default), lockstat (perf + CONFIG_LOCK_STAT: mmu_lock
# wait and hold times for nx) or debug (the test kernels).
BENCH ?= all
ROUNDS ?= 5
BENCH_KIND ?= perf
bench:
	BENCH_KIND=$(BENCH_KIND) $(S)/bench.sh -n $(BENCH) $(ROUNDS)
	$(MAKE) --no-print-directory build
	if [ "$(BENCH_KIND)" = debug ]; then $(S)/build.sh base all; else \
		$(S)/build.sh base-$(BENCH_KIND) kernel && $(S)/build.sh patched-$(BENCH_KIND) kernel; fi
	case "$(BENCH_KIND):$(BENCH)" in perf:dirty | perf:all) $(S)/build.sh fast all && $(S)/build.sh fast-perf kernel ;; esac
	BENCH_KIND=$(BENCH_KIND) $(S)/bench.sh $(BENCH) $(ROUNDS)
# The live-migration check (QEMU migrates a Linux guest that checks its
# own pages) on the base and on the patched kernel, with QEMU's figures
# side by side; PLATFORM=intel for the Intel VM (Bochs).  Not in make test
# (the lists' group "migrate": KS_GROUPS="default migrate" adds them).
migrate:
	$(S)/migrate.sh -n
	$(MAKE) --no-print-directory build build-base
	$(S)/migrate.sh
# Deliberate bugs (bases/BASE/mutants/*.diff) that the tests must catch; not a test
# (long).  MUTANTS=regex picks some.
MUTANTS ?= .
mutants: build
	if $(FAST); then $(S)/build.sh fast all; fi
	$(S)/mutants.sh '$(MUTANTS)'
# Line coverage of the series: the lists (KS_GROUPS, default "default
# coverage": CI's tests and the ones only coverage needs, none today)
# on the coverage kernel (patched-gcov: the test kernel, arch/x86/kvm
# profiled with gcov), then, for every function the series changes, which
# of its changed lines ran on which platform (scripts/coverage.sh), also
# written to $(RESULTS)/coverage.txt (docs/results for 6.1).  Fails on a changed line that ran
# nowhere and that the base's tests/coverage-explained does not explain.  A failing
# test does not stop the report (the verdicts are make test's job).
# Each stable posting alone on the base (what 6.1.y would apply): the
# default group's entries that the base's selftests have, five TDP MMU
# fault-heavy tests, and the posting's own tests (scripts/test-stable.sh).
test-stable: tree
	$(S)/test-stable.sh
# An interactive shell on a kernel (VARIANT, default patched; AMD platform):
# kvm loaded with KVM_PARAMS, the selftests at hand (scripts/shell.sh).
shell:
	$(S)/shell.sh $(VARIANT)
# The kernel as a distribution builds it: VARIANT's stack (default patched)
# with Debian's own configuration (DEB_FLAVOUR=cloud-amd64|amd64), as
# installable packages (bindeb-pkg), after a check that arch/x86/kvm has no
# warning the base lacks; deb-test boots the package's kernel on the AMD
# platform and runs KVM selftests with its modules (docs/deb.md).  Not CI.
deb: tree
	$(S)/deb.sh $(VARIANT)
deb-test:
	$(S)/deb-test.sh $(VARIANT)
# The stack without the held groups (our own fixes not in mainline yet):
# what a carrier who takes only upstream commits runs.  Builds the kernel
# of tag unheld and runs the default lists on it; the held groups' tests
# are skipped there (needs=GROUP in the lists; scripts/test-unheld.sh).
test-unheld: tree
	$(S)/test-unheld.sh
coverage:
	$(S)/run-tests.sh -k patched-gcov -n
	$(MAKE) --no-print-directory build
	$(S)/build.sh patched-gcov kernel
	-KS_GROUPS="$${KS_GROUPS:-default coverage}" $(S)/run-tests.sh -k patched-gcov
	mkdir -p $(RESULTS)
	$(S)/coverage.sh >$(RESULTS)/coverage.txt.new; rc=$$?; \
		if grep -q '^function' $(RESULTS)/coverage.txt.new; then mv $(RESULTS)/coverage.txt.new $(RESULTS)/coverage.txt; \
		cat $(RESULTS)/coverage.txt; else rm -f $(RESULTS)/coverage.txt.new; fi; \
	if $(FAST); then $(S)/build.sh fast all && $(S)/build.sh fast-gcov kernel && \
		{ KS_GROUPS="$${KS_GROUPS:-default coverage} fast" $(S)/run-tests.sh -k fast-gcov || true; } && \
		KS_COV=fast $(S)/coverage.sh >$(RESULTS)/coverage-fast.txt.new; frc=$$?; \
		if grep -q '^function' $(RESULTS)/coverage-fast.txt.new; then mv $(RESULTS)/coverage-fast.txt.new $(RESULTS)/coverage-fast.txt; \
		cat $(RESULTS)/coverage-fast.txt; else rm -f $(RESULTS)/coverage-fast.txt.new; fi; [ "$$frc" = 0 ] || rc=$$frc; fi; exit $$rc
# Move the series to another version of the base's package that apt offers,
# in a cache of its own (docs/running.md, "A new base"): BASE_VERSION=VERSION.
rebase:
	$(S)/rebase.sh -n $(BASE_VERSION)
	$(S)/rebase.sh $(BASE_VERSION)
# The results page (docs/results/latest.md and a dated copy) from the raw
# data the runs kept: tests (VARIANT=patched-gcov etc.), mutants,
# coverage, benchmarks, migration.
VARIANT ?= patched
report:
	$(S)/report.sh $(VARIANT)
checkpatch: tree
	$(S)/check.sh checkpatch
bisect: tree
	$(S)/check.sh bisect
check: checkpatch bisect shellcheck mutants-check
# every mutant's header names listed tests, and it applies to the patched tree
mutants-check: tree
	$(S)/mutants.sh -n
shellcheck:
	shellcheck -x $(S)/*.sh guest/*.sh guest/migrate/*.sh .ci/run
series: tree
	$(S)/series.sh
export:
	$(S)/export.sh
