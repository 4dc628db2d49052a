#include <cstdio>
#include <functional>

#include "telemetry/wiring/render.h"
#include "telemetry/wiring/text_util.h"

namespace wirewise::wiring {
namespace {

std::string pad(const std::string& s, size_t w) { return s.size() >= w ? " " + s : std::string(w - s.size(), ' ') + s; }

constexpr size_t kCell = 10;

// One matrix: `cell(src, dst)` gives the text of a cell ("" for the diagonal when it has nothing).
void matrix(std::string& out, const WiringMap& map, const std::string& title,
            const std::function<std::string(const GpuInfo&, const GpuInfo&)>& cell) {
  out += "\n" + title + "\n" + pad("", 7);
  for (const GpuInfo& d : map.gpus) out += pad("gpu" + std::to_string(d.index), kCell);
  out += "\n";
  for (const GpuInfo& s : map.gpus) {
    std::string row = "gpu" + std::to_string(s.index);
    out += row + std::string(row.size() < 7 ? 7 - row.size() : 1, ' ');
    for (const GpuInfo& d : map.gpus) out += pad(cell(s, d), kCell);
    out += "\n";
  }
}

}  // namespace

std::string matrixText(const WiringMap& map, const Analysis& a) {
  std::string out;
  out += "wirewise wiring map";
  if (!map.host.empty()) out += ": " + map.host;
  out += ", " + std::to_string(map.gpus.size()) + " GPU(s)";
  if (!map.time.empty()) out += ", " + map.time;
  out += "\n";
  if (map.method.bytes > 0) {
    out += fixed(static_cast<double>(map.method.bytes) / (1 << 20), 0) + " MiB per copy, median of " +
           std::to_string(map.method.trials) + " trial(s) after " + std::to_string(map.method.warmup) + " warm-up\n";
  }
  for (const GpuInfo& g : map.gpus) {
    out += "  gpu" + std::to_string(g.index) + " " + (g.name.empty() ? "?" : g.name);
    if (!g.pciBusId.empty()) out += " " + g.pciBusId;
    if (!g.present) out += "  MISSING";
    if (g.nvlinksUp >= 0) out += "  nvlinks up " + std::to_string(g.nvlinksUp);
    if (g.pcie.gen > 0) out += "  pcie gen" + std::to_string(g.pcie.gen) + " x" + std::to_string(g.pcie.width);
    out += "\n";
  }
  if (map.gpus.size() < 2) out += "  (a single GPU has no pairs: only its self copy was measured)\n";

  auto missing = [](const GpuInfo& s, const GpuInfo& d) { return !s.present || !d.present; };
  matrix(out, map,
         "unidirectional GB/s, row -> column (best of copy engine, SM write, SM read; diagonal: self copy, "
         "read + write; ! flagged, ~ no peer access)",
         [&](const GpuInfo& s, const GpuInfo& d) -> std::string {
           if (missing(s, d)) return "missing";
           if (s.index == d.index) {
             const GpuVerdict* v = a.gpu(s.index);
             return s.selfCopyGbps > 0 ? fixed(s.selfCopyGbps, 1) + (v && v->flagged ? "!" : "") : "-";
           }
           const PairResult* p = map.pair(s.index, d.index);
           const PairVerdict* v = a.pair(s.index, d.index);
           if (!p || p->bestUniGbps() <= 0) return "n/a";
           return fixed(p->bestUniGbps(), 1) + (p->peerAccess ? "" : "~") + (v && v->flagged ? "!" : "");
         });
  matrix(out, map, "fraction of nominal (unidirectional; diagonal: self copy / memory bandwidth)",
         [&](const GpuInfo& s, const GpuInfo& d) -> std::string {
           if (missing(s, d)) return "missing";
           if (s.index == d.index) {
             const GpuVerdict* v = a.gpu(s.index);
             return v && v->selfCopyRatio >= 0 ? fixed(v->selfCopyRatio, 2) : "-";
           }
           const PairVerdict* v = a.pair(s.index, d.index);
           return v && v->uniRatio >= 0 ? fixed(v->uniRatio, 2) : "?";
         });
  matrix(out, map, "bidirectional GB/s (both directions at once, sum)",
         [&](const GpuInfo& s, const GpuInfo& d) -> std::string {
           if (missing(s, d)) return "missing";
           if (s.index == d.index) return "-";
           const PairResult* p = map.pair(s.index, d.index);
           return p && p->bidirGbps > 0 ? fixed(p->bidirGbps, 1) : "n/a";
         });
  matrix(out, map, "latency, us one way (half the ping-pong round trip)",
         [&](const GpuInfo& s, const GpuInfo& d) -> std::string {
           if (missing(s, d)) return "missing";
           if (s.index == d.index) return "-";
           const PairResult* p = map.pair(s.index, d.index);
           return p && p->latencyUs > 0 ? fixed(p->latencyUs, 2) : "n/a";
         });

  out += "\nflagged (" + std::to_string(a.flags.size()) + ", below " + fixed(a.options.flagBelow, 2) +
         " of nominal or " + fixed(a.options.peerBelow, 2) + " of the link type's median):\n";
  if (a.flags.empty()) out += "  none\n";
  for (const Flag& f : a.flags) out += "  [" + std::string(flagKindName(f.kind)) + "] " + f.text + "\n";
  for (const std::string& n : map.notes) out += "note: " + n + "\n";
  return out;
}

}  // namespace wirewise::wiring
