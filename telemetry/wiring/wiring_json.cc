#include "telemetry/wiring/wiring_json.h"

#include <fstream>
#include <sstream>

namespace wirewise::wiring {
namespace {

using nlohmann::json;

void putIfMeasured(json& j, const char* key, double v) {
  if (v >= 0) j[key] = v;
}

void putIfKnown(json& j, const char* key, int v) {
  if (v >= 0) j[key] = v;
}

// Reads optional fields of one object, remembering the first type error with its path.
class Reader {
 public:
  Reader(const json& obj, std::string path, std::string* error) : obj_(obj), path_(std::move(path)), error_(error) {}

  bool ok() const { return ok_; }

  void number(const char* key, double* out) {
    const json* v = find(key);
    if (!v) return;
    if (!v->is_number()) return fail(key, "a number");
    *out = v->get<double>();
  }
  template <typename Int>
  void integer(const char* key, Int* out) {
    const json* v = find(key);
    if (!v) return;
    if (!v->is_number_integer()) return fail(key, "an integer");
    *out = v->get<Int>();
  }
  void boolean(const char* key, bool* out) {
    const json* v = find(key);
    if (!v) return;
    if (!v->is_boolean()) return fail(key, "true or false");
    *out = v->get<bool>();
  }
  void string(const char* key, std::string* out) {
    const json* v = find(key);
    if (!v) return;
    if (!v->is_string()) return fail(key, "a string");
    *out = v->get<std::string>();
  }
  void require(const char* key) {
    if (ok_ && !obj_.contains(key)) {
      ok_ = false;
      *error_ = path_ + key + ": missing";
    }
  }

 private:
  const json* find(const char* key) const {
    if (!ok_) return nullptr;
    auto it = obj_.find(key);
    return it == obj_.end() || it->is_null() ? nullptr : &*it;
  }
  void fail(const char* key, const char* expected) {
    ok_ = false;
    *error_ = path_ + key + ": expected " + expected;
  }

  const json& obj_;
  std::string path_;
  std::string* error_;
  bool ok_ = true;
};

bool parseCc(const std::string& s, int* major, int* minor) {
  int a = 0, b = 0;
  char dot = 0;
  std::istringstream in(s);
  if (!(in >> a >> dot >> b) || dot != '.') return false;
  *major = a;
  *minor = b;
  return true;
}

json gpuJson(const GpuInfo& g) {
  json j = {{"index", g.index}, {"name", g.name}, {"present", g.present}};
  if (!g.pciBusId.empty()) j["pci_bus_id"] = g.pciBusId;
  if (g.ccMajor > 0) j["cc"] = std::to_string(g.ccMajor) + "." + std::to_string(g.ccMinor);
  if (g.sms > 0) j["sms"] = g.sms;
  if (g.memoryBytes > 0) j["memory_bytes"] = g.memoryBytes;
  putIfMeasured(j, "self_copy_gbps", g.selfCopyGbps);
  putIfMeasured(j, "self_copy_ce_gbps", g.selfCopyCeGbps);
  putIfMeasured(j, "self_copy_sm_gbps", g.selfCopySmGbps);
  putIfKnown(j, "nvlinks_up", g.nvlinksUp);
  putIfMeasured(j, "nvlink_gbps_per_link", g.nvlinkGbpsPerLink);
  if (g.pcie.gen > 0 || g.pcie.maxGen > 0) {
    j["pcie"] = {{"gen", g.pcie.gen}, {"width", g.pcie.width}, {"max_gen", g.pcie.maxGen}, {"max_width", g.pcie.maxWidth}};
  }
  if (!g.error.empty()) j["error"] = g.error;
  return j;
}

json pairJson(const PairResult& p) {
  json j = {{"src", p.src}, {"dst", p.dst}, {"peer_access", p.peerAccess}, {"link", linkTypeName(p.link)}};
  if (!p.linkSource.empty()) j["link_source"] = p.linkSource;
  putIfKnown(j, "nvlinks", p.nvlinks);
  putIfMeasured(j, "ce_gbps", p.ceGbps);
  putIfMeasured(j, "sm_write_gbps", p.smWriteGbps);
  putIfMeasured(j, "sm_read_gbps", p.smReadGbps);
  putIfMeasured(j, "bidir_gbps", p.bidirGbps);
  putIfMeasured(j, "bidir_sm_gbps", p.bidirSmGbps);
  putIfMeasured(j, "latency_us", p.latencyUs);
  if (!p.verify.empty()) j["verify"] = p.verify;
  if (!p.error.empty()) j["error"] = p.error;
  return j;
}

bool readGpu(const json& j, const std::string& path, GpuInfo* g, std::string* error) {
  if (!j.is_object()) {
    *error = path + ": expected an object";
    return false;
  }
  Reader r(j, path + ".", error);
  r.require("index");
  r.integer("index", &g->index);
  r.string("name", &g->name);
  r.string("pci_bus_id", &g->pciBusId);
  std::string cc;
  r.string("cc", &cc);
  if (r.ok() && !cc.empty() && !parseCc(cc, &g->ccMajor, &g->ccMinor)) {
    *error = path + ".cc: expected \"major.minor\"";
    return false;
  }
  r.integer("sms", &g->sms);
  r.integer("memory_bytes", &g->memoryBytes);
  r.boolean("present", &g->present);
  r.number("self_copy_gbps", &g->selfCopyGbps);
  r.number("self_copy_ce_gbps", &g->selfCopyCeGbps);
  r.number("self_copy_sm_gbps", &g->selfCopySmGbps);
  r.integer("nvlinks_up", &g->nvlinksUp);
  r.number("nvlink_gbps_per_link", &g->nvlinkGbpsPerLink);
  r.string("error", &g->error);
  if (r.ok() && j.contains("pcie")) {
    const json& pj = j["pcie"];
    if (!pj.is_object()) {
      *error = path + ".pcie: expected an object";
      return false;
    }
    Reader pr(pj, path + ".pcie.", error);
    pr.integer("gen", &g->pcie.gen);
    pr.integer("width", &g->pcie.width);
    pr.integer("max_gen", &g->pcie.maxGen);
    pr.integer("max_width", &g->pcie.maxWidth);
    if (!pr.ok()) return false;
  }
  return r.ok();
}

bool readPair(const json& j, const std::string& path, PairResult* p, std::string* error) {
  if (!j.is_object()) {
    *error = path + ": expected an object";
    return false;
  }
  Reader r(j, path + ".", error);
  r.require("src");
  r.require("dst");
  r.integer("src", &p->src);
  r.integer("dst", &p->dst);
  r.boolean("peer_access", &p->peerAccess);
  std::string link = "unknown";
  r.string("link", &link);
  if (r.ok() && !parseLinkType(link, &p->link)) {
    *error = path + ".link: expected \"nvlink\", \"pcie\" or \"unknown\", got \"" + link + "\"";
    return false;
  }
  r.string("link_source", &p->linkSource);
  r.integer("nvlinks", &p->nvlinks);
  r.number("ce_gbps", &p->ceGbps);
  r.number("sm_write_gbps", &p->smWriteGbps);
  r.number("sm_read_gbps", &p->smReadGbps);
  r.number("bidir_gbps", &p->bidirGbps);
  r.number("bidir_sm_gbps", &p->bidirSmGbps);
  r.number("latency_us", &p->latencyUs);
  r.string("verify", &p->verify);
  r.string("error", &p->error);
  return r.ok();
}

}  // namespace

json toJson(const WiringMap& map) {
  json gpus = json::array(), pairs = json::array();
  for (const GpuInfo& g : map.gpus) gpus.push_back(gpuJson(g));
  for (const PairResult& p : map.pairs) pairs.push_back(pairJson(p));
  return {{"wirewise_wiring", map.schema},
          {"host", map.host},
          {"time", map.time},
          {"tool", map.tool},
          {"method",
           {{"bytes", map.method.bytes},
            {"warmup", map.method.warmup},
            {"trials", map.method.trials},
            {"latency_iters", map.method.latencyIters}}},
          {"gpus", gpus},
          {"pairs", pairs},
          {"notes", map.notes}};
}

bool fromJson(const json& j, WiringMap* map, std::string* error) {
  *map = WiringMap{};
  if (!j.is_object() || !j.contains("wirewise_wiring")) {
    *error = "not a wiring map (no \"wirewise_wiring\" version key)";
    return false;
  }
  Reader top(j, "", error);
  top.integer("wirewise_wiring", &map->schema);
  if (!top.ok()) return false;
  if (map->schema != kSchemaVersion) {
    *error = "wirewise_wiring: schema version " + std::to_string(map->schema) + " is not supported (this build reads " +
             std::to_string(kSchemaVersion) + ")";
    return false;
  }
  top.string("host", &map->host);
  top.string("time", &map->time);
  top.string("tool", &map->tool);
  if (!top.ok()) return false;
  if (j.contains("method")) {
    if (!j["method"].is_object()) {
      *error = "method: expected an object";
      return false;
    }
    Reader m(j["method"], "method.", error);
    m.integer("bytes", &map->method.bytes);
    m.integer("warmup", &map->method.warmup);
    m.integer("trials", &map->method.trials);
    m.integer("latency_iters", &map->method.latencyIters);
    if (!m.ok()) return false;
  }
  for (const char* key : {"gpus", "pairs"}) {
    if (j.contains(key) && !j[key].is_array()) {
      *error = std::string(key) + ": expected an array";
      return false;
    }
  }
  if (j.contains("gpus")) {
    for (size_t i = 0; i < j["gpus"].size(); ++i) {
      GpuInfo g;
      if (!readGpu(j["gpus"][i], "gpus[" + std::to_string(i) + "]", &g, error)) return false;
      if (map->gpu(g.index)) {
        *error = "gpus[" + std::to_string(i) + "].index: GPU " + std::to_string(g.index) + " listed twice";
        return false;
      }
      map->gpus.push_back(std::move(g));
    }
  }
  if (j.contains("pairs")) {
    for (size_t i = 0; i < j["pairs"].size(); ++i) {
      PairResult p;
      const std::string path = "pairs[" + std::to_string(i) + "]";
      if (!readPair(j["pairs"][i], path, &p, error)) return false;
      if (!map->gpu(p.src) || !map->gpu(p.dst) || p.src == p.dst) {
        *error = path + ": src " + std::to_string(p.src) + " and dst " + std::to_string(p.dst) +
                 " must be two different GPUs listed in gpus";
        return false;
      }
      if (map->pair(p.src, p.dst)) {
        *error = path + ": pair " + std::to_string(p.src) + "->" + std::to_string(p.dst) + " listed twice";
        return false;
      }
      map->pairs.push_back(std::move(p));
    }
  }
  if (j.contains("notes")) {
    if (!j["notes"].is_array()) {
      *error = "notes: expected an array of strings";
      return false;
    }
    for (const json& n : j["notes"]) {
      if (!n.is_string()) {
        *error = "notes: expected an array of strings";
        return false;
      }
      map->notes.push_back(n.get<std::string>());
    }
  }
  return true;
}

json toJson(const Analysis& a) {
  json flags = json::array(), pairs = json::array(), gpus = json::array();
  for (const Flag& f : a.flags) {
    json j = {{"kind", flagKindName(f.kind)}, {"src", f.src}, {"dst", f.dst}, {"text", f.text}};
    putIfMeasured(j, "measured_gbps", f.measuredGbps);
    putIfMeasured(j, "reference_gbps", f.referenceGbps);
    putIfMeasured(j, "ratio", f.ratio);
    flags.push_back(std::move(j));
  }
  for (const PairVerdict& v : a.pairs) {
    json j = {{"src", v.src}, {"dst", v.dst}, {"flagged", v.flagged}};
    if (v.nominal.known()) {
      j["nominal_gbps"] = v.nominal.gbps;
      j["nominal_basis"] = v.nominal.basis;
    }
    putIfMeasured(j, "uni_ratio", v.uniRatio);
    putIfMeasured(j, "bidir_ratio", v.bidirRatio);
    pairs.push_back(std::move(j));
  }
  for (const GpuVerdict& v : a.gpus) {
    json j = {{"index", v.index}, {"flagged", v.flagged}};
    if (v.memory.known()) {
      j["memory_gbps"] = v.memory.gbps;
      j["memory_basis"] = v.memory.basis;
    }
    putIfMeasured(j, "self_copy_ratio", v.selfCopyRatio);
    gpus.push_back(std::move(j));
  }
  return {{"flag_below", a.options.flagBelow}, {"peer_below", a.options.peerBelow}, {"flags", flags},
          {"pairs", pairs}, {"gpus", gpus}};
}

bool readMapFile(const std::string& path, WiringMap* map, std::string* error) {
  std::ifstream in(path);
  if (!in) {
    *error = "cannot read " + path;
    return false;
  }
  json j = json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) {
    *error = path + ": not valid JSON";
    return false;
  }
  if (!fromJson(j, map, error)) {
    *error = path + ": " + *error;
    return false;
  }
  return true;
}

bool writeMapFile(const std::string& path, const WiringMap& map, std::string* error) {
  std::ofstream out(path);
  if (!out) {
    *error = "cannot write " + path;
    return false;
  }
  out << toJson(map).dump(2) << "\n";
  out.close();
  if (!out) {
    *error = "error writing " + path;
    return false;
  }
  return true;
}

}  // namespace wirewise::wiring
