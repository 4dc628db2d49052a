// Loads the real libnccl-tuner-wirewise.so through the NCCL-faithful loader, once per process (as NCCL
// does), and gives each test a fresh temp directory, log file and configuration. The runtime re-reads
// WIREWISE_* when its last communicator is gone, so every test finalizes what it opens.
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "sim/loader/nccl_loader.h"

namespace wirewise::testing {

inline void* pluginHandle() {
  static loader::OpenResult open = loader::openPlugin(loader::PluginKind::Tuner, WW_TUNER_SO, nullptr);
  return open.handle;
}

// NCCL's float[7][3] cost table, µs. -1.0 marks a combination NCCL disabled.
struct CostTable {
  float cells[NCCL_NUM_ALGORITHMS][NCCL_NUM_PROTOCOLS];
};

// Tree and Ring enabled, everything else disabled, Ring/LL cheapest: NCCL alone picks ring/ll.
inline CostTable typicalTable() {
  CostTable t;
  for (auto& row : t.cells)
    for (float& c : row) c = -1.0f;
  t.cells[NCCL_ALGO_TREE][NCCL_PROTO_LL] = 20;
  t.cells[NCCL_ALGO_TREE][NCCL_PROTO_LL128] = 15;
  t.cells[NCCL_ALGO_TREE][NCCL_PROTO_SIMPLE] = 30;
  t.cells[NCCL_ALGO_RING][NCCL_PROTO_LL] = 10;
  t.cells[NCCL_ALGO_RING][NCCL_PROTO_LL128] = 12;
  t.cells[NCCL_ALGO_RING][NCCL_PROTO_SIMPLE] = 25;
  return t;
}

class PluginTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_NE(pluginHandle(), nullptr) << "cannot open " << WW_TUNER_SO;
    char tmpl[] = "/tmp/ww-plugin-test-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
    logPath_ = dir_ + "/log.jsonl";
    setenv("WIREWISE_LOG", logPath_.c_str(), 1);
    unsetenv("WIREWISE_CONFIG");
    unsetenv("WIREWISE_MODE");
  }
  void TearDown() override {
    unsetenv("WIREWISE_CONFIG");
    std::filesystem::remove_all(dir_);
  }
  void useConfig(const std::string& text, const std::string& name = "table.json") {
    std::string path = dir_ + "/" + name;
    std::ofstream(path) << text;
    setenv("WIREWISE_CONFIG", path.c_str(), 1);
  }
  std::vector<nlohmann::json> logEvents(const std::string& kind) const {
    std::vector<nlohmann::json> out;
    std::ifstream f(logPath_);
    std::string line;
    while (std::getline(f, line)) {
      auto j = nlohmann::json::parse(line, nullptr, false);
      if (!j.is_discarded() && j.value("event", "") == kind) out.push_back(j);
    }
    return out;
  }
  std::string dir_, logPath_;
};

}  // namespace wirewise::testing
