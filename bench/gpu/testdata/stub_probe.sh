#!/bin/sh
# Stands in for ww-probe-gpu in `bench/gpu/real_nccl.sh --dry-run`: what the probe printed and measured on a
# one-GPU machine (hand-written in its formats). `wirewise probe --probe-binary` runs it like the real probe.
DIR=$(cd "$(dirname "$0")" && pwd)
out=""
while [ $# -gt 0 ]; do
  case $1 in
    --check) cat "$DIR/good/probe-checks.txt"; exit 0 ;;
    --out) out=$2; shift ;;
  esac
  shift
done
[ -n "$out" ] || { echo "stub_probe: no --out" >&2; exit 2; }
cp "$DIR/good/wiring.json" "$out"
