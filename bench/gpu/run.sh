#!/usr/bin/env bash
# GPU machine check for wirewise (issue #8): build, run the probe kernels' own correctness checks, run
# `wirewise probe`, and, where PyTorch and GPUs exist, a short torchrun all-reduce with wirewise loaded as
# NCCL's tuner and profiler plugin, checking the adaptation log. Not run in CI (no GPU there).
#
#   bench/gpu/run.sh [OUT_DIR]        OUT_DIR default: ./ww-gpu-check (results, logs, map, heatmap)
#
# Environment: BUILD (build dir, default build-gpu), WW_SKIP_BUILD=1 (reuse BUILD as is), JOBS (default
# nproc), CUDA_ARCH (default: the first GPU's compute capability, e.g. 90), WW_TORCHRUN_NPROC (default:
# the GPU count, at most 8). Budget: under 5 minutes on one H200 (build ~2-3 min on 16 cores, probe and
# checks well under a minute, torchrun ~30 s). Exits non-zero if any check that could run failed; the
# last lines say what was checked and what could not be.
set -u
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
OUT=$(mkdir -p "${1:-ww-gpu-check}" && cd "${1:-ww-gpu-check}" && pwd)
BUILD=${BUILD:-$ROOT/build-gpu}
JOBS=${JOBS:-$(nproc)}
START=$(date +%s)
declare -a CHECKED NOT_CHECKED FAILED
checked() { CHECKED+=("$1"); echo "== ok: $1"; }
failed() { FAILED+=("$1"); echo "== FAILED: $1"; }
skipped() { NOT_CHECKED+=("$1"); echo "== not checked: $1"; }
elapsed() { echo $(( $(date +%s) - START )); }

finish() {
  echo
  echo "=== bench/gpu summary ($(elapsed) s) ==="
  for c in "${CHECKED[@]+"${CHECKED[@]}"}"; do echo "checked:      $c"; done
  for c in "${NOT_CHECKED[@]+"${NOT_CHECKED[@]}"}"; do echo "not checked:  $c"; done
  for c in "${FAILED[@]+"${FAILED[@]}"}"; do echo "FAILED:       $c"; done
  echo "outputs in $OUT"
  [ ${#FAILED[@]} -eq 0 ]
  exit $?
}

echo "=== GPUs ==="
if command -v nvidia-smi >/dev/null 2>&1; then
  nvidia-smi --query-gpu=index,name,pci.bus_id,compute_cap,memory.total --format=csv | tee "$OUT/gpus.csv"
  nvidia-smi topo -m > "$OUT/topo.txt" 2>&1 && cat "$OUT/topo.txt"
  NGPU=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ')
  CAP=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1 | tr -d ' .')
else
  NGPU=0
  CAP=""
  skipped "nvidia-smi not found: GPU inventory"
fi
echo "GPUs: $NGPU"

echo "=== build ($BUILD) ==="
if [ "${WW_SKIP_BUILD:-0}" != 1 ]; then
  ARCH=${CUDA_ARCH:-${CAP:-90}}
  # Only the local architecture: the full 80/90/100 + PTX build is CI's job and would eat the budget.
  if ! cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=Release -DWIREWISE_BUILD_TESTS=OFF \
        -DWIREWISE_BUILD_BENCHMARKS=OFF -DCMAKE_CUDA_ARCHITECTURES="$ARCH" > "$OUT/configure.log" 2>&1; then
    tail -20 "$OUT/configure.log"
    failed "configure (see $OUT/configure.log)"
    finish
  fi
  grep 'wirewise:' "$OUT/configure.log"
  if ! cmake --build "$BUILD" -j "$JOBS" --target wirewise nccl-tuner-wirewise > "$OUT/build.log" 2>&1; then
    tail -30 "$OUT/build.log"
    failed "build (see $OUT/build.log)"
    finish
  fi
  checked "build in $(elapsed) s"
fi
WW=$BUILD/bin/wirewise
PROBE=$BUILD/bin/ww-probe-gpu
LIB=$BUILD/lib/libnccl-tuner-wirewise.so
PLIB=$BUILD/lib/libnccl-profiler-wirewise.so
[ -x "$WW" ] || { failed "no $WW"; finish; }
if [ ! -x "$PROBE" ]; then
  failed "no $PROBE: CMake did not find nvcc (see configure.log)"
  finish
fi

echo "=== kernels' correctness checks ==="
timeout 120 "$PROBE" --check --bytes 67108864 | tee "$OUT/checks.txt"
rc=${PIPESTATUS[0]}
if [ "$rc" = 0 ]; then checked "kernel correctness checks ($(grep -c '^PASS' "$OUT/checks.txt") passed)"
elif [ "$rc" = 3 ]; then failed "kernel checks: no CUDA device (see above)"; finish
else failed "kernel checks (exit $rc)"; fi
if grep -q '^SKIP' "$OUT/checks.txt"; then skipped "$(grep -c '^SKIP' "$OUT/checks.txt") pair check(s) without peer access"; fi
[ "$NGPU" -lt 2 ] && skipped "peer copies, SM peer read/write, bidirectional and ping-pong latency: a single GPU has no pairs"

echo "=== wirewise probe ==="
timeout 240 "$WW" probe --out "$OUT/wiring.json" --svg "$OUT/wiring.svg" --timeout 200 2> "$OUT/probe.err" | tee "$OUT/probe.txt"
rc=${PIPESTATUS[0]}
cat "$OUT/probe.err" | grep -v '^ww-probe-gpu: gpu' | tail -5
if [ "$rc" = 0 ]; then
  checked "wirewise probe wrote $OUT/wiring.json and $OUT/wiring.svg"
  # Self copy against the H200's ~4.3 TB/s measured ceiling (read + write traffic of a device copy).
  python3 - "$OUT/wiring.json" <<'PY' | tee "$OUT/self_copy.txt"
import json, sys
m = json.load(open(sys.argv[1]))
for g in m["gpus"]:
    if not g.get("present", True):
        continue
    s = g.get("self_copy_gbps", -1)
    ref = 4300.0 if "H200" in g.get("name", "") else None
    extra = f", {s / ref:.2f} of the H200's ~4300 GB/s measured ceiling" if ref and s > 0 else ""
    print(f"gpu{g['index']} {g.get('name')}: self copy {s:.1f} GB/s (copy engine {g.get('self_copy_ce_gbps', -1):.1f}, "
          f"SM kernel {g.get('self_copy_sm_gbps', -1):.1f}){extra}")
PY
else
  failed "wirewise probe (exit $rc, see $OUT/probe.err)"
fi

echo "=== torchrun all-reduce with wirewise loaded ==="
if ! python3 -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' >/dev/null 2>&1; then
  skipped "torchrun job: no PyTorch with CUDA here"
elif ! command -v torchrun >/dev/null 2>&1; then
  skipped "torchrun job: torchrun not on PATH"
else
  NPROC=${WW_TORCHRUN_NPROC:-$(( NGPU < 8 ? NGPU : 8 ))}
  [ "$NGPU" -lt 2 ] && skipped "multi-rank collectives: fewer than 2 GPUs (a 1-rank job still checks that NCCL loads wirewise)"
  LOGDIR=$OUT/adaptation-log
  rm -rf "$LOGDIR" && mkdir -p "$LOGDIR"
  cat > "$OUT/allreduce.py" <<'PY'
import os, torch, torch.distributed as dist
dist.init_process_group("nccl")
rank = dist.get_rank()
torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", 0)))
for size in (1 << 10, 1 << 16, 1 << 20, 1 << 24):
    x = torch.ones(size // 4, device="cuda")
    for _ in range(20):
        dist.all_reduce(x)
torch.cuda.synchronize()
print(f"rank {rank}: all-reduce done, x[0] = {x[0].item()}")
dist.destroy_process_group()
PY
  NCCL_TUNER_PLUGIN=$LIB NCCL_PROFILER_PLUGIN=$PLIB WIREWISE_LOG="$LOGDIR/%h-%p.jsonl" WIREWISE_SUMMARY_MS=200 \
    NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,TUNING \
    timeout 180 torchrun --standalone --nproc-per-node "$NPROC" "$OUT/allreduce.py" > "$OUT/torchrun.log" 2>&1
  rc=$?
  grep -i 'wirewise\|all-reduce done' "$OUT/torchrun.log" | head -20
  if [ "$rc" != 0 ]; then
    tail -20 "$OUT/torchrun.log"
    failed "torchrun job (exit $rc, see $OUT/torchrun.log)"
  else
    python3 - "$LOGDIR" "$NPROC" <<'PY' > "$OUT/log-check.txt"
import glob, json, sys
events = []
for path in glob.glob(sys.argv[1] + "/*.jsonl"):
    for line in open(path):
        try:
            events.append(json.loads(line))
        except ValueError:
            pass
kinds = lambda name: [e for e in events if e.get("event") == name]
faces = {e.get("face") for e in kinds("comm_init")}
tuner_calls = sum(e.get("collectives", 0) for e in kinds("comm_finalize") if e.get("face") == "tuner")
prof_samples = sum(e.get("samples", 0) for e in kinds("comm_finalize") if e.get("face") == "profiler")
rows = sum(len(e.get("rows", [])) for e in kinds("summary"))
print(f"plugin_start {len(kinds('plugin_start'))}")
print(f"comm_init faces {sorted(f for f in faces if f)}")
print(f"tuner getCollInfo calls {tuner_calls}")
print(f"profiler samples {prof_samples}")
print(f"summary rows {rows}")
PY
    cat "$OUT/log-check.txt"
    grep -q '^plugin_start [1-9]' "$OUT/log-check.txt" && grep -q "'profiler'" "$OUT/log-check.txt" && \
      grep -q "'tuner'" "$OUT/log-check.txt" && checked "NCCL loaded wirewise as tuner and profiler ($NPROC rank(s))" || \
      failed "the adaptation log does not show NCCL loading both faces (see $OUT/log-check.txt)"
    if grep -q '^profiler samples [1-9]' "$OUT/log-check.txt" || grep -q '^summary rows [1-9]' "$OUT/log-check.txt"; then
      checked "collectives observed in the adaptation log"
    elif [ "$NPROC" -lt 2 ]; then
      skipped "collectives observed: none with 1 rank (NCCL may not run a 1-rank all-reduce through the plugin)"
    else
      failed "no collectives observed in the adaptation log (see $OUT/log-check.txt)"
    fi
    "$WW" log summarize "$LOGDIR"/*.jsonl > "$OUT/log-summary.txt" 2>&1 || true
  fi
fi
finish
