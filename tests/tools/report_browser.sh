#!/usr/bin/env bash
# `wirewise report` in a real browser: a simulated run's adaptation log (the real plugin library, loaded by
# the simulator as NCCL would) becomes a page that headless Chromium opens at desktop and phone width. It
# checks: a non-blank screenshot at each width, no console message (the page has no script, so any is an
# error: a blocked load, a parse failure), the expected parts in the rendered DOM, and no sideways scroll of
# the page at 390 px (charts scroll inside their own boxes). A page with a deliberate console.error proves
# the console check can fail.
# Usage: report_browser.sh WIREWISE_BIN OUT_DIR. Exits 77 (CTest: skipped) when /usr/bin/chromium is absent.
set -euo pipefail
bin=$1
out=$2
chromium=/usr/bin/chromium
if [[ ! -x $chromium ]]; then
  echo "SKIP: $chromium not found; the report's browser check needs a headless Chromium (.ci/install-deps installs it)"
  exit 77
fi
rm -rf "$out"
mkdir -p "$out"
"$bin" simulate --steps 160 --quiet --log "$out/run.jsonl" >/dev/null
"$bin" report "$out/run.jsonl" -o "$out/report.html"

profile=$(mktemp -d)
trap 'rm -rf "$profile"' EXIT
browse() {  # browse WIDTH URL ARGS...: Chromium's stderr goes to $out/console.log
  local width=$1 url=$2
  shift 2
  timeout 120 "$chromium" --headless --no-sandbox --disable-gpu --disable-background-networking \
    --disable-component-update --disable-sync --no-first-run --user-data-dir="$profile" \
    --enable-logging=stderr --v=0 --window-size="$width,2400" "$@" "$url" 2>>"$out/console.log" || true
}

# What the page looks like once laid out, read back through the DOM (the probe script runs after it).
probe='<script>var d=document.documentElement;d.setAttribute("data-sidescroll",d.scrollWidth>window.innerWidth?"yes":"no");'
probe+='d.setAttribute("data-svgs",document.querySelectorAll("svg").length);</script>'
sed "s#</body>#${probe}</body>#" "$out/report.html" >"$out/probe.html"
sed "s#</body>#<script>console.error('deliberate')</script></body>#" "$out/report.html" >"$out/noisy.html"

fail=0
check() {  # check CONDITION_TEXT COMMAND...
  local what=$1
  shift
  if "$@"; then echo "ok: $what"; else echo "FAIL: $what"; fail=1; fi
}

: >"$out/console.log"
browse 390 "file://$out/noisy.html" --dump-dom >/dev/null
check "the console check sees a console.error (it can fail)" grep -q "deliberate" "$out/console.log"

for width in 1280 390; do
  : >"$out/console.log"
  rm -f "$out/report-$width.png"
  browse "$width" "file://$out/report.html" --screenshot="$out/report-$width.png" >/dev/null
  size=$(stat -c %s "$out/report-$width.png" 2>/dev/null || echo 0)
  # A blank page compresses to a few KB; charts, tables and text make it far larger.
  check "screenshot at $width px is a real picture ($size bytes)" test "$size" -gt 40000
  browse "$width" "file://$out/probe.html" --dump-dom >"$out/dom-$width.html"
  check "no console message at $width px" bash -c "! grep -E 'CONSOLE|Uncaught|Failed to load' '$out/console.log'"
  check "the page does not scroll sideways at $width px" grep -q 'data-sidescroll="no"' "$out/dom-$width.html"
  for part in '<svg class="timeline"' '<svg class="bandwidth"' '<rect class="range"' '<polyline class="series"' \
    '<section class="comm"' '<table class="events"' '<section id="links"' 'class="waits"'; do
    check "rendered: $part" grep -q "$part" "$out/dom-$width.html"
  done
done
grep -o 'data-svgs="[0-9]*"' "$out/dom-390.html" || true
echo "report: $out/report.html, screenshots: $out/report-1280.png, $out/report-390.png"
exit "$fail"
