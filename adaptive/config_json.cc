// wirewise's JSON format (docs/config-format.md):
//   {"version": 1, "rules": [{"coll": "allreduce", "min_bytes": 0, "max_bytes": 65536, "algo": "tree",
//                             "proto": "ll", "channels": 0, "chunk_bytes": 0, "nodes": -1, "ranks": -1}, ...]}
// Every key but "coll" is optional. A rule with any problem (unknown key, wrong type, bad value) is
// reported and skipped; the rest of the file still counts.
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "adaptive/config.h"

namespace wirewise {
namespace {

using config_detail::quote;
using Json = nlohmann::json;

constexpr const char* kRuleKeys[] = {"coll",     "min_bytes",   "max_bytes", "algo", "proto",
                                     "channels", "chunk_bytes", "nodes",     "ranks"};

int lineOfOffset(std::string_view text, size_t offset) {
  offset = std::min(offset, text.size());
  int line = 1;
  for (size_t i = 0; i < offset; ++i) line += text[i] == '\n';
  return line;
}

// An integer value in [lo, hi] (hi may exceed INT64_MAX only for sizes), or nullopt with *why.
std::optional<uint64_t> getUnsigned(const Json& v, const char* key, bool minusOneIsMax, std::string* why) {
  if (v.is_number_unsigned()) return v.get<uint64_t>();
  if (v.is_number_integer() && minusOneIsMax && v.get<int64_t>() == -1) return UINT64_MAX;
  *why = std::string(key) + (v.is_number_integer() ? ": negative" + std::string(minusOneIsMax ? " (only -1)" : "")
                                                   : ": not an integer in 0..2^64-1");
  return std::nullopt;
}

std::optional<int64_t> getInt(const Json& v, const char* key, int64_t lo, int64_t hi, bool zeroOk,
                              std::string* why) {
  if (v.is_number_integer()) {
    auto x = v.is_number_unsigned() ? (v.get<uint64_t>() > uint64_t(hi) ? hi + 1 : int64_t(v.get<uint64_t>()))
                                    : v.get<int64_t>();
    if (x >= lo && x <= hi && (x != 0 || zeroOk)) return x;
  }
  *why = std::string(key) + ": must be an integer in " + std::to_string(lo) + ".." + std::to_string(hi) +
         (zeroOk ? "" : ", not 0");
  return std::nullopt;
}

std::optional<int> getName(const Json& v, const char* key, int (*parse)(std::string_view), std::string* why) {
  if (!v.is_string()) return *why = std::string(key) + ": must be a string", std::nullopt;
  const auto& s = v.get_ref<const std::string&>();
  int x = parse(s);
  if (x == -2) return *why = std::string(key) + ": unknown name " + quote(s), std::nullopt;
  return x;
}

std::optional<ConfigRule> parseRule(const Json& r, int line, std::string* why) {
  if (!r.is_object()) return *why = "a rule must be a JSON object", std::nullopt;
  for (const auto& [k, v] : r.items()) {
    bool known = false;
    for (const char* key : kRuleKeys) known = known || k == key;
    if (!known) {
      return *why = "unknown key " + quote(k) +
                    " (coll, min_bytes, max_bytes, algo, proto, channels, chunk_bytes, nodes, ranks)", std::nullopt;
    }
  }
  if (!r.contains("coll")) return *why = "missing \"coll\" (a collective name or \"any\")", std::nullopt;
  auto coll = getName(r["coll"], "coll", parseColl, why);
  if (!coll) return std::nullopt;
  ConfigRule out;
  out.line = line;
  out.rule.coll = *coll;
  if (r.contains("min_bytes")) {
    auto v = getUnsigned(r["min_bytes"], "min_bytes", false, why);
    if (!v) return std::nullopt;
    out.rule.minBytes = *v;
  }
  if (r.contains("max_bytes")) {
    auto v = getUnsigned(r["max_bytes"], "max_bytes", true, why);
    if (!v) return std::nullopt;
    out.rule.maxBytes = *v;
  }
  if (out.rule.minBytes > out.rule.maxBytes) {
    return *why = "min_bytes " + std::to_string(out.rule.minBytes) + " > max_bytes " +
                  std::to_string(out.rule.maxBytes) + ": the rule covers nothing", std::nullopt;
  }
  if (r.contains("algo")) {
    auto v = getName(r["algo"], "algo", parseAlgo, why);
    if (!v) return std::nullopt;
    out.rule.decision.algo = static_cast<int8_t>(*v);
  }
  if (r.contains("proto")) {
    auto v = getName(r["proto"], "proto", parseProto, why);
    if (!v) return std::nullopt;
    out.rule.decision.proto = static_cast<int8_t>(*v);
  }
  if (r.contains("channels")) {
    auto v = getInt(r["channels"], "channels", -1, kMaxChannels, true, why);
    if (!v) return std::nullopt;
    out.rule.decision.nChannels = static_cast<int8_t>(*v == -1 ? 0 : *v);
  }
  if (r.contains("chunk_bytes")) {  // 0: NCCL's; below the protocol's grain, getChunkSize keeps NCCL's too
    auto v = getInt(r["chunk_bytes"], "chunk_bytes", 0, kMaxChunkBytes, true, why);
    if (!v) return std::nullopt;
    out.rule.decision.chunkBytes = static_cast<uint32_t>(*v);
  }
  for (auto [key, dst] : {std::pair{"nodes", &out.nNodes}, std::pair{"ranks", &out.nRanks}}) {
    if (!r.contains(key)) continue;
    auto v = getInt(r[key], key, -1, INT32_MAX, false, why);
    if (!v) return std::nullopt;
    *dst = *v;
  }
  return out;
}

}  // namespace

ParsedConfig parseJsonConfig(std::string_view text, std::string_view sourceName) {
  ParsedConfig cfg;
  cfg.source = std::string(sourceName);
  cfg.format = "json";
  auto problem = [&](int line, std::string reason, bool warningOnly = false) {
    cfg.problems.push_back(ConfigProblem{cfg.source, line, std::move(reason), warningOnly});
  };
  Json doc;
  try {
    doc = Json::parse(text.begin(), text.end());
  } catch (const Json::parse_error& e) {
    std::string_view what = e.what();  // "[json.exception.parse_error.101] parse error at line ..."
    if (auto close = what.find("] "); close != std::string_view::npos) what.remove_prefix(close + 2);
    problem(lineOfOffset(text, e.byte == 0 ? 0 : e.byte - 1), "not valid JSON: " + quote(what, 200));
    return cfg;
  } catch (const Json::exception&) {
    problem(0, "not valid JSON");
    return cfg;
  }
  if (!doc.is_object()) {
    problem(0, "the top level must be a JSON object");
    return cfg;
  }
  for (const auto& [k, v] : doc.items()) {
    if (k != "version" && k != "rules" && k != "description") {
      problem(0, "unknown top-level key " + quote(k) + " ignored");
    }
  }
  if (!doc.contains("version")) {
    problem(0, "missing \"version\": read as version 1");
  } else if (!doc["version"].is_number_integer() || doc["version"].get<int64_t>() != 1) {
    problem(0, "unsupported \"version\" (this wirewise reads version 1): no rules taken");
    return cfg;
  }
  if (!doc.contains("rules") || !doc["rules"].is_array()) {
    problem(0, "missing \"rules\" array");
    return cfg;
  }
  int line = 0;
  for (const Json& r : doc["rules"]) {
    ++line;
    std::string why;
    if (auto rule = parseRule(r, line, &why)) {
      cfg.rules.push_back(*rule);
    } else {
      problem(line, "rule " + std::to_string(line) + ": " + why);
    }
  }
  return cfg;
}

}  // namespace wirewise
