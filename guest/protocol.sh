# shellcheck shell=bash
# The strings and codes of the host/guest protocol (docs/protocol.md), in
# one place: sourced on the host by scripts/lib.sh and in the guest by
# guest/run.sh and the init scripts (the Intel VM's initramfs has it as
# /ks/protocol.sh).  Never run.
# shellcheck disable=SC2034 # the variables are for the sourcing scripts

# On the guest's console: init is up, and the job is over.
KS_INIT_STARTED="ks: init started"
KS_JOB_DONE="ks: job done"
# The Intel VM's init: the guest's clock at the job's start and end
# ("$KS_CLOCK_END S s"), which the host logs against its own seconds.
KS_CLOCK_START="ks: guest clock at job start:"
KS_CLOCK_END="ks: guest clock at job end:"
# A test's markers, written by guest/run.sh: "$KS_MARK NAME" and
# "$KS_MARK NAME: end" to /dev/kmsg around the test (the host tags the
# kernel's lines with the test they fall in), and on the console with the
# test's command and its outcome.
KS_MARK="ks: ===="
# The VM scripts' exit codes, besides the job's own: the emulated machine
# stopped (Intel: no heartbeat), the guest died, the VM hung (time limit or
# killed), the kernel did not boot, a splat in the console or dmesg.  A
# test that runs past its limit in the guest is "hung" with the same code.
KS_RC_STALL=122
KS_RC_CRASH=123
KS_RC_HANG=124
KS_RC_NOBOOT=125
KS_RC_SPLAT=126
