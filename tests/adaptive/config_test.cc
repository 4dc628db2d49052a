#include "adaptive/config.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <random>
#include <string>

namespace wirewise {
namespace {

Decision dec(int a, int p, int ch = 0) { return Decision{int8_t(a), int8_t(p), int8_t(ch)}; }

ParsedConfig csv(std::string_view text) { return parseConfigText(text, "t.conf"); }

// As the runtime and the tools do: read (bounded), then parse.
ParsedConfig fromDisk(const std::string& path) { return parseConfigFile(path, readFileText(path, kMaxConfigBytes)); }

// One bad line between two good ones: the bad line is reported on its own line and skipped.
ConfigProblem badLine(const std::string& line) {
  auto cfg = csv("allreduce,0,10,ring,ll,-1,-1,-1\n" + line + "\nreduce,0,10,tree,simple,-1,-1,-1\n");
  EXPECT_EQ(cfg.format, "csv");
  EXPECT_EQ(cfg.rules.size(), 2u) << line;
  EXPECT_EQ(cfg.problems.size(), 1u) << line;
  if (cfg.problems.size() != 1) return {};
  EXPECT_EQ(cfg.problems[0].file, "t.conf");
  EXPECT_EQ(cfg.problems[0].line, 2);
  EXPECT_FALSE(cfg.problems[0].warningOnly);
  return cfg.problems[0];
}

void expectSane(const ParsedConfig& cfg) {
  for (const ConfigRule& r : cfg.rules) {
    ASSERT_GE(r.rule.coll, kAny);
    ASSERT_LT(r.rule.coll, kNumCollTypes);
    ASSERT_LE(r.rule.minBytes, r.rule.maxBytes);
    ASSERT_GE(r.rule.decision.algo, kAny);
    ASSERT_LT(r.rule.decision.algo, kNumAlgos);
    ASSERT_GE(r.rule.decision.proto, kAny);
    ASSERT_LT(r.rule.decision.proto, kNumProtos);
    ASSERT_GE(r.rule.decision.nChannels, 0);
    ASSERT_LE(r.rule.decision.nChannels, kMaxChannels);
  }
  for (const ConfigProblem& p : cfg.problems) {
    for (char c : p.reason) ASSERT_TRUE(c >= 0x20 && c < 0x7f) << "unprintable byte in a reason";
    ASSERT_LE(p.reason.size(), 400u);
  }
}

TEST(ConfigCsv, GoodFileFromDisk) {
  auto cfg = fromDisk(WW_ADAPTIVE_TESTDATA "/tuner.conf");
  EXPECT_EQ(cfg.format, "csv");
  EXPECT_EQ(cfg.source, WW_ADAPTIVE_TESTDATA "/tuner.conf");
  EXPECT_TRUE(cfg.problems.empty()) << cfg.problems[0].reason;
  ASSERT_EQ(cfg.rules.size(), 4u);
  EXPECT_EQ(cfg.rules[0].rule, (TableRule{4, 0, 65535, dec(kAlgoTree, kProtoLL, 2)}));
  EXPECT_EQ(cfg.rules[0].nNodes, 1);
  EXPECT_EQ(cfg.rules[0].line, 2);
  EXPECT_EQ(cfg.rules[1].rule, (TableRule{4, 65536, 1048575, dec(kAlgoRing, kProtoLL128, 0)}));
  EXPECT_EQ(cfg.rules[1].nRanks, 8);
  EXPECT_EQ(cfg.rules[1].line, 3);
  EXPECT_EQ(cfg.rules[2].rule, (TableRule{3, 0, UINT64_MAX, dec(kAlgoRing, kProtoSimple, 0)}));
  EXPECT_EQ(cfg.rules[2].line, 5);
  EXPECT_EQ(cfg.rules[3].rule, (TableRule{0, 1024, 2047, dec(kAny, kProtoSimple, 64)}));
}

// The example lines of NCCL's ext-tuner/example/README.md, as a user would paste them.
TEST(ConfigCsv, NcclExampleReadmeLines) {
  auto cfg = csv(
      "# Single-node, small allreduce: use tree algorithm, registered buffers only\n"
      "allreduce,0,65536,tree,simple,2,1,-1,-1,1\n"
      "\n"
      "allreduce,65537,1048576,ring,simple,4,4,32,1,0\n"
      "allreduce,1048577,4294967295,ring,ll128,-1,-1,-1,4,-1\n"
      "broadcast,0,32768,tree,simple,-1,1,-1\n"
      "broadcast,32769,4294967295,ring,simple,2,-1,-1,1,0\n");
  expectSane(cfg);
  ASSERT_EQ(cfg.rules.size(), 5u);
  EXPECT_EQ(cfg.rules[0].rule, (TableRule{4, 0, 65536, dec(kAlgoTree, kProtoSimple, 2)}));
  EXPECT_EQ(cfg.rules[1].nNodes, 4);
  EXPECT_EQ(cfg.rules[1].nRanks, 32);
  EXPECT_EQ(cfg.rules[2].rule, (TableRule{4, 1048577, 4294967295ULL, dec(kAlgoRing, kProtoLL128, 0)}));
  EXPECT_EQ(cfg.rules[3].rule, (TableRule{0, 0, 32768, dec(kAlgoTree, kProtoSimple, 0)}));
  EXPECT_EQ(cfg.rules[4].line, 7);
  // Two warnings, each once per file: rank-local keys ignored, and the 4 GiB "all sizes" trap.
  ASSERT_EQ(cfg.problems.size(), 2u);
  for (const auto& p : cfg.problems) EXPECT_TRUE(p.warningOnly);
  EXPECT_EQ(cfg.problems[0].line, 2);
  EXPECT_NE(cfg.problems[0].reason.find("numPipeOps/regBuff are ignored"), std::string::npos);
  EXPECT_NE(cfg.problems[0].reason.find("hang"), std::string::npos);
  EXPECT_EQ(cfg.problems[1].line, 5);
  EXPECT_NE(cfg.problems[1].reason.find("4 GiB"), std::string::npos);
}

TEST(ConfigCsv, WildcardsAndMinusOneSizesReadAsTheExampleDoes) {
  auto cfg = csv("-1,0,-1,-1,-1,-1,-1,-1\n-1,-1,-1,ring,ll,1,-1,-1\n");
  ASSERT_EQ(cfg.rules.size(), 2u);
  EXPECT_EQ(cfg.rules[0].rule, (TableRule{kAny, 0, UINT64_MAX, Decision{}}));
  // strtoull("-1") is UINT64_MAX in the example: min_bytes -1 covers only that size. Kept, with a warning.
  EXPECT_EQ(cfg.rules[1].rule, (TableRule{kAny, UINT64_MAX, UINT64_MAX, dec(kAlgoRing, kProtoLL, 1)}));
  ASSERT_EQ(cfg.problems.size(), 1u);
  EXPECT_TRUE(cfg.problems[0].warningOnly);
  EXPECT_EQ(cfg.problems[0].line, 2);
  EXPECT_NE(cfg.problems[0].reason.find("min_bytes -1"), std::string::npos);
}

TEST(ConfigCsv, CrlfBomAndCommentsOnly) {
  auto cfg = csv("\xEF\xBB\xBF# header\r\nallgather,0,100,pat,simple,0,-1,-1\r\n   \r\n#x\r\n");
  EXPECT_TRUE(cfg.problems.empty());
  ASSERT_EQ(cfg.rules.size(), 1u);
  EXPECT_EQ(cfg.rules[0].line, 2);
  EXPECT_TRUE(csv("").rules.empty());
  EXPECT_TRUE(csv("# nothing\n\n").problems.empty());
}

TEST(ConfigCsv, EachKindOfBadLine) {
  struct Case {
    std::string line, reason;
  };
  const Case cases[] = {
      {"allreduce,0,10,ring,ll,-1,-1", "expected 8 to 10 comma-separated fields"},
      {"allreduce,0,10,ring,ll,-1,-1,-1,-1,-1,7", "found 11"},
      {"allreduce,0,,ring,ll,-1,-1,-1", "max_bytes: empty field"},
      {"allgatherv,0,10,ring,ll,-1,-1,-1", "unknown collective 'allgatherv'"},
      {"allreduce,abc,10,ring,ll,-1,-1,-1", "min_bytes: 'abc' is not a number"},
      {"allreduce,0,1e6,ring,ll,-1,-1,-1", "max_bytes: '1e6' is not a number"},
      {"allreduce,+5,10,ring,ll,-1,-1,-1", "min_bytes: '+5' is not a number"},
      {"allreduce,-2,10,ring,ll,-1,-1,-1", "min_bytes: '-2' is negative (only -1 is allowed)"},
      {"allreduce,0,18446744073709551616,ring,ll,-1,-1,-1", "does not fit in 64 bits"},
      {"allreduce,11,10,ring,ll,-1,-1,-1", "min_bytes 11 > max_bytes 10"},
      {"allreduce,0,10,rings,ll,-1,-1,-1", "unknown algorithm 'rings'"},
      {"allreduce,0,10,ring,ll64,-1,-1,-1", "unknown protocol 'll64'"},
      {"allreduce,0,10,ring,ll,65,-1,-1", "channels: '65' is out of range (-1..64)"},
      {"allreduce,0,10,ring,ll,-2,-1,-1", "channels: '-2' is out of range"},
      {"allreduce,0,10,ring,ll,1000000000000000000000,-1,-1", "channels: '1000000000000000000000' does not fit"},
      {"allreduce,0,10,ring,ll,4,0,-1", "nNodes: '0' is out of range (-1 or a positive count)"},
      {"allreduce,0,10,ring,ll,4,1,3000000000", "nRanks: '3000000000' is out of range"},
      {"allreduce,0,10,ring,ll,4,1,8,0", "numPipeOps: '0' is out of range"},
      {"allreduce,0,10,ring,ll,4,1,8,1,2", "regBuff: '2' is out of range (-1, 0 or 1)"},
      {"allreduce,0,10,ring,ll,4 4,1,8", "channels: '4 4' is not a number"},
  };
  for (const Case& c : cases) {
    ConfigProblem p = badLine(c.line);
    EXPECT_NE(p.reason.find(c.reason), std::string::npos) << c.line << "\n  got: " << p.reason;
  }
}

TEST(ConfigJson, GoodFileFromDisk) {
  auto cfg = fromDisk(WW_ADAPTIVE_TESTDATA "/example.json");
  EXPECT_EQ(cfg.format, "json");
  EXPECT_TRUE(cfg.problems.empty()) << cfg.problems[0].reason;
  ASSERT_EQ(cfg.rules.size(), 4u);
  EXPECT_EQ(cfg.rules[0].rule, (TableRule{4, 0, 65535, dec(kAlgoTree, kProtoLL)}));
  EXPECT_EQ(cfg.rules[0].nNodes, 2);
  EXPECT_EQ(cfg.rules[0].nRanks, -1);
  EXPECT_EQ(cfg.rules[1].rule, (TableRule{4, 65536, 1048575, dec(kAlgoRing, kProtoLL128, 8)}));
  EXPECT_EQ(cfg.rules[2].rule, (TableRule{2, 1048576, UINT64_MAX, dec(kAlgoPat, kAny)}));
  EXPECT_EQ(cfg.rules[2].nRanks, 16);
  EXPECT_EQ(cfg.rules[3].rule, (TableRule{kAny, 0, UINT64_MAX, dec(kAny, kProtoSimple, 0)}));
  EXPECT_EQ(cfg.rules[3].line, 4);
}

TEST(ConfigJson, ProblemsAreReportedPerRule) {
  auto cfg = parseConfigText(R"(  {"version":1, "rules":[
      {"coll":"allreduce","algo":"ring"},
      {"coll":"allreduce","algo":"ring","colour":"red"},
      {"coll":"allreduce","min_bytes":-1},
      {"coll":"allreduce","max_bytes":1.5},
      {"coll":"allreduce","min_bytes":10,"max_bytes":9},
      {"coll":"allreduce","channels":65},
      {"coll":"allreduce","nodes":0},
      {"coll":"allreduce","proto":"fast"},
      {"coll":7},
      {"algo":"ring"},
      [1,2],
      {"coll":"allreduce","max_bytes":-1,"channels":-1,"ranks":8}
  ]})", "c.json");
  EXPECT_EQ(cfg.format, "json");
  ASSERT_EQ(cfg.rules.size(), 2u);
  EXPECT_EQ(cfg.rules[1].rule, (TableRule{4, 0, UINT64_MAX, Decision{}}));
  EXPECT_EQ(cfg.rules[1].line, 12);
  const std::pair<int, std::string> want[] = {
      {2, "unknown key 'colour'"}, {3, "min_bytes: negative"}, {4, "max_bytes: not an integer"},
      {5, "min_bytes 10 > max_bytes 9"}, {6, "channels: must be an integer in -1..64"}, {7, "nodes:"},
      {8, "proto: unknown name 'fast'"}, {9, "coll: must be a string"}, {10, "missing \"coll\""},
      {11, "must be a JSON object"}};
  ASSERT_EQ(cfg.problems.size(), std::size(want));
  for (size_t i = 0; i < std::size(want); ++i) {
    EXPECT_EQ(cfg.problems[i].file, "c.json");
    EXPECT_EQ(cfg.problems[i].line, want[i].first);
    EXPECT_NE(cfg.problems[i].reason.find(want[i].second), std::string::npos) << cfg.problems[i].reason;
  }
}

TEST(ConfigJson, ChunkBytesIsAnOptionalLever) {
  auto cfg = parseConfigText(R"({"version":1, "rules":[
      {"coll":"allreduce","max_bytes":65535,"algo":"ring","proto":"simple","chunk_bytes":262144},
      {"coll":"allgather","chunk_bytes":0},
      {"coll":"allreduce","chunk_bytes":-1},
      {"coll":"allreduce","chunk_bytes":1073741825},
      {"coll":"allreduce","chunk_bytes":"1m"}
  ]})", "c.json");
  ASSERT_EQ(cfg.rules.size(), 2u);
  Decision d = dec(kAlgoRing, kProtoSimple);
  d.chunkBytes = 262144;
  EXPECT_EQ(cfg.rules[0].rule, (TableRule{4, 0, 65535, d}));
  EXPECT_EQ(cfg.rules[1].rule, (TableRule{2, 0, UINT64_MAX, Decision{}})) << "0 keeps NCCL's chunk size";
  ASSERT_EQ(cfg.problems.size(), 3u);
  for (const auto& p : cfg.problems)
    EXPECT_NE(p.reason.find("chunk_bytes: must be an integer in 0..1073741824"), std::string::npos) << p.reason;
  // A chunk size alone is a decision (it is not NCCL's), but leaves the cost table to NCCL.
  Decision only;
  only.chunkBytes = 4096;
  EXPECT_FALSE(only.keepsNccl());
  EXPECT_TRUE(only.keepsCostTable());
}

TEST(ConfigJson, VersionAndTopLevel) {
  auto missing = parseConfigText(R"({"rules":[{"coll":"reduce"}]})", "m.json");
  ASSERT_EQ(missing.problems.size(), 1u);
  EXPECT_EQ(missing.problems[0].line, 0);
  EXPECT_NE(missing.problems[0].reason.find("missing \"version\""), std::string::npos);
  EXPECT_EQ(missing.rules.size(), 1u);  // read as version 1
  auto future = parseConfigText(R"({"version":2,"rules":[{"coll":"reduce"}]})", "f.json");
  EXPECT_TRUE(future.rules.empty());
  EXPECT_NE(future.problems.at(0).reason.find("unsupported"), std::string::npos);
  auto extra = parseConfigText(R"({"version":1,"rules":[],"rulez":[]})", "e.json");
  EXPECT_NE(extra.problems.at(0).reason.find("unknown top-level key 'rulez'"), std::string::npos);
  auto noRules = parseConfigText(R"({"version":1})", "n.json");
  EXPECT_NE(noRules.problems.at(0).reason.find("missing \"rules\""), std::string::npos);
}

TEST(ConfigJson, SyntaxErrorGivesItsLine) {
  auto cfg = parseConfigText("{\"version\":1,\n\"rules\":[\n{\"coll\":\"reduce\",}\n]}", "s.json");
  EXPECT_TRUE(cfg.rules.empty());
  ASSERT_EQ(cfg.problems.size(), 1u);
  EXPECT_EQ(cfg.problems[0].line, 3);
  EXPECT_NE(cfg.problems[0].reason.find("not valid JSON"), std::string::npos);
}

TEST(ConfigFile, UnreadableGivesOneProblemAtLineZero) {
  const std::string missing = "/nonexistent/wirewise.conf", directory = WW_ADAPTIVE_TESTDATA;
  for (const std::string& path : {missing, directory}) {
    auto cfg = fromDisk(path);
    EXPECT_EQ(cfg.format, "") << path;
    EXPECT_EQ(cfg.source, path);
    EXPECT_TRUE(cfg.rules.empty());
    ASSERT_EQ(cfg.problems.size(), 1u) << path;
    EXPECT_EQ(cfg.problems[0].line, 0);
    EXPECT_EQ(cfg.problems[0].file, path);
    EXPECT_FALSE(cfg.problems[0].warningOnly);
  }
  EXPECT_EQ(fromDisk(missing).problems[0].reason, "cannot open: No such file or directory");
  EXPECT_EQ(fromDisk(directory).problems[0].reason, "cannot read: Is a directory");
}

// The parser itself never touches the disk: what the caller read is all it sees.
TEST(ConfigFile, ParsesWhatTheCallerRead) {
  FileText good;
  good.text = "allreduce,0,10,ring,ll,-1,-1,-1\n";
  auto cfg = parseConfigFile("/nonexistent/read-elsewhere.conf", good);
  EXPECT_EQ(cfg.format, "csv");
  EXPECT_EQ(cfg.source, "/nonexistent/read-elsewhere.conf");
  EXPECT_EQ(cfg.rules.size(), 1u);
  EXPECT_TRUE(cfg.problems.empty());

  FileText big;
  big.status = FileText::Status::kTooLarge;
  big.error = "larger than 16 MiB";
  auto tooLarge = parseConfigFile("big.conf", big);
  EXPECT_TRUE(tooLarge.rules.empty());
  ASSERT_EQ(tooLarge.problems.size(), 1u);
  EXPECT_EQ(tooLarge.problems[0].reason, "larger than 16 MiB; not a configuration file");
  EXPECT_EQ(tooLarge.problems[0].line, 0);
}

// /dev/zero named by mistake: the bound stops the read, with the WARN text users have always seen.
TEST(ConfigFile, AnEndlessFileIsRefusedNotRead) {
  auto cfg = fromDisk("/dev/zero");
  ASSERT_EQ(cfg.problems.size(), 1u);
  EXPECT_EQ(cfg.problems[0].reason, "larger than 16 MiB; not a configuration file");
  EXPECT_TRUE(cfg.rules.empty());
}

TEST(ConfigFile, RulesForCommFiltersByShapeInFileOrder) {
  auto cfg = csv("allreduce,0,10,ring,ll,-1,2,16\nallreduce,0,10,tree,ll,-1,-1,-1\n"
                 "allreduce,0,10,pat,ll,-1,2,-1\nallreduce,0,10,nvls,ll,-1,-1,8\n");
  auto r = rulesForComm(cfg, 16, 2);
  ASSERT_EQ(r.size(), 3u);
  EXPECT_EQ(r[0].decision.algo, kAlgoRing);
  EXPECT_EQ(r[1].decision.algo, kAlgoTree);
  EXPECT_EQ(r[2].decision.algo, kAlgoPat);
  auto s = rulesForComm(cfg, 8, 1);
  ASSERT_EQ(s.size(), 2u);
  EXPECT_EQ(s[1].decision.algo, kAlgoNvls);
  // End to end: the first matching line wins for each size.
  auto t = DecisionTable::build(r, "cfg");
  EXPECT_EQ(t->lookup(4, 5).algo, kAlgoRing);
  EXPECT_TRUE(t->lookup(4, 11).keepsNccl());
}

TEST(ConfigAdversarial, HugeNumbersNulsLongLines) {
  std::string nul("allreduce,0,10,ri\0ng,ll,-1,-1,-1\n", 33);
  auto a = csv(nul);
  ASSERT_EQ(a.problems.size(), 1u);
  EXPECT_NE(a.problems[0].reason.find("'ri\\x00ng'"), std::string::npos) << a.problems[0].reason;
  expectSane(a);
  std::string longLine = "allreduce," + std::string(1 << 20, '9') + ",10,ring,ll,-1,-1,-1\n";
  auto b = csv(longLine);
  ASSERT_EQ(b.problems.size(), 1u);
  expectSane(b);
  auto c = csv(std::string(1 << 20, ',') + "\n");
  expectSane(c);
  EXPECT_EQ(c.problems.size(), 1u);
  auto d = parseConfigText("{\"version\":1,\"rules\":[{\"coll\":\"reduce\",\"max_bytes\":1e400}]}", "d.json");
  expectSane(d);
  EXPECT_EQ(d.rules.size(), 0u);
  auto e = parseConfigText("{\"version\":1,\"rules\":[{\"coll\":\"reduce\",\"max_bytes\":18446744073709551615}]}",
                           "e.json");
  ASSERT_EQ(e.rules.size(), 1u);
  EXPECT_EQ(e.rules[0].rule.maxBytes, UINT64_MAX);
  auto f = parseConfigText(std::string(100000, '[') + "{", "f.json");  // not JSON by detection: CSV problems
  expectSane(f);
  auto g = parseConfigText("{" + std::string(100000, '['), "g.json");
  expectSane(g);
  EXPECT_EQ(g.problems.size(), 1u);
}

TEST(ConfigAdversarial, RandomBytesNeverCrash) {
  std::mt19937_64 rng(5);
  const std::string alphabet = "{}[],:\"-0123456789 \n\r\t#abcdefghijklmnopqrstuvwxyz_\\e.\x00\xff";
  for (int i = 0; i < 3000; ++i) {
    std::string s(rng() % 400, '\0');
    for (char& ch : s) ch = i % 2 ? char(rng()) : alphabet[rng() % alphabet.size()];
    if (i % 3 == 0) s.insert(0, "{\"version\":1,\"rules\":[");
    if (i % 5 == 0) s.insert(0, "allreduce,0,10,ring,ll,-1,-1,-1\n");
    expectSane(parseConfigText(s, "rand"));
  }
}

}  // namespace
}  // namespace wirewise
