// Events as the runtime's parts build them (the typed events of common/log_events.h), one or more of every
// kind that carries a metric: what the metrics tests and the dashboard's test feed to Metrics.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "adaptive/buckets.h"
#include "common/log_events.h"

namespace wirewise::testing {

inline std::vector<nlohmann::json> metricsEvents() {
  using namespace logev;
  const std::string comm = "0x00000000000000ab";
  std::vector<nlohmann::json> out;
  out.push_back(PluginStart{.version = "9.9.9", .host = "node1", .settings = {}, .profilerFace = true});
  out.push_back(CommInit{.comm = comm, .face = "profiler", .abi = "profiler_v5", .nRanks = 16, .nNodes = 2,
                         .rank = 3, .commName = "dp"});
  CommInit tuner;  // the tuner face is not told its rank or the comm's name
  tuner.comm = comm;
  tuner.face = "tuner";
  tuner.abi = "tuner_v5";
  tuner.nRanks = 16;
  tuner.nNodes = 2;
  out.push_back(tuner);
  RankTable init;
  init.comm = comm;
  init.reason = "init";
  init.source = "builtin";
  init.ranges = {{.coll = "allreduce", .algo = "ring", .proto = "simple", .minBytes = 0, .maxBytes = 1023}};
  out.push_back(init);
  out.push_back(ControlStart{.coordinator = "10.0.0.1:29517", .source = "MASTER_ADDR", .jobKey = "derived",
                             .hosting = true});
  out.push_back(Control{.level = "warn", .message = "comm 0x00000000000000ab waited 30 s at boundary 96"});

  // Two summary intervals of rank 3: 24-28 MiB all-reduces both times, 8 MiB all-gathers only in the first.
  // A row's min/max are the sizes seen (25 MiB), its bucket the grid's (24-28 MiB).
  const SummaryRow ar{.coll = "allreduce", .algo = "tree", .proto = "simple",
                      .bucket = SizeBuckets::index(26214400), .channels = 11, .minBytes = 26214400,
                      .maxBytes = 26214400, .count = 100, .p50Us = 400, .p99Us = 500, .busBwGBs = 120};
  const SummaryRow ag{.coll = "allgather", .algo = "ring", .proto = "ll128", .bucket = SizeBuckets::index(8388608),
                      .channels = 16, .minBytes = 8388608, .maxBytes = 8388608, .count = 50, .p50Us = 90,
                      .p99Us = 120, .busBwGBs = 80};
  Summary first{.comm = comm, .rank = 3, .intervalMs = 10000, .rows = {ar, ag}, .drops = {.pool = 2}};
  out.push_back(first);
  SummaryRow ar2 = ar;
  ar2.count = 200;
  ar2.p50Us = 345.5;
  ar2.p99Us = 410;
  ar2.busBwGBs = 141.25;
  out.push_back(Summary{.comm = comm, .rank = 3, .intervalMs = 10000, .rows = {ar2}, .drops = {}});

  CoordinatorTable t;
  t.comm = comm;
  t.reason = "adaptive: 1 probe(s)";
  t.digest = "0123456789abcdef";
  t.ranges = {{.coll = "allreduce", .algo = "tree", .proto = "simple", .minBytes = 25165824, .maxBytes = 29360127,
               .channels = 11}};
  t.index = 23;
  t.boundary = 1400;
  t.probe = true;
  t.probes = t.ranges;
  t.exploredUs = 15000;
  t.measuredUs = 1000000;
  out.push_back(t);
  for (const char* kind : {"alarm", "commit", "commit"}) {
    Adapt a;
    a.comm = comm;
    a.kind = kind;
    a.coll = "allreduce";
    a.minBytes = 25165824;
    a.maxBytes = 29360127;
    a.from = "nvls_tree/simple/16";
    a.to = "tree/simple/11";
    out.push_back(a);
  }
  for (uint64_t index : {0, 23}) {
    Verdict v;
    v.comm = comm;
    v.reason = index == 0 ? "static" : "adaptive";
    v.index = index;
    v.boundary = index * 60;
    out.push_back(v);
  }

  LinkEntry link;
  link.kind = "ib";
  link.id = "mlx5_3:1";
  link.state = "degraded";
  link.up = true;
  link.nominalGbps = 50;
  link.txGbps = 12.5;
  link.rxGbps = 3;
  link.errorsPerSec = 0.5;
  out.push_back(LinkHealth{.timeNs = 1, .passes = 3, .links = {link}, .sources = {}});
  CommFinalize fin;
  fin.comm = comm;
  fin.face = "tuner";
  fin.collectives = 5000;
  fin.applied = 4000;
  fin.kept = 0;
  fin.boundaries = 40;
  fin.waitedUs = 250000;
  out.push_back(fin);
  return out;
}

}  // namespace wirewise::testing
