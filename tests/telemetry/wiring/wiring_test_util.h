// Loading the recorded maps under data/ for the wiring tests.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "telemetry/wiring/analysis.h"
#include "telemetry/wiring/wiring_json.h"

namespace wirewise::wiring::testing {

inline std::string dataPath(const std::string& name) { return std::string(WW_WIRING_DATA) + "/" + name; }

inline WiringMap loadMap(const std::string& name) {
  WiringMap map;
  std::string err;
  EXPECT_TRUE(readMapFile(dataPath(name), &map, &err)) << err;
  return map;
}

inline const Flag* findFlag(const Analysis& a, FlagKind kind, int src, int dst) {
  for (const Flag& f : a.flags) {
    if (f.kind == kind && f.src == src && f.dst == dst) return &f;
  }
  return nullptr;
}

inline int countFlags(const Analysis& a, FlagKind kind) {
  int n = 0;
  for (const Flag& f : a.flags) n += f.kind == kind;
  return n;
}

}  // namespace wirewise::wiring::testing
