#!/usr/bin/env bash
# The Prometheus outputs against the real Prometheus (docs/prometheus.md): a simulated run (the real plugin
# library, loaded by the simulator as NCCL would) serves /metrics and writes a textfile; a Prometheus server
# (Debian's `prometheus` package) scrapes the endpoint every second, and the check asks its HTTP API for
# nccl_bus_bandwidth_gbs until a series comes back. `promtool check metrics` then lints both the scraped
# text and the textfile; the one finding allowed is the NCCL Inspector's own name
# nccl_collective_exec_time_microseconds (not in base units; kept so Inspector dashboards work).
# Usage: prometheus_check.sh WIREWISE_BIN OUT_DIR. Exits 77 (CTest: skipped) without prometheus or promtool.
set -euo pipefail
bin=$1
out=$2
for tool in /usr/bin/prometheus /usr/bin/promtool; do
  if [[ ! -x $tool ]]; then
    echo "SKIP: $tool not found; this check needs Debian's prometheus package (.ci/run installs it)"
    exit 77
  fi
done
rm -rf "$out"
mkdir -p "$out/textfile" "$out/tsdb"

pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
}
trap cleanup EXIT

free_port() {
  python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}
metrics_port=$(free_port)
prom_port=$(free_port)
[[ $metrics_port != "$prom_port" ]] || prom_port=$(free_port)

cat >"$out/prometheus.yml" <<EOF
global:
  scrape_interval: 1s
  scrape_timeout: 1s
scrape_configs:
  - job_name: wirewise
    static_configs:
      - targets: ['127.0.0.1:$metrics_port']
EOF
promtool check config "$out/prometheus.yml" >/dev/null

# Prometheus first: it keeps trying the target until the simulation serves it.
/usr/bin/prometheus --config.file="$out/prometheus.yml" --storage.tsdb.path="$out/tsdb" \
  --web.listen-address="127.0.0.1:$prom_port" >"$out/prometheus.log" 2>&1 &
pids+=($!)

# A run long enough for several scrapes (about 30 s here): the endpoint lives as long as the plugin's runtime.
# Summaries every 200 ms, so the series appear within the first scrapes. No launcher's local rank: the port
# is the base port itself.
env -u LOCAL_RANK -u SLURM_LOCALID -u OMPI_COMM_WORLD_LOCAL_RANK \
  WIREWISE_PROMETHEUS_PORT="$metrics_port" WIREWISE_PROMETHEUS_DIR="$out/textfile" WIREWISE_SUMMARY_MS=200 \
  "$bin" simulate --steps 6000 --quiet >"$out/simulate.log" 2>&1 &
sim=$!
pids+=($sim)

query() {  # query PROMQL: prints the number of series in the result, or -1 when the API does not answer
  python3 - "$prom_port" "$1" <<'EOF'
import json, sys, urllib.parse, urllib.request
url = "http://127.0.0.1:%s/api/v1/query?query=%s" % (sys.argv[1], urllib.parse.quote(sys.argv[2]))
try:
    with urllib.request.urlopen(url, timeout=2) as r:
        body = json.load(r)
    print(len(body["data"]["result"]) if body.get("status") == "success" else -1)
except Exception:
    print(-1)
EOF
}

fail=0
found=0
for _ in $(seq 1 120); do
  if [[ $(query 'nccl_bus_bandwidth_gbs{job="wirewise"}') -gt 0 ]]; then
    found=1
    break
  fi
  kill -0 "$sim" 2>/dev/null || break
  sleep 0.5
done
if [[ $found == 1 ]]; then
  echo "ok: Prometheus scraped nccl_bus_bandwidth_gbs from 127.0.0.1:$metrics_port"
  # The scraped text itself, as promtool sees it.
  python3 -c "import urllib.request,sys; sys.stdout.write(urllib.request.urlopen('http://127.0.0.1:$metrics_port/metrics', timeout=5).read().decode())" \
    >"$out/scraped.prom" || true
else
  echo "FAIL: Prometheus's API returned no nccl_bus_bandwidth_gbs series (prometheus.log, simulate.log below)"
  tail -n 20 "$out/prometheus.log" "$out/simulate.log" || true
  fail=1
fi
for q in 'wirewise_info{job="wirewise"}' 'wirewise_collectives_total{job="wirewise"}'; do
  if [[ $found == 1 && $(query "$q") -le 0 ]]; then
    echo "FAIL: no series for $q"
    fail=1
  fi
done

# The run ends on its own; its last textfile version is written at the runtime's stop.
kill "$sim" 2>/dev/null || true
wait "$sim" 2>/dev/null || true

lint() {  # lint FILE: promtool's findings but the allowed one; fails on any other or on a parse error
  local file=$1 findings
  findings=$(promtool check metrics <"$file" 2>&1 || true)
  findings=$(grep -v '^nccl_collective_exec_time_microseconds use base unit "seconds" instead of "microseconds"$' \
    <<<"$findings" || true)
  if [[ -n $findings ]]; then
    echo "FAIL: promtool check metrics $file:"
    echo "$findings"
    fail=1
  elif ! grep -q '^nccl_bus_bandwidth_gbs{' "$file"; then
    echo "FAIL: $file has no nccl_bus_bandwidth_gbs series"
    fail=1
  else
    echo "ok: promtool check metrics $file: no problems (beyond the Inspector's unit)"
  fi
}
shopt -s nullglob
files=("$out"/textfile/*.prom)
if [[ ${#files[@]} -ne 1 ]]; then
  echo "FAIL: expected one .prom file in $out/textfile, found: ${files[*]:-none}"
  ls -la "$out/textfile"
  fail=1
else
  lint "${files[0]}"
fi
leftovers=("$out"/textfile/*.tmp)
if [[ ${#leftovers[@]} -ne 0 ]]; then
  echo "FAIL: temporary files left: ${leftovers[*]}"
  fail=1
fi
[[ -s $out/scraped.prom ]] && lint "$out/scraped.prom"

# The lint must be able to fail: a counter without _total is a finding promtool reports.
printf '# HELP wirewise_bad a counter without its suffix\n# TYPE wirewise_bad counter\nwirewise_bad 1\n' >"$out/bad.prom"
if [[ -z $(promtool check metrics <"$out/bad.prom" 2>&1 || true) ]]; then
  echo "FAIL: promtool reported nothing for a deliberately bad file: the lint proves nothing"
  fail=1
fi
exit $fail
