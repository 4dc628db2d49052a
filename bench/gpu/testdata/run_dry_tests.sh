#!/bin/sh
# CTest `bench.real_nccl_dry_run`: bench/gpu/real_nccl.sh --dry-run on each fixture case. The good case must
# pass every check; each negative case must exit 1 with exactly the checks named below failing (so a case
# that fails for another reason, or a crash, does not count as the check working).
#
#   run_dry_tests.sh LIB_DIR BIN_DIR OUT_DIR
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
LIB=$1 BIN=$2 OUT=$3
status=0

# CASE, expected exit status, then the names of the checks that must fail (all others must pass or skip).
expect() {
  case_=$1 want=$2
  shift 2
  log=$OUT/$case_.log
  bash "$HERE/../real_nccl.sh" --dry-run --fixtures "$HERE/$case_" --lib "$LIB" --bin "$BIN" --out "$OUT/$case_" \
    > "$log" 2>&1
  rc=$?
  got=$(cat "$OUT/$case_/failed.txt" 2>/dev/null)  # the checker's list of failed checks
  wanted=$(for n in "$@"; do echo "$n"; done)
  if [ "$rc" != "$want" ] || [ "$got" != "$wanted" ] || grep -q Traceback "$log"; then
    echo "FAIL $case_: exit $rc (expected $want); failed checks:"
    echo "${got:-  (none)}"
    echo "expected:"
    echo "${wanted:-  (none)}"
    tail -40 "$log"
    status=1
  else
    echo "ok   $case_: exit $rc, failed checks as expected: ${*:-none}"
  fi
}

mkdir -p "$OUT" || exit 1
expect good 0
# The table NCCL ran is not the one the script forced: the profiler's Coll events must expose it.
expect bad-static 1 "run b: forced choices ran"
# NCCL did not load the profiler face in run a: no comm_init, no NCCL line, no samples.
expect no-profiler 1 "run a: tuner and profiler faces" "run a: GPU-timed samples"
# A rank's all-reduce came back wrong and the launcher failed.
expect bad-result 1 "run c: workers"
# PyTorch says NCCL 2.30.7, which binds tuner v6, profiler v6 and net v12, but the logs show v5, v5 and v11.
expect wrong-version 1 "run a: tuner and profiler faces" "run b: tuner and profiler faces" \
  "run c: tuner and profiler faces" "run d: tuner and profiler faces" "run f: tuner and profiler faces" \
  "run d: net face"
exit $status
