#!/bin/sh
# Instructions per Coll+KernelCh event pair (5 callbacks) of the shipped profiler on NCCL's thread, with
# callgrind: (Ir(N2) - Ir(N1)) / (N2 - N1) for the main thread, minus the same for do-nothing callbacks.
# Cases: "pair" (1 channel, 1 child) and "missing" (8 channels, 1 child: some NCCL releases emit fewer).
# Usage: callgrind_profiler.sh DRIVER LIBRARY [TARGET] [CEILING]
# Only the driver's loop of callbacks is counted (callgrind's --toggle-collect on its run()): the comm's
# finalize, on the same thread, drains what the plugin's drain thread left in the sample ring, and under
# valgrind, which runs one thread at a time, that thread leaves a share that varies from run to run (4 to
# 12 instructions per pair at stop 39) where on a real machine it drains on its own core as samples come.
# Prints each figure against issue 23's TARGET (default 300; 298.3 and 299.5 with gcc 12 at stop 39) and
# exits 1 only above CEILING (default 1000; CTest passes 350), a guard against regressions; 77 (CTest
# skip) without valgrind.
set -eu
driver=$1
library=$2
target=${3:-300}
max=${4:-1000}
# N1 spans a few event pools (WIREWISE_EVENT_POOL, 1024) so the missing case's learning laps are in both
# runs and cancel; N2 - N1 is then the steady state.
n1=2000
n2=102000

# shellcheck source=bench/callgrind_lib.sh
. "$(dirname "$0")/../callgrind_lib.sh"
callgrind_require
callgrind_setup ww_callgrind_prof
callgrind_collect='*::run(*'

status=0
for case in pair missing; do
  w1=$(ir wirewise $case $n1)
  w2=$(ir wirewise $case $n2)
  z1=$(ir nothing $case $n1)
  z2=$(ir nothing $case $n2)
  label="Coll+KernelCh pair"
  [ $case = missing ] && label="Coll of 8 channels with 1 KernelCh child"
  awk -v a="$w1" -v b="$w2" -v c="$z1" -v d="$z2" -v n=$((n2 - n1)) -v max="$max" -v target="$target" -v label="$label" 'BEGIN {
    w = (b - a) / n; z = (d - c) / n; per = w - z
    printf "instructions per %s beyond a do-nothing profiler: %.1f (wirewise %.1f, do-nothing %.1f; %d iterations of 5 callbacks)\n", label, per, w, z, n
    printf "  target %d: %s; regression ceiling %d\n", target, per <= target ? "met" : "NOT met", max
    if (per > max) { printf "FAIL: above %d instructions\n", max; exit 1 }
  }' || status=1
done
exit $status
