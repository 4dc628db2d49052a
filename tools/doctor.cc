#include "tools/doctor.h"

#include <arpa/inet.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <fmt/core.h>

#include <cerrno>
#include <climits>
#include <cstring>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>

#include "common/safe_files.h"
#include "control/rendezvous.h"
#include "telemetry/collectors/collector_set.h"
#include "sim/loader/nccl_loader.h"

namespace wirewise::tools {
namespace {

namespace fs = std::filesystem;
using loader::PluginKind;

constexpr int kAdaptingNccl = 22803;  // 2.28.3: tuner v5, whose commId agreement needs

std::string realPath(const std::string& p) {
  char buf[PATH_MAX];
  return ::realpath(p.c_str(), buf) != nullptr ? std::string(buf) : p;
}

std::string setCoordinator() { return fmt::format("set {}=host:port", settingName(&Settings::coordinator)); }

std::string orUnset(const char* v) { return v != nullptr ? fmt::format("'{}'", v) : std::string("unset"); }

// ---- nccl.conf ----

void confFindings(const std::string& file, const std::vector<ConfLine>& lines, std::vector<Finding>* out) {
  if (lines.empty()) return;
  std::string keys;
  for (const ConfLine& l : lines) {
    keys += (keys.empty() ? "" : ", ") + l.key;
    const bool spacedKey = !l.key.empty() && (l.key.front() == ' ' || l.key.back() == ' ' || l.key.back() == '\t');
    const bool spacedValue = !l.value.empty() && (l.value.front() == ' ' || l.value.back() == ' ' ||
                                                  l.value.back() == '\r' || l.value.back() == '\t');
    if (spacedKey || spacedValue)
      out->push_back({"nccl_conf", Level::kWarn,
                      fmt::format("{}:{}: '{}={}' keeps its spaces: NCCL sets the variable '{}' to '{}'", file, l.line,
                                  l.key, l.value, l.key, l.value),
                      "write KEY=VALUE with nothing around the '=' (NCCL trims nothing)"});
  }
  out->push_back({"nccl_conf", Level::kInfo,
                  fmt::format("{} sets {} (each only where the environment has not set it)", file, keys), ""});
}

// ---- plugins ----

struct Resolved {
  loader::OpenResult open;
  std::string pluginName;  // the struct's name field
  int version = 0;
};

// Opens a plugin as NCCL would and reads the name and newest version of what it exports.
Resolved resolvePlugin(PluginKind kind, const char* value, const char* netLib) {
  Resolved r;
  r.open = loader::openPlugin(kind, value, netLib);
  if (r.open.handle == nullptr) return r;
  std::string why;
  if (kind == PluginKind::Tuner) {
    if (auto t = loader::Tuner::load(r.open.handle, &why, loader::NcclRelease::V2_32)) {
      r.pluginName = t->name(), r.version = t->version();
    }
  } else if (kind == PluginKind::Profiler) {
    if (auto p = loader::Profiler::load(r.open.handle, &why, loader::NcclRelease::V2_32)) {
      r.pluginName = p->name(), r.version = p->version();
    }
  } else {
    for (int v = 12; v >= 2 && r.version == 0; --v) {
      const std::string sym = fmt::format("ncclNetPlugin_v{}", v);
      if (void* s = ::dlsym(r.open.handle, sym.c_str())) r.pluginName = *static_cast<const char* const*>(s), r.version = v;
    }
  }
  return r;
}

const char* kindName(PluginKind k) { return k == PluginKind::Tuner ? "tuner" : k == PluginKind::Profiler ? "profiler" : "net"; }

Finding pluginFinding(PluginKind kind, const char* envName, const char* value, const Resolved& r) {
  const std::string check = std::string(kindName(kind)) + "_plugin";
  const std::string enable = "export NCCL_TUNER_PLUGIN=wirewise NCCL_PROFILER_PLUGIN=wirewise (or put both lines in "
                             "/etc/nccl.conf for every job on this host)";
  if (kind != PluginKind::Net && loader::isDisabled(value))
    return {check, Level::kError, fmt::format("{}=none: NCCL loads no {} plugin", envName, kindName(kind)), enable};
  if (r.open.handle == nullptr) {
    std::string tried;
    for (const std::string& t : r.open.tried) tried += (tried.empty() ? "" : ", ") + t;
    if (value == nullptr && kind != PluginKind::Net)
      return {check, Level::kError, fmt::format("{} is unset: NCCL looks for {} and finds none, so wirewise is not loaded",
                                                envName, tried), enable};
    return {check, kind == PluginKind::Net ? Level::kWarn : Level::kError,
            fmt::format("{}={}: NCCL tries {} and opens none", envName, orUnset(value), tried),
            "put the directory of libnccl-tuner-wirewise.so on LD_LIBRARY_PATH, or give NCCL its full path"};
  }
  const std::string where = r.open.path.empty() ? r.open.name : r.open.path;
  if (r.pluginName != "wirewise")
    return {check, Level::kWarn,
            fmt::format("{}={} opens {}, whose {} is '{}', not wirewise", envName, orUnset(value), where,
                        kindName(kind), r.pluginName.empty() ? "(no interface NCCL knows)" : r.pluginName),
            kind == PluginKind::Net ? "" : enable};
  return {check, Level::kOk,
          fmt::format("{}={} opens {}{}: wirewise {} v{} (the newest it exports)", envName, orUnset(value), where,
                      r.open.viaNetFallback ? " (NCCL's fallback to the net plugin's library)" : "", kindName(kind),
                      r.version),
          ""};
}

// ---- NCCL itself ----

void ncclFindings(const DoctorInput& in, std::vector<Finding>* out) {
  std::vector<std::string> names = {"libnccl.so.2"};
  for (const std::string& c : in.ncclCandidates)
    if (fs::exists(c)) names.push_back(c);
  std::map<std::string, int> found;  // real path -> version code
  for (const std::string& n : names) {
    void* h = ::dlopen(n.c_str(), RTLD_LAZY | RTLD_LOCAL);
    if (h == nullptr) continue;
    using GetVersion = int (*)(int*);
    int code = 0;
    auto get = reinterpret_cast<GetVersion>(::dlsym(h, "ncclGetVersion"));
    Dl_info info{};
    if (get != nullptr && get(&code) == 0 && ::dladdr(reinterpret_cast<void*>(get), &info) != 0 && info.dli_fname)
      found[realPath(info.dli_fname)] = code;
    ::dlclose(h);
  }
  if (found.empty()) {
    out->push_back({"nccl_version", Level::kInfo,
                    "no NCCL library found on the loader's path or in a PyTorch install here (a job may bring its own)",
                    "wirewise adapts with NCCL 2.28.3 or later; ask PyTorch which it bundles: python -c \"import "
                    "torch; print(torch.cuda.nccl.version())\""});
    return;
  }
  for (const auto& [path, code] : found) {
    const std::string v = fmt::format("{}.{}.{}", code / 10000, code / 100 % 100, code % 100);
    if (code >= kAdaptingNccl)
      out->push_back({"nccl_version", Level::kOk, fmt::format("NCCL {} at {}: adaptation available", v, path), ""});
    else
      out->push_back({"nccl_version", Level::kWarn,
                      fmt::format("NCCL {} at {}: older than 2.28.3, so wirewise applies static tables only "
                                  "(its tuner interface gives no communicator id to agree on)", v, path),
                      "use NCCL 2.28.3 or later for adaptation"});
  }
}

// Variables with which NCCL narrows what a tuner may choose.
void overrideFindings(const EnvSource& env, std::vector<Finding>* out) {
  struct Lever {
    const char* name;
    const char* effect;
  };
  static constexpr Lever kLevers[] = {
      {"NCCL_ALGO", "NCCL disables every other algorithm, so wirewise can choose only among these"},
      {"NCCL_PROTO", "NCCL disables every other protocol, so wirewise can choose only among these"},
      {"NCCL_MAX_NCHANNELS", "caps the channels NCCL sets up: wirewise's channel counts stop there"},
      {"NCCL_MIN_NCHANNELS", "raises the channels NCCL sets up: fewer channels cannot be asked for"},
      {"NCCL_MAX_CTAS", "caps the channels NCCL sets up: wirewise's channel counts stop there"},
      {"NCCL_MIN_CTAS", "raises the channels NCCL sets up: fewer channels cannot be asked for"},
  };
  bool any = false;
  for (const Lever& l : kLevers) {
    const char* v = env(l.name);
    if (v == nullptr || *v == '\0') continue;
    any = true;
    out->push_back({"tuning_overrides", Level::kWarn, fmt::format("{}={}: {}", l.name, v, l.effect),
                    fmt::format("unset {} unless the job needs it", l.name)});
  }
  if (!any)
    out->push_back({"tuning_overrides", Level::kOk, "no NCCL_ALGO, NCCL_PROTO or channel bounds narrow the choices", ""});
}

// ---- wirewise's own settings, rendezvous, key and log ----

bool isLocalAddress(const sockaddr* a, socklen_t len) {
  const int fd = ::socket(a->sa_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return false;
  sockaddr_storage s{};
  std::memcpy(&s, a, len);
  if (s.ss_family == AF_INET) reinterpret_cast<sockaddr_in*>(&s)->sin_port = 0;
  if (s.ss_family == AF_INET6) reinterpret_cast<sockaddr_in6*>(&s)->sin6_port = 0;
  const bool ok = ::bind(fd, reinterpret_cast<sockaddr*>(&s), len) == 0;
  ::close(fd);
  return ok;
}

// 1: connected, 0: refused (the host answers, nothing listens), -1: no answer within timeoutMs, or another error.
int tryConnect(const sockaddr* a, socklen_t len, int timeoutMs) {
  const int fd = ::socket(a->sa_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return -1;
  int result = -1;
  if (::connect(fd, a, len) == 0) {
    result = 1;
  } else if (errno == ECONNREFUSED) {
    result = 0;
  } else if (errno == EINPROGRESS) {
    pollfd p{fd, POLLOUT, 0};
    if (::poll(&p, 1, timeoutMs) == 1) {
      int err = 0;
      socklen_t el = sizeof err;
      ::getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &el);
      result = err == 0 ? 1 : err == ECONNREFUSED ? 0 : -1;
    }
  }
  ::close(fd);
  return result;
}

void rendezvousFindings(const DoctorInput& in, const Settings& s, const EnvSource& env, std::vector<Finding>* out) {
  if (s.sync == SyncMode::Off || s.mode != Mode::Apply) {
    out->push_back({"rendezvous", Level::kInfo, fmt::format("agreement is off here ({}=off, or a mode other than apply)", settingName(&Settings::sync)), ""});
    return;
  }
  const control::Rendezvous r = control::resolveRendezvous(s, env);
  if (!r.problem.empty())
    out->push_back({"rendezvous", Level::kWarn, r.problem, setCoordinator()});
  if (r.port == 0) {
    out->push_back({"rendezvous", Level::kInfo,
                    fmt::format("{}: no launcher variables here, so each process would host a coordinator of its own "
                                "(a single-process job adapts; ranks spread over processes keep their static tables)",
                                r.source),
                    "run `wirewise doctor` inside the job's environment (under srun, or with torchrun's variables) to "
                    "check its rendezvous"});
    return;
  }
  const std::string at = fmt::format("{}:{} ({})", r.host, r.port, r.source);
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  if (::getaddrinfo(r.host.c_str(), std::to_string(r.port).c_str(), &hints, &res) != 0 || res == nullptr) {
    out->push_back({"rendezvous", Level::kError, fmt::format("the coordinator's host does not resolve: {}", at),
                    "check the launcher's variables on this node, or " + setCoordinator()});
    return;
  }
  std::unique_ptr<addrinfo, decltype(&::freeaddrinfo)> hold(res, ::freeaddrinfo);
  if (isLocalAddress(res->ai_addr, res->ai_addrlen)) {
    out->push_back({"rendezvous", Level::kOk, fmt::format("{}: a local address, so this host would host the coordinator", at), ""});
    return;
  }
  if (!in.probeNetwork) {
    out->push_back({"rendezvous", Level::kInfo, fmt::format("{}: another host (not probed)", at), ""});
    return;
  }
  const int c = tryConnect(res->ai_addr, res->ai_addrlen, 1000);
  if (c == 1)
    out->push_back({"rendezvous", Level::kOk, fmt::format("{}: something answers there", at), ""});
  else if (c == 0)
    out->push_back({"rendezvous", Level::kInfo, fmt::format("{}: the host answers, nothing listens yet (the coordinator starts with the job)", at), ""});
  else
    out->push_back({"rendezvous", Level::kWarn, fmt::format("{}: no answer within 1 s: a firewall may drop the port", at),
                    fmt::format("open TCP port {} between the job's nodes, or {}", r.port, setCoordinator())});
}

void keyFindings(const DoctorInput& in, const Settings& s, const EnvSource& env, std::vector<Finding>* out) {
  if (s.sync == SyncMode::Off || s.mode != Mode::Apply) return;
  const control::JobKey k = control::resolveJobKey(s, env, in.uid);
  if (k.refused()) {
    out->push_back({"job_key", Level::kError, k.problem + " (the process would join no coordinator)", ""});
    return;
  }
  if (!k.notice.empty()) out->push_back({"job_key", Level::kWarn, k.notice, ""});
  out->push_back({"job_key", Level::kOk, "job key: " + k.source, ""});
}

void logFindings(const DoctorInput& in, const Settings& s, const EnvSource& env, std::vector<Finding>* out) {
  if (s.logPath.empty()) {
    out->push_back({"log", Level::kInfo, fmt::format("the adaptation log is off ({}=none)", settingName(&Settings::logPath)), ""});
    return;
  }
  const char* set = env(settingName(&Settings::logPath));
  const bool ownDir = set == nullptr || *set == '\0';  // the default's directory must be this user's alone
  const fs::path dir = fs::path(s.logPath).parent_path();
  std::error_code ec;
  if (fs::is_directory(dir, ec)) {
    std::string problem;
    if (ownDir) {
      const int fd = openOwnDir(dir.string(), static_cast<uid_t>(in.uid), &problem);
      if (fd >= 0) ::close(fd);
    } else if (::access(dir.c_str(), W_OK) != 0) {
      problem = fmt::format("{} is not writable by this user", dir.string());
    }
    if (!problem.empty()) {
      out->push_back({"log", Level::kError, problem + ": the log would be off", ""});
      return;
    }
    out->push_back({"log", Level::kOk, fmt::format("logs go to {} (here: {})", dir.string(), s.logPath), ""});
    return;
  }
  fs::path up = dir;
  while (!up.empty() && up != up.root_path() && !fs::exists(up, ec)) up = up.parent_path();
  if (up.empty()) up = ".";
  if (::access(up.c_str(), W_OK) != 0) {
    out->push_back({"log", Level::kError,
                    fmt::format("{} does not exist and {} is not writable: the log would be off", dir.string(), up.string()),
                    fmt::format("set {} to a path in a directory you can write", settingName(&Settings::logPath))});
    return;
  }
  out->push_back({"log", Level::kOk, fmt::format("logs go to {} (created 0700 at the first start)", dir.string()), ""});
}

void telemetryFindings(const DoctorInput& in, const Settings& s, std::vector<Finding>* out) {
  const auto loads = [](const char* lib) {
    void* h = ::dlopen(lib, RTLD_LAZY | RTLD_LOCAL);
    if (h != nullptr) ::dlclose(h);
    return h != nullptr;
  };
  const collectors::CollectorConfig libs;  // the libraries the plugin's collectors open
  const std::string nvml = libs.nvmlLibrary, cupti = libs.cuptiLibrary;
  out->push_back(loads(nvml.c_str())
                     ? Finding{"telemetry", Level::kOk, fmt::format("NVML ({}) loads: NVLink and PCIe health are read", nvml), ""}
                     : Finding{"telemetry", Level::kInfo, fmt::format("NVML ({}) does not load here: no NVLink or PCIe health (no GPU driver on this host?)", nvml), ""});
  if (s.cupti)
    out->push_back(loads(cupti.c_str())
                       ? Finding{"telemetry", Level::kOk, fmt::format("CUPTI ({}) loads ({}=on)", cupti, settingName(&Settings::cupti)), ""}
                       : Finding{"telemetry", Level::kWarn, fmt::format("{}=on but {} does not load: kernel records stay off", settingName(&Settings::cupti), cupti),
                                 "put CUDA's extras/CUPTI/lib64 (or PyTorch's nvidia/cuda_cupti/lib) on LD_LIBRARY_PATH"});
  std::error_code ec;
  size_t ib = 0;
  for (const auto& e : fs::directory_iterator(in.sysfsRoot + "/class/infiniband", ec)) {
    (void)e;
    ++ib;
  }
  out->push_back(ib > 0 ? Finding{"telemetry", Level::kOk, fmt::format("{} InfiniBand/RoCE device(s) in sysfs: their counters are read", ib), ""}
                        : Finding{"telemetry", Level::kInfo, "no InfiniBand/RoCE devices in sysfs: only netdev and TCP counters", ""});
}

}  // namespace

const char* levelName(Level l) {
  switch (l) {
    case Level::kOk: return "ok";
    case Level::kInfo: return "info";
    case Level::kWarn: return "warn";
    case Level::kError: return "error";
  }
  return "?";
}

std::vector<ConfLine> readNcclConf(const std::string& path) {
  std::vector<ConfLine> lines;
  std::ifstream in(path);
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    if (line.empty() || line[0] == '#') continue;
    const size_t eq = line.find('=');
    if (eq == std::string::npos) continue;
    lines.push_back({path, line.substr(0, eq), line.substr(eq + 1), n});
  }
  return lines;
}

EnvSource withNcclConf(const EnvSource& env, const std::vector<ConfLine>& userConf,
                       const std::vector<ConfLine>& siteConf) {
  auto layers = std::make_shared<std::vector<ConfLine>>(userConf);
  layers->insert(layers->end(), siteConf.begin(), siteConf.end());
  return [env, layers](const char* name) -> const char* {
    if (const char* v = env(name)) return v;
    for (const ConfLine& l : *layers)
      if (l.key == name) return l.value.c_str();
    return nullptr;
  };
}

std::vector<Finding> runDoctor(const DoctorInput& in) {
  std::vector<Finding> out;
  const char* confFile = in.env("NCCL_CONF_FILE");
  const std::string userPath = confFile != nullptr && *confFile ? confFile : in.homeDir + "/.nccl.conf";
  const std::vector<ConfLine> user = readNcclConf(userPath), site = readNcclConf(in.siteConf);
  confFindings(userPath, user, &out);
  confFindings(in.siteConf, site, &out);
  const EnvSource env = withNcclConf(in.env, user, site);

  const char* netValue = env("NCCL_NET_PLUGIN");
  Resolved net;
  if (netValue != nullptr) {
    net = resolvePlugin(PluginKind::Net, netValue, nullptr);
    out.push_back(pluginFinding(PluginKind::Net, "NCCL_NET_PLUGIN", netValue, net));
  }
  const char* netLib = net.open.handle != nullptr ? net.open.name.c_str() : nullptr;
  const char* tunerValue = env("NCCL_TUNER_PLUGIN");
  const char* profilerValue = env("NCCL_PROFILER_PLUGIN");
  const Resolved tuner = resolvePlugin(PluginKind::Tuner, tunerValue, netLib);
  const Resolved profiler = resolvePlugin(PluginKind::Profiler, profilerValue, netLib);
  out.push_back(pluginFinding(PluginKind::Tuner, "NCCL_TUNER_PLUGIN", tunerValue, tuner));
  out.push_back(pluginFinding(PluginKind::Profiler, "NCCL_PROFILER_PLUGIN", profilerValue, profiler));
  if (tuner.pluginName == "wirewise" && profiler.pluginName == "wirewise" &&
      realPath(tuner.open.path) != realPath(profiler.open.path))
    out.push_back({"one_instance", Level::kWarn,
                   fmt::format("the tuner ({}) and the profiler ({}) are two files: two instances, so the profiler's "
                               "measurements never reach the tuner", tuner.open.path, profiler.open.path),
                   "point both at one file (libnccl-profiler-wirewise.so is a symlink to libnccl-tuner-wirewise.so)"});
  for (const Resolved* r : {&tuner, &profiler, static_cast<const Resolved*>(&net)})
    if (r->open.handle != nullptr) ::dlclose(r->open.handle);

  ncclFindings(in, &out);
  overrideFindings(env, &out);

  std::vector<SettingProblem> problems;
  const Settings s = readSettings(env, in.host, static_cast<long>(::getpid()), &problems);
  for (const SettingProblem& p : problems) out.push_back({"settings", Level::kWarn, p.message, ""});
  if (problems.empty()) out.push_back({"settings", Level::kOk, "every wirewise setting read as given", ""});
  if (s.mode == Mode::Off)
    out.push_back({"settings", Level::kWarn, fmt::format("{}=off: wirewise loads but leaves NCCL alone", settingName(&Settings::mode)),
                   fmt::format("unset {}", settingName(&Settings::mode))});
  else if (s.mode == Mode::Observe)
    out.push_back({"settings", Level::kInfo, fmt::format("{}=observe: wirewise measures and logs, changes nothing", settingName(&Settings::mode)), ""});

  rendezvousFindings(in, s, env, &out);
  keyFindings(in, s, env, &out);
  logFindings(in, s, env, &out);
  telemetryFindings(in, s, &out);
  return out;
}

int doctorExitCode(const std::vector<Finding>& findings) {
  int code = 0;
  for (const Finding& f : findings) {
    if (f.level == Level::kError) return 2;
    if (f.level == Level::kWarn) code = 1;
  }
  return code;
}

}  // namespace wirewise::tools
