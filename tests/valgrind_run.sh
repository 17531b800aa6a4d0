#!/bin/sh
# Runs a test under valgrind's memcheck: valgrind_run.sh VALGRIND TEST [ARGS...].
# libhwy 1.0.3's initialiser executes RDTSCP, which valgrind emulates only on CPUs whose CPUID
# reports it; some VMs hide it (the test then dies of SIGILL before any tileops code runs).
# That is reported as a skip (77) saying why, not as a failure of the code under test.
valgrind=$1
shift
if [ -r /proc/cpuinfo ] && ! grep -qw rdtscp /proc/cpuinfo; then
  echo "SKIPPED: this CPU's CPUID does not report RDTSCP, which libhwy's initialiser executes" \
       "and valgrind cannot emulate without it; run this test on another machine"
  exit 77
fi
exec "$valgrind" -q --error-exitcode=9 "$@"
