// libFuzzer target for both configuration parsers, wirewise's JSON and NCCL's example-tuner CSV (built only
// with clang; not a ctest). Every input goes through parseConfigText (which picks the format as a file would get
// it) and through each parser directly, so that JSON sees text not starting with '{' and CSV text that does.
// Beyond "does not crash", it checks that every accepted rule is valid and that the table built from them
// answers like a first-match scan over the same rules.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "adaptive/config.h"

namespace {

void check(bool ok) {
  if (!ok) __builtin_trap();
}

void checkParsed(const wirewise::ParsedConfig& cfg) {
  using namespace wirewise;
  for (const ConfigRule& r : cfg.rules) {
    check(r.rule.coll >= kAny && r.rule.coll < kNumCollTypes && r.rule.minBytes <= r.rule.maxBytes);
    check(r.rule.decision.algo >= kAny && r.rule.decision.algo < kNumAlgos);
    check(r.rule.decision.proto >= kAny && r.rule.decision.proto < kNumProtos);
    check(r.rule.decision.nChannels >= 0 && r.rule.decision.nChannels <= kMaxChannels);
  }
  for (const ConfigProblem& p : cfg.problems) {
    for (char c : p.reason) check(c >= 0x20 && c < 0x7f);
  }
  auto rules = rulesForComm(cfg, 16, 2);
  auto table = DecisionTable::build(rules, "fuzz");
  for (const TableRule& probe : rules) {
    for (uint64_t n : {probe.minBytes, probe.maxBytes, probe.minBytes - 1, probe.maxBytes + 1}) {
      for (int c = 0; c < kNumCollTypes; ++c) {
        Decision want;
        for (const TableRule& r : rules) {
          if ((r.coll == c || r.coll == kAny) && r.minBytes <= n && n <= r.maxBytes) {
            want = r.decision;
            break;
          }
        }
        check(table->lookup(c, n) == want);
      }
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace wirewise;
  std::string_view text(reinterpret_cast<const char*>(data), size);
  checkParsed(parseConfigText(text, "fuzz"));
  checkParsed(parseJsonConfig(text, "fuzz.json"));
  checkParsed(parseCsvConfig(text, "fuzz.conf"));
  return 0;
}
