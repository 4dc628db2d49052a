#!/usr/bin/env bash
# Real-NCCL check on a one-GPU machine (issue #18 item 6): PyTorch's own NCCL, 4 ranks on the one GPU, each its
# own NCCL_HOSTID, so NCCL sees 4 hosts talking over sockets on loopback and runs its whole tuner, profiler
# and net plugin path. Six torchrun jobs (a observe, b static table, c defaults, d + net face, e without
# wirewise, f + CUPTI), the probe kernels' checks and `wirewise probe`, then real_nccl_check.py: one summary,
# exit 1 if any check failed. Under 8 minutes (--budget); every step has a timeout.
#
#   bench/gpu/real_nccl.sh [--out DIR] [--lib DIR] [--bin DIR] [--budget SECONDS]
#   bench/gpu/real_nccl.sh --dry-run [--fixtures DIR] [--out DIR]   # CI: recorded logs, a stub launcher
#   bench/gpu/real_nccl.sh --pack DIR                                # here: library, CLI, probe and their
#                                                                    # non-system libraries, to carry over
# The GPU machine needs CUDA, PyTorch and Python only: nothing here is built there (see bench/gpu/README.md).
# --dry-run swaps only what needs the GPU: the launcher (testdata/stub_launch.py writes what torchrun would,
# the adaptation logs from `wirewise simulate` driving the real library), the GPU probe (testdata/stub_probe.sh)
# and PyTorch's NCCL version (the fixture's meta.txt).
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
OUT=ww-real-nccl
LIB=$ROOT/build/lib
BIN=$ROOT/build/bin
DRY=0
FIX=$HERE/testdata/good
BUDGET=450
PACK=""
WORLD=4
# Tuner bytes (the static table's edge, 256 KiB, falls between two) and timed iterations per size; the
# environment can shrink them for a rerun on a slow machine.
SIZES=${WW_REAL_NCCL_SIZES:-4096,65536,1048576,8388608,33554432}
ITERS=${WW_REAL_NCCL_ITERS:-10}

usage() { sed -n '2,15p' "$0"; exit 2; }
while [ $# -gt 0 ]; do
  case $1 in
    --out) OUT=$2; shift ;;
    --lib) LIB=$2; shift ;;
    --bin) BIN=$2; shift ;;
    --budget) BUDGET=$2; shift ;;
    --dry-run) DRY=1 ;;
    --fixtures) FIX=$(cd "$2" && pwd) || exit 2; shift ;;
    --pack) PACK=$2; shift ;;
    *) usage ;;
  esac
  shift
done

# --pack: what the GPU machine needs, with the shared libraries it may lack (libfmt for the CLI); never
# glibc or libstdc++, which must come from that machine.
if [ -n "$PACK" ]; then
  mkdir -p "$PACK/lib" "$PACK/bin" || exit 1
  cp -P "$LIB"/libnccl-*-wirewise.so "$PACK/lib/" && cp "$BIN/wirewise" "$BIN/ww-probe-gpu" "$PACK/bin/" || exit 1
  # Debug sections are most of the bytes; the device tool carries at most 64 MiB.
  strip --strip-debug "$PACK/lib/libnccl-tuner-wirewise.so" "$PACK/bin/wirewise" "$PACK/bin/ww-probe-gpu" || exit 1
  for f in "$PACK/lib/libnccl-tuner-wirewise.so" "$PACK/bin/wirewise" "$PACK/bin/ww-probe-gpu"; do
    ldd "$f" | awk '$3 ~ /^\// { print $3 }'
  done | sort -u | grep -Ev '/(libc|libm|libdl|librt|libpthread|libstdc\+\+|libgcc_s|ld-linux[^/]*)\.so' |
    while read -r so; do cp -L "$so" "$PACK/lib/" && echo "packed $so"; done
  echo "packed into $PACK: run bench/gpu/real_nccl.sh --lib $PACK/lib --bin $PACK/bin on the GPU machine"
  exit 0
fi

START=$(date +%s)
DEADLINE=$((START + BUDGET))
# Seconds a step may take: its own limit, or what the budget has left less a reserve for the checks.
limit() {
  local left=$((DEADLINE - $(date +%s) - 20))
  [ "$left" -lt "$1" ] && echo "$left" || echo "$1"
}

mkdir -p "$OUT" && OUT=$(cd "$OUT" && pwd) || exit 1
LIB=$(cd "$LIB" && pwd) || exit 1
BIN=$(cd "$BIN" && pwd) || exit 1
# The plugin appends to its logs: a previous run's lines must not count.
rm -rf "${OUT:?}"/a "$OUT"/b "$OUT"/c "$OUT"/d "$OUT"/e "$OUT"/f "$OUT"/probe "$OUT"/meta.txt "$OUT"/failed.txt
TUNER=$LIB/libnccl-tuner-wirewise.so
PROFILER=$LIB/libnccl-profiler-wirewise.so
# The CLI finds packed libraries (libfmt) here, and NCCL_NET_PLUGIN=wirewise finds libnccl-net-wirewise.so.
export LD_LIBRARY_PATH="$LIB${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"

for f in "$TUNER" "$PROFILER" "$LIB/libnccl-net-wirewise.so" "$BIN/wirewise"; do
  [ -e "$f" ] || { echo "missing $f (build here, or --pack, and pass --lib/--bin)"; exit 1; }
done
# A library this machine's loader cannot load would only show up as "faces not loaded": say why now.
if ! err=$(python3 -c 'import ctypes, sys; ctypes.CDLL(sys.argv[1])' "$TUNER" 2>&1); then
  echo "cannot load $TUNER here: $err"; exit 1
fi
if ! err=$("$BIN/wirewise" --version 2>&1); then echo "cannot run $BIN/wirewise here: $err"; exit 1; fi

echo "=== NCCL version ==="
if [ "$DRY" = 1 ]; then
  PROBE=$HERE/testdata/stub_probe.sh
  LAUNCH=(python3 "$HERE/testdata/stub_launch.py" --fixtures "$FIX" --wirewise "$BIN/wirewise" --world "$WORLD")
  meta=$FIX/meta.txt
  [ -f "$meta" ] || meta=$HERE/testdata/good/meta.txt  # a negative case holds only what differs from good
  cp "$meta" "$OUT/meta.txt"
else
  PROBE=$BIN/ww-probe-gpu
  LAUNCH=(python3 -m torch.distributed.run --standalone --nproc-per-node "$WORLD" "$HERE/real_nccl_worker.py")
  # PyTorch's NCCL version and device; the plugin loaded beside PyTorch's own libraries (a libstdc++ older
  # than ours would refuse it); the libcupti PyTorch ships, if it is CUDA 13's (the one wirewise reads).
  WW_TUNER=$TUNER timeout 60 python3 - > "$OUT/meta.txt" <<'PY' || { cat "$OUT/meta.txt"; echo "PyTorch not usable"; }
import ctypes, glob, os, torch
try:
    ctypes.CDLL(os.environ["WW_TUNER"])
    print("plugin_load=ok")
except OSError as e:
    print("plugin_load=" + str(e).replace("\n", " "))
v = torch.cuda.nccl.version()  # a tuple; an int (NCCL_VERSION_CODE) in old PyTorch
if isinstance(v, int):
    v = (v // 10000, v // 100 % 100, v % 100) if v >= 20900 else (v // 1000, v // 100 % 10, v % 100)
print("nccl_version=" + ".".join(str(x) for x in v if str(x) != ""))
print("torch_version=" + torch.__version__)
print("device=" + (torch.cuda.get_device_name(0) if torch.cuda.is_available() else "no CUDA device"))
site = os.path.dirname(os.path.dirname(torch.__file__))  # the nvidia-* wheels, or a copy in torch/lib
hits = glob.glob(site + "/nvidia/**/libcupti.so.13*", recursive=True) + glob.glob(site + "/torch/lib/libcupti.so.13*")
print("cupti_dir=" + (os.path.dirname(hits[0]) if hits else ""))
PY
fi
printf 'dry_run=%s\nworld=%s\nsizes=%s\noverhead_limit=1.5\n' "$DRY" "$WORLD" "$SIZES" >> "$OUT/meta.txt"
cat "$OUT/meta.txt"
CUPTI_DIR=$(sed -n 's/^cupti_dir=//p' "$OUT/meta.txt")

echo "=== probe kernels' checks and wirewise probe ==="
mkdir -p "$OUT/probe"
timeout -k 5 "$(limit 60)" "$PROBE" --check --bytes 67108864 > "$OUT/probe/checks.txt" 2>&1
echo "checks_rc=$?" > "$OUT/probe/status.txt"
timeout -k 5 "$(limit 150)" "$BIN/wirewise" probe --probe-binary "$PROBE" --out "$OUT/probe/wiring.json" \
  --svg "$OUT/probe/wiring.svg" --quiet > "$OUT/probe/probe.txt" 2> "$OUT/probe/probe.err"
echo "probe_rc=$?" >> "$OUT/probe/status.txt"
tail -3 "$OUT/probe/checks.txt"

# The static table of run b: choices NCCL would not make itself on either side of 256 KiB (LL for large
# messages, Simple for small), so the profiler's Coll events can show that the table, not NCCL, chose.
write_table() {
  cat > "$1" <<'JSON'
{"version": 1, "description": "bench/gpu/real_nccl.sh run b",
 "rules": [
  {"coll": "allreduce", "min_bytes": 0, "max_bytes": 262143, "algo": "ring", "proto": "simple"},
  {"coll": "allreduce", "min_bytes": 262144, "max_bytes": -1, "algo": "ring", "proto": "ll"},
  {"coll": "allgather", "min_bytes": 0, "max_bytes": 262143, "algo": "ring", "proto": "simple"},
  {"coll": "allgather", "min_bytes": 262144, "max_bytes": -1, "algo": "ring", "proto": "ll"},
  {"coll": "reducescatter", "min_bytes": 0, "max_bytes": 262143, "algo": "ring", "proto": "simple"},
  {"coll": "reducescatter", "min_bytes": 262144, "max_bytes": -1, "algo": "ring", "proto": "ll"}]}
JSON
}

# One torchrun job: NAME, its time limit, its worker options. The environment is set in a subshell, so runs
# never leak settings into each other.
run() {
  local name=$1 cap=$2 dir=$OUT/$1 t0 rc t
  shift 2
  mkdir -p "$dir"
  echo "=== run $name ==="
  if [ "$name" = f ] && [ -z "$CUPTI_DIR" ]; then
    echo "skip=no libcupti.so.13 in PyTorch's install (wirewise's CUPTI collector reads CUDA 13's records)" \
      > "$dir/status.txt"
    cat "$dir/status.txt"; return
  fi
  t=$(limit "$cap")
  if [ "$t" -lt 15 ]; then
    printf 'rc=124\nseconds=0\n' > "$dir/status.txt"; echo "not started: the ${BUDGET} s budget is spent"; return
  fi
  t0=$(date +%s)
  (
    export NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,TUNING,NET NCCL_SOCKET_IFNAME=lo NCCL_IB_DISABLE=1
    export WIREWISE_LOG="$dir/wirewise.%p.jsonl" WIREWISE_SUMMARY_MS=1000
    unset NCCL_TUNER_PLUGIN NCCL_PROFILER_PLUGIN NCCL_NET_PLUGIN WIREWISE_MODE WIREWISE_CONFIG WIREWISE_POLICY \
      WIREWISE_CUPTI WIREWISE_SYNC
    if [ "$name" != e ]; then export NCCL_TUNER_PLUGIN=$TUNER NCCL_PROFILER_PLUGIN=$PROFILER; fi
    case $name in
      a) export WIREWISE_MODE=observe ;;
      b) write_table "$dir/table.json"; export WIREWISE_CONFIG="$dir/table.json" WIREWISE_POLICY=static ;;
      d) export NCCL_NET_PLUGIN=wirewise ;;  # by name, as users write it: found on LD_LIBRARY_PATH
      f) export WIREWISE_CUPTI=on WIREWISE_COLLECT_MS=250 LD_LIBRARY_PATH="$CUPTI_DIR:$LD_LIBRARY_PATH" ;;
    esac
    exec timeout -k 10 "$t" "${LAUNCH[@]}" --out "$dir" --sizes "$SIZES" --iters "$ITERS" "$@"
  ) > "$dir/torchrun.log" 2>&1
  rc=$?
  printf 'rc=%s\nseconds=%s\n' "$rc" "$(($(date +%s) - t0))" > "$dir/status.txt"
  echo "exit $rc in $(($(date +%s) - t0)) s"
  [ "$rc" = 0 ] || tail -5 "$dir/torchrun.log"
}

run e 60 --linger 0.5  # e and a back to back: the overhead comparison
run a 60 --linger 0.5
run b 60 --linger 0.5
run c 100 --rounds 4 --linger 0.5  # traffic for the adaptive policy to calibrate on
run d 60 --linger 0.5
run f 70 --linger 3  # CUPTI matching lands one or two sampler passes after the kernels

if ls "$OUT"/c/wirewise*.jsonl > /dev/null 2>&1; then
  timeout 30 "$BIN/wirewise" log summarize "$OUT"/c/wirewise*.jsonl > "$OUT/c/log-summary.txt" 2>&1
  echo "summarize_rc=$?" >> "$OUT/c/status.txt"
fi

echo "=== checks ==="
python3 "$HERE/real_nccl_check.py" "$OUT" | tee "$OUT/summary.txt"
rc=${PIPESTATUS[0]}
echo "$(($(date +%s) - START)) s in all (budget $BUDGET s); outputs in $OUT"
exit "$rc"
