#!/usr/bin/env bash
# `wirewise simulate` end to end: the embedded default scenario (shortened) and an example file, with report and
# plot written, exit status 0, and the report's contract fields present.
set -euo pipefail
bin=$1
scenario=$2
out=$3
mkdir -p "$out"
"$bin" simulate --steps 15 --report "$out/default.json" --plot "$out/default.svg" > "$out/default.txt"
grep -q simulated "$out/default.txt"
grep -q "exploration: " "$out/default.txt"
grep -q '"scenario": "2x8-h100-nic-degrade"' "$out/default.json"
for k in '"simulated": true' '"collectives_per_rank"' '"speedup_vs_default"' '"captured_gain"' '"divergences": 0' \
         '"boundary_waits"' '"exploration_time_us"' '"step_comm_time_us"' '"exploration_share"' '"adaptations"' \
         '"sync": "deterministic"'; do
  grep -q "$k" "$out/default.json" || { echo "report lacks $k"; exit 1; }
done
grep -q '<svg' "$out/default.svg"
"$bin" simulate "$scenario" --steps 5 --seed 9 --quiet --report "$out/file.json"
grep -q '"seed": 9' "$out/file.json"
# --policy/--sync override the driver's defaults (and the environment's values).
WIREWISE_POLICY=random-test "$bin" simulate "$scenario" --steps 5 --quiet --policy static --sync off --report "$out/static.json"
grep -q '"policy": "static"' "$out/static.json" || { echo "--policy static not in force"; exit 1; }
grep -q '"sync": "off"' "$out/static.json" || { echo "--sync off not in force"; exit 1; }
if "$bin" simulate "$scenario" --steps 5 --quiet --sync sometimes 2>/dev/null; then echo "a bad --sync must fail"; exit 1; fi
# --procs: two processes, the same comm times as the one-process run above (seed 9).
"$bin" simulate "$scenario" --steps 5 --seed 9 --quiet --procs 2 --report "$out/procs.json"
grep -q '"procs": 2' "$out/procs.json" || { echo "--procs 2 not in the report"; exit 1; }
[ "$(grep -c '"first_rank"' "$out/procs.json")" = 2 ] || { echo "--procs 2 did not report two processes"; exit 1; }
[ "$(grep '"comm_time_us"' "$out/procs.json")" = "$(grep '"comm_time_us"' "$out/file.json")" ] ||
  { echo "--procs 2 changed the comm times"; exit 1; }
if "$bin" simulate "$scenario" --steps 5 --quiet --procs 17 2>"$out/err.txt"; then echo "--procs above the ranks must fail"; exit 1; fi
grep -q "procs must be between 1 and" "$out/err.txt"
if "$bin" simulate "$scenario" --steps 5 --quiet --procs 0 2>/dev/null; then echo "--procs 0 must fail"; exit 1; fi
if "$bin" simulate /nonexistent.json --quiet 2>"$out/err.txt"; then echo "a missing file must fail"; exit 1; fi
grep -q nonexistent "$out/err.txt"
echo ok
