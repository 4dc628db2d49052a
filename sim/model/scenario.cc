// Strict scenario parser. Every check reports the JSON path of the offending value, so errors read like
// "faults[2].to_step: must be greater than from_step (150)".
#include "sim/model/scenario.h"

#include <algorithm>
#include <fstream>
#include <initializer_list>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

namespace wirewise::sim {
namespace {

using Json = nlohmann::json;

struct ParseError {
  std::string message;
};

[[noreturn]] void fail(const std::string& path, const std::string& reason) { throw ParseError{path + ": " + reason}; }

std::string join(const std::string& path, const std::string& key) { return path.empty() ? key : path + "." + key; }
std::string at(const std::string& path, size_t i) { return path + "[" + std::to_string(i) + "]"; }

void requireObject(const Json& j, const std::string& path, std::initializer_list<const char*> allowed) {
  if (!j.is_object()) fail(path.empty() ? "(root)" : path, "must be an object");
  for (const auto& item : j.items()) {
    const std::string& key = item.key();  // not a structured binding: clang before 16 cannot capture one
    if (std::none_of(allowed.begin(), allowed.end(), [&](const char* a) { return key == a; })) {
      fail(join(path, key), "unknown field");
    }
  }
}

const Json* field(const Json& obj, const char* key) {
  auto it = obj.find(key);
  return it == obj.end() ? nullptr : &*it;
}

const Json& required(const Json& obj, const std::string& path, const char* key) {
  const Json* v = field(obj, key);
  if (v == nullptr) fail(join(path, key), "required field missing");
  return *v;
}

std::string getString(const Json& v, const std::string& path) {
  if (!v.is_string()) fail(path, "must be a string");
  return v.get<std::string>();
}

double getNumber(const Json& v, const std::string& path) {
  if (!v.is_number()) fail(path, "must be a number");
  return v.get<double>();
}

int64_t getInt(const Json& v, const std::string& path, int64_t lo, int64_t hi) {
  if (!v.is_number_integer() && !v.is_number_unsigned()) fail(path, "must be an integer");
  if (v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(hi)) {
    fail(path, "must be at most " + std::to_string(hi));
  }
  int64_t x = v.get<int64_t>();
  if (x < lo) fail(path, "must be at least " + std::to_string(lo));
  if (x > hi) fail(path, "must be at most " + std::to_string(hi));
  return x;
}

double getPositive(const Json& v, const std::string& path, bool allowZero) {
  double x = getNumber(v, path);
  if (allowZero ? x < 0 : x <= 0) fail(path, allowZero ? "must not be negative" : "must be positive");
  return x;
}

template <typename E>
E getEnum(const Json& v, const std::string& path, std::initializer_list<std::pair<const char*, E>> names) {
  std::string s = getString(v, path);
  std::string list;
  for (const auto& [n, e] : names) {
    if (s == n) return e;
    list += list.empty() ? n : std::string(", ") + n;
  }
  fail(path, "unknown value \"" + s + "\" (expected one of: " + list + ")");
}

ClusterSpec parseCluster(const Json& j) {
  const std::string p = "cluster";
  requireObject(j, p, {"nodes", "gpus_per_node", "gpu", "nvlink_gbps", "nvls", "pcie_gbps", "nics_per_node",
                       "nic_gbps", "net_latency_us", "transport"});
  ClusterSpec c;
  c.gpu = getEnum<GpuKind>(required(j, p, "gpu"), join(p, "gpu"),
                           {{"h100-sxm", GpuKind::H100Sxm}, {"h200-sxm", GpuKind::H200Sxm},
                            {"a100-sxm", GpuKind::A100Sxm}, {"pcie", GpuKind::Pcie}, {"generic", GpuKind::Generic}});
  GpuPreset preset = gpuPreset(c.gpu);
  c.nvlinkGbps = preset.nvlinkGbps;
  c.nvls = preset.nvls;
  c.pcieGbps = preset.pcieGbps;
  c.computeCapability = preset.computeCapability;
  c.nodes = static_cast<int>(getInt(required(j, p, "nodes"), join(p, "nodes"), 1, 4096));
  c.gpusPerNode = static_cast<int>(getInt(required(j, p, "gpus_per_node"), join(p, "gpus_per_node"), 1, 64));
  if (const Json* v = field(j, "nvlink_gbps")) c.nvlinkGbps = getPositive(*v, join(p, "nvlink_gbps"), true);
  if (const Json* v = field(j, "nvls")) {
    if (!v->is_boolean()) fail(join(p, "nvls"), "must be true or false");
    c.nvls = v->get<bool>();
  }
  if (const Json* v = field(j, "pcie_gbps")) c.pcieGbps = getPositive(*v, join(p, "pcie_gbps"), false);
  if (const Json* v = field(j, "nics_per_node")) {
    c.nicsPerNode = static_cast<int>(getInt(*v, join(p, "nics_per_node"), 1, 64));
  }
  if (const Json* v = field(j, "nic_gbps")) c.nicGbps = getPositive(*v, join(p, "nic_gbps"), false);
  if (const Json* v = field(j, "net_latency_us")) c.netLatencyUs = getPositive(*v, join(p, "net_latency_us"), true);
  if (const Json* v = field(j, "transport")) {
    c.transport = getEnum<Transport>(*v, join(p, "transport"), {{"ib", Transport::Ib}, {"socket", Transport::Socket}});
  }
  if (c.nvls && c.nvlinkGbps <= 0) fail(join(p, "nvls"), "needs NVLink (nvlink_gbps > 0)");
  if (c.nodes * static_cast<int64_t>(c.gpusPerNode) > 65536) fail(join(p, "nodes"), "too many ranks (max 65536)");
  return c;
}

std::vector<CommSpec> parseComms(const Json& j, const ClusterSpec& c) {
  if (!j.is_array() || j.empty()) fail("comms", "must be a non-empty array");
  std::vector<CommSpec> out;
  std::set<std::string> names;
  for (size_t i = 0; i < j.size(); ++i) {
    const std::string p = at("comms", i);
    requireObject(j[i], p, {"name", "ranks"});
    std::string name = getString(required(j[i], p, "name"), join(p, "name"));
    if (name.empty()) fail(join(p, "name"), "must not be empty");
    if (!names.insert(name).second) fail(join(p, "name"), "duplicate communicator name \"" + name + "\"");
    const Json& r = required(j[i], p, "ranks");
    const std::string rp = join(p, "ranks");
    if (r.is_string()) {
      std::string s = r.get<std::string>();
      if (s == "all") {
        CommSpec cs{name, 0, {}};
        for (int k = 0; k < c.nRanks(); ++k) cs.ranks.push_back(k);
        out.push_back(std::move(cs));
      } else if (s == "per-node") {
        for (int n = 0; n < c.nodes; ++n) {
          CommSpec cs{name, n, {}};
          for (int g = 0; g < c.gpusPerNode; ++g) cs.ranks.push_back(n * c.gpusPerNode + g);
          out.push_back(std::move(cs));
        }
      } else {
        fail(rp, "unknown value \"" + s + "\" (expected \"all\", \"per-node\" or a list of ranks)");
      }
    } else if (r.is_array()) {
      if (r.empty()) fail(rp, "must not be empty");
      CommSpec cs{name, 0, {}};
      std::set<int> seen;
      for (size_t k = 0; k < r.size(); ++k) {
        int rank = static_cast<int>(getInt(r[k], at(rp, k), 0, c.nRanks() - 1));
        if (!seen.insert(rank).second) fail(at(rp, k), "duplicate rank " + std::to_string(rank));
        cs.ranks.push_back(rank);
      }
      out.push_back(std::move(cs));
    } else {
      fail(rp, "must be \"all\", \"per-node\" or a list of ranks");
    }
  }
  return out;
}

Workload parseWorkload(const Json& j, const std::set<std::string>& commNames) {
  const std::string p = "workload";
  requireObject(j, p, {"steps", "step", "compute_us"});
  Workload w;
  w.steps = static_cast<int>(getInt(required(j, p, "steps"), join(p, "steps"), 1, 100000000));
  if (const Json* v = field(j, "compute_us")) w.computeUs = getPositive(*v, join(p, "compute_us"), true);
  const Json& steps = required(j, p, "step");
  if (!steps.is_array() || steps.empty()) fail(join(p, "step"), "must be a non-empty array");
  for (size_t i = 0; i < steps.size(); ++i) {
    const std::string sp = at(join(p, "step"), i);
    requireObject(steps[i], sp, {"comm", "coll", "bytes", "repeat", "dtype"});
    StepColl s;
    s.comm = getString(required(steps[i], sp, "comm"), join(sp, "comm"));
    if (commNames.count(s.comm) == 0) fail(join(sp, "comm"), "unknown communicator \"" + s.comm + "\"");
    s.coll = getEnum<CollType>(required(steps[i], sp, "coll"), join(sp, "coll"),
                               {{"allreduce", CollType::AllReduce}, {"allgather", CollType::AllGather},
                                {"reducescatter", CollType::ReduceScatter}, {"broadcast", CollType::Broadcast},
                                {"reduce", CollType::Reduce}});
    s.bytes = static_cast<size_t>(getInt(required(steps[i], sp, "bytes"), join(sp, "bytes"), 1, int64_t{1} << 40));
    if (const Json* v = field(steps[i], "repeat")) {
      s.repeat = static_cast<int>(getInt(*v, join(sp, "repeat"), 1, 1000000));
    }
    if (const Json* v = field(steps[i], "dtype")) {
      s.dtype = getEnum<DType>(*v, join(sp, "dtype"),
                               {{"f32", DType::F32}, {"bf16", DType::Bf16}, {"f16", DType::F16}, {"f8", DType::F8}});
    }
    if (s.bytes % dtypeSize(s.dtype) != 0) fail(join(sp, "bytes"), "must be a multiple of the dtype size");
    w.step.push_back(std::move(s));
  }
  return w;
}

// node / index: an integer in range or "*".
int parseSelector(const Json* v, const std::string& path, int count, const char* what) {
  if (v == nullptr) return kAllIndex;
  if (v->is_string()) {
    if (v->get<std::string>() == "*") return kAllIndex;
    fail(path, "must be an integer or \"*\"");
  }
  if (!v->is_number_integer() && !v->is_number_unsigned()) fail(path, "must be an integer or \"*\"");
  int64_t x = v->get<int64_t>();
  if (x < 0 || x >= count) fail(path, std::string(what) + " " + std::to_string(x) + " out of range [0, " +
                                          std::to_string(count) + ")");
  return static_cast<int>(x);
}

Fault parseFault(const Json& j, const std::string& p, const ClusterSpec& c, int steps) {
  requireObject(j, p, {"kind", "link", "node", "index", "factor", "flows", "add_us", "period_steps", "ramp_steps",
                       "levels", "from_step", "to_step"});
  Fault f;
  f.kind = getEnum<FaultKind>(required(j, p, "kind"), join(p, "kind"),
                              {{"degrade", FaultKind::Degrade}, {"contention", FaultKind::Contention},
                               {"latency", FaultKind::Latency}, {"flap", FaultKind::Flap},
                               {"ramp", FaultKind::Ramp}});
  f.link = getEnum<LinkKind>(required(j, p, "link"), join(p, "link"),
                             {{"nic", LinkKind::Nic}, {"nvlink", LinkKind::Nvlink}, {"pcie", LinkKind::Pcie},
                              {"net", LinkKind::Net}});
  f.node = parseSelector(field(j, "node"), join(p, "node"), c.nodes, "node");
  int indexCount = f.link == LinkKind::Nic || f.link == LinkKind::Net ? c.nicsPerNode : c.gpusPerNode;
  f.index = parseSelector(field(j, "index"), join(p, "index"), indexCount,
                          f.link == LinkKind::Nic || f.link == LinkKind::Net ? "NIC" : "GPU");
  if (f.link == LinkKind::Nvlink && c.nvlinkGbps <= 0) fail(join(p, "link"), "cluster has no NVLink");
  auto need = [&](const char* key) -> const Json& { return required(j, p, key); };
  auto forbid = [&](const char* key) {
    if (field(j, key) != nullptr) fail(join(p, key), "not used by this fault kind");
  };
  if (f.kind == FaultKind::Degrade || f.kind == FaultKind::Flap || f.kind == FaultKind::Ramp) {
    f.factor = getNumber(need("factor"), join(p, "factor"));
    if (!(f.factor > 0 && f.factor <= 1)) fail(join(p, "factor"), "must be in (0, 1]");
    forbid("flows");
    forbid("add_us");
  } else {
    forbid("factor");
  }
  if (f.kind == FaultKind::Contention) {
    f.flows = static_cast<int>(getInt(need("flows"), join(p, "flows"), 1, 1000000));
    forbid("add_us");
  } else {
    forbid("flows");
  }
  if (f.kind == FaultKind::Latency) f.addUs = getPositive(need("add_us"), join(p, "add_us"), false);
  if (f.kind == FaultKind::Flap) {
    f.periodSteps = static_cast<int>(getInt(need("period_steps"), join(p, "period_steps"), 1, 100000000));
  } else {
    forbid("period_steps");
  }
  if (f.kind == FaultKind::Ramp) {
    f.rampSteps = static_cast<int>(getInt(need("ramp_steps"), join(p, "ramp_steps"), 1, 100000000));
    f.rampLevels = std::min(f.rampSteps, kDefaultRampLevels);
    if (const Json* v = field(j, "levels")) {
      f.rampLevels = static_cast<int>(getInt(*v, join(p, "levels"), 1, f.rampSteps));
    }
  } else {
    forbid("ramp_steps");
    forbid("levels");
  }
  if (const Json* v = field(j, "from_step")) f.fromStep = static_cast<int>(getInt(*v, join(p, "from_step"), 0, steps));
  if (const Json* v = field(j, "to_step")) {
    f.toStep = static_cast<int>(getInt(*v, join(p, "to_step"), 0, 100000000));
    if (f.toStep <= f.fromStep) {
      fail(join(p, "to_step"), "must be greater than from_step (" + std::to_string(f.fromStep) + ")");
    }
  }
  return f;
}

Scenario parseRoot(const Json& j) {
  requireObject(j, "", {"name", "description", "seed", "cluster", "comms", "workload", "faults", "noise"});
  Scenario s;
  s.name = getString(required(j, "", "name"), "name");
  if (s.name.empty()) fail("name", "must not be empty");
  if (const Json* v = field(j, "description")) s.description = getString(*v, "description");
  if (const Json* v = field(j, "seed")) {
    if (!v->is_number_unsigned() && !(v->is_number_integer() && v->get<int64_t>() >= 0)) {
      fail("seed", "must be a non-negative integer");
    }
    s.seed = v->get<uint64_t>();
  }
  s.cluster = parseCluster(required(j, "", "cluster"));
  s.comms = parseComms(required(j, "", "comms"), s.cluster);
  std::set<std::string> names;
  for (const auto& c : s.comms) names.insert(c.name);
  s.workload = parseWorkload(required(j, "", "workload"), names);
  if (const Json* v = field(j, "faults")) {
    if (!v->is_array()) fail("faults", "must be an array");
    for (size_t i = 0; i < v->size(); ++i) {
      s.faults.push_back(parseFault((*v)[i], at("faults", i), s.cluster, s.workload.steps));
    }
  }
  if (const Json* v = field(j, "noise")) {
    requireObject(*v, "noise", {"jitter", "straggler_prob", "straggler_us"});
    if (const Json* x = field(*v, "jitter")) s.noise.jitter = getPositive(*x, "noise.jitter", true);
    if (const Json* x = field(*v, "straggler_prob")) {
      s.noise.stragglerProb = getPositive(*x, "noise.straggler_prob", true);
      if (s.noise.stragglerProb > 1) fail("noise.straggler_prob", "must be at most 1");
    }
    if (const Json* x = field(*v, "straggler_us")) s.noise.stragglerUs = getPositive(*x, "noise.straggler_us", true);
  }
  return s;
}

}  // namespace

GpuPreset gpuPreset(GpuKind kind) {
  switch (kind) {
    case GpuKind::H100Sxm:
    case GpuKind::H200Sxm: return {18 * 20.6, true, 48, 90};
    case GpuKind::A100Sxm: return {12 * 20.0, false, 24, 80};
    case GpuKind::Pcie: return {0, false, 48, 89};
    case GpuKind::Generic: break;
  }
  return {200, false, 24, 80};
}

std::string_view gpuKindName(GpuKind kind) {
  switch (kind) {
    case GpuKind::H100Sxm: return "h100-sxm";
    case GpuKind::H200Sxm: return "h200-sxm";
    case GpuKind::A100Sxm: return "a100-sxm";
    case GpuKind::Pcie: return "pcie";
    case GpuKind::Generic: break;
  }
  return "generic";
}

std::string_view dtypeName(DType d) {
  switch (d) {
    case DType::F32: return "f32";
    case DType::Bf16: return "bf16";
    case DType::F16: return "f16";
    case DType::F8: break;
  }
  return "f8";
}

std::string_view faultKindName(FaultKind k) {
  switch (k) {
    case FaultKind::Degrade: return "degrade";
    case FaultKind::Contention: return "contention";
    case FaultKind::Latency: return "latency";
    case FaultKind::Flap: return "flap";
    case FaultKind::Ramp: break;
  }
  return "ramp";
}

std::string_view linkKindName(LinkKind k) {
  switch (k) {
    case LinkKind::Nic: return "nic";
    case LinkKind::Nvlink: return "nvlink";
    case LinkKind::Pcie: return "pcie";
    case LinkKind::Net: break;
  }
  return "net";
}

std::string_view transportName(Transport t) { return t == Transport::Ib ? "ib" : "socket"; }

size_t dtypeSize(DType d) { return d == DType::F32 ? 4 : d == DType::F8 ? 1 : 2; }

std::vector<const CommSpec*> Scenario::commInstances(std::string_view commName) const {
  std::vector<const CommSpec*> out;
  for (const auto& c : comms) {
    if (c.name == commName) out.push_back(&c);
  }
  return out;
}

std::optional<Scenario> parseScenario(std::string_view json, std::string* error) {
  try {
    Json j = Json::parse(json.begin(), json.end());
    return parseRoot(j);
  } catch (const ParseError& e) {
    if (error != nullptr) *error = e.message;
  } catch (const Json::exception& e) {
    if (error != nullptr) *error = std::string("(json): ") + e.what();
  }
  return std::nullopt;
}

std::optional<Scenario> loadScenarioFile(const std::string& path, std::string* error) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    if (error != nullptr) *error = path + ": cannot open";
    return std::nullopt;
  }
  std::ostringstream text;
  text << in.rdbuf();
  std::optional<Scenario> s = parseScenario(text.str(), error);
  if (!s && error != nullptr) *error = path + ": " + *error;
  return s;
}

}  // namespace wirewise::sim
