#!/usr/bin/env bash
# Renders the simulator's SVG plot with headless Chromium and checks the screenshot is a real picture.
# Usage: render_check.sh WIREWISE_BIN OUT_DIR. Exits 77 (CTest: skipped) when /usr/bin/chromium is absent.
set -euo pipefail
bin=$1
out=$2
chromium=/usr/bin/chromium
if [[ ! -x $chromium ]]; then
  echo "SKIP: $chromium not found; the SVG render check needs a headless Chromium"
  exit 77
fi
mkdir -p "$out"
"$bin" simulate --steps 120 --quiet --plot "$out/plot.svg"
profile=$(mktemp -d)
trap 'rm -rf "$profile"' EXIT
rm -f "$out/plot.png"
timeout 120 "$chromium" --headless --no-sandbox --disable-gpu --disable-background-networking \
  --disable-component-update --disable-sync --no-first-run --user-data-dir="$profile" \
  --screenshot="$out/plot.png" --window-size=1200,700 "file://$out/plot.svg" >/dev/null 2>&1 || true
[[ -s $out/plot.png ]] || { echo "FAIL: no screenshot written"; exit 1; }
size=$(stat -c %s "$out/plot.png")
# A blank 1200x700 PNG compresses to a few KB; lines, text and shading make it much larger.
if (( size < 15000 )); then
  echo "FAIL: screenshot is only $size bytes (blank?)"
  exit 1
fi
echo "rendered $out/plot.png ($size bytes)"
