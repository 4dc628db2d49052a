#!/bin/sh
# Instructions per getCollInfo call of the shipped library, measured with callgrind:
#   (Ir(N2) - Ir(N1)) / (N2 - N1) for the main thread, minus the same for a loop that only copies the table.
# Usage: callgrind_getcollinfo.sh DRIVER LIBRARY [MAX_INSTRUCTIONS]
# Exits 1 when the figure exceeds MAX (default 250), 77 (CTest skip) when valgrind is not installed.
set -eu
driver=$1
library=$2
max=${3:-250}
n1=1
n2=100001

# shellcheck source=bench/callgrind_lib.sh
. "$(dirname "$0")/callgrind_lib.sh"
callgrind_require
work=$(mktemp -d "${TMPDIR:-/tmp}/ww_callgrind.XXXXXX")
trap 'rm -rf "$work"' EXIT

ir() { callgrind_ir "$work/$1-$2.out" "$driver" "$library" "$1" "$2"; }

call1=$(ir call $n1)
call2=$(ir call $n2)
copy1=$(ir copy $n1)
copy2=$(ir copy $n2)

result=$(awk -v a="$call1" -v b="$call2" -v c="$copy1" -v d="$copy2" -v n=$((n2 - n1)) -v max="$max" 'BEGIN {
  with_copy = (b - a) / n; copy = (d - c) / n; per = with_copy - copy
  printf "instructions per getCollInfo call: %.1f\n", per
  printf "  (loop with table copy: %.1f, table copy alone: %.1f; %d calls over the probe sizes; limit %d)\n", with_copy, copy, n, max
  if (per > max) { printf "FAIL: above %d instructions per call\n", max; exit 1 }
}') && status=0 || status=$?
echo "$result"
exit "$status"
