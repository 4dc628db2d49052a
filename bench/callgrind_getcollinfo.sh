#!/bin/sh
# Instructions per getCollInfo call of the shipped library, measured with callgrind:
#   (Ir(N2) - Ir(N1)) / (N2 - N1) for the main thread, minus the same for the loop through a do-nothing
#   getCollInfo (issue 23's baseline: the copy of the cost table and the indirect call are not ours).
#   Also printed: the figure over the copy alone (the call's own cost included), as reported before.
# Two static tables (bench/plugin_session.h): the nine-rule CSV, which issue 23's TARGET is about, and the
# generated table whose rule edges cut most size buckets (the slowest lookups).
# Usage: callgrind_getcollinfo.sh DRIVER LIBRARY [MAX_INSTRUCTIONS] [TARGET]
# Exits 1 when either figure exceeds MAX (default 250, a regression guard), 77 (CTest skip) without
# valgrind; prints the nine-rule figure against TARGET (default 100).
set -eu
driver=$1
library=$2
max=${3:-250}
target=${4:-100}
n1=1
n2=100001

# shellcheck source=bench/callgrind_lib.sh
. "$(dirname "$0")/callgrind_lib.sh"
callgrind_require
callgrind_setup ww_callgrind

status=0
for table in nine cut; do
  call1=$(ir call $n1 $table)
  call2=$(ir call $n2 $table)
  none1=$(ir nothing $n1 $table)
  none2=$(ir nothing $n2 $table)
  copy1=$(ir copy $n1 $table)
  copy2=$(ir copy $n2 $table)
  result=$(awk -v a="$call1" -v b="$call2" -v c="$none1" -v d="$none2" -v e="$copy1" -v f="$copy2" \
    -v n=$((n2 - n1)) -v max="$max" -v target="$target" -v table="$table" 'BEGIN {
    call = (b - a) / n; nothing = (d - c) / n; copy = (f - e) / n; per = call - nothing
    name = table == "nine" ? "nine-rule CSV table" : "table with cut buckets"
    printf "instructions per getCollInfo call beyond a do-nothing tuner, %s: %.1f\n", name, per
    printf "  (loop with the call: %.1f, with a do-nothing call: %.1f, copy alone: %.1f, so %.1f beyond the copy; %d calls over the probe sizes)\n", call, nothing, copy, call - copy, n
    if (table == "nine") printf "  target %d: %s; regression ceiling %d\n", target, per <= target ? "met" : "NOT met", max
    else printf "  regression ceiling %d\n", max
    if (per > max) { printf "FAIL: above %d instructions per call\n", max; exit 1 }
  }') || status=1
  echo "$result"
done
exit "$status"
