#include "control/rendezvous.h"

#include <cstdlib>

#include "common/safe_files.h"
#include "control/sha256.h"

namespace wirewise::control {
namespace {

bool parsePort(const std::string& s, long* out) {
  if (s.empty() || s.size() > 5) return false;
  for (char c : s)
    if (c < '0' || c > '9') return false;
  long v = std::strtol(s.c_str(), nullptr, 10);
  if (v < 1 || v > 65535) return false;
  *out = v;
  return true;
}

std::string get(const EnvSource& env, const char* name) {
  const char* v = env(name);
  return v ? std::string(v) : std::string();
}

uint16_t portFromText(const std::string& text) {
  Digest d = sha256({reinterpret_cast<const uint8_t*>(text.data()), text.size()});
  return static_cast<uint16_t>(20000 + ((d[0] << 8) | d[1]) % 10000);
}

}  // namespace

std::string firstSlurmHost(const std::string& list) {
  size_t end = list.find_first_of(",[");
  if (end == std::string::npos) return list;
  std::string prefix = list.substr(0, end);
  if (list[end] == ',') return prefix;
  size_t stop = list.find_first_of(",-]", end + 1);
  if (stop == std::string::npos || stop == end + 1) return "";
  return prefix + list.substr(end + 1, stop - end - 1);
}

Rendezvous resolveRendezvous(const Settings& s, const EnvSource& env) {
  Rendezvous r;
  std::string problem;
  const char* name = settingName(&Settings::coordinator);
  if (const std::string& c = s.coordinator; !c.empty()) {
    size_t colon = c.rfind(':');
    long port = 0;
    if (colon != std::string::npos && colon > 0 && parsePort(c.substr(colon + 1), &port)) {
      r.host = c.substr(0, colon);
      if (r.host.size() > 2 && r.host.front() == '[' && r.host.back() == ']')
        r.host = r.host.substr(1, r.host.size() - 2);
      r.port = static_cast<uint16_t>(port);
      r.source = name;
      return r;
    }
    problem = "ignoring " + std::string(name) + "=\"" + c + "\": expected host:port";
  }
  if (std::string a = get(env, "MASTER_ADDR"); !a.empty()) {
    long port = 0;
    if (parsePort(get(env, "MASTER_PORT"), &port) && port + kPortOffset <= 65535) {
      r = {a, static_cast<uint16_t>(port + kPortOffset), "MASTER_ADDR/MASTER_PORT", problem};
      return r;
    }
  }
  if (std::string job = get(env, "SLURM_JOB_ID"); !job.empty()) {
    std::string host = firstSlurmHost(get(env, "SLURM_JOB_NODELIST"));
    if (std::string step = slurmStep(env); !host.empty() && !step.empty())
      return {host, portFromText("slurm:" + job + "." + step), "SLURM_JOB_NODELIST/SLURM_JOB_ID/SLURM_STEP_ID",
              problem};
    if (!host.empty()) return {host, portFromText("slurm:" + job), "SLURM_JOB_NODELIST/SLURM_JOB_ID", problem};
  }
  std::string ompiJob = get(env, "OMPI_MCA_ess_base_jobid");
  if (!ompiJob.empty() && get(env, "OMPI_COMM_WORLD_SIZE") == get(env, "OMPI_COMM_WORLD_LOCAL_SIZE"))
    return {"127.0.0.1", portFromText("ompi:" + ompiJob), "Open MPI (single node)", problem};
  // No launcher variables and no job key: nothing tells this process's job from another job of the same
  // user on this host, which would derive the same key and port, join one coordinator, and stall when
  // that job ends. Its own coordinator on a port the kernel picks serves the communicators of this process
  // (a single-process job adapts); one that spans processes never has all its members and keeps its table.
  if (!s.jobKey.set() && s.jobKeyFile.empty()) return {"127.0.0.1", 0, kPrivateRendezvous, problem};
  // One host, a job key the user set: loopback. Jobs of other users (or with other keys) on the same port
  // fail authentication, so their members never join: they keep their tables rather than diverge.
  // A key file stands for its key by its path: the port is chosen before, and without, reading it.
  const std::string key = s.jobKeyFile.empty() ? s.jobKey.value : "file:" + s.jobKeyFile;
  return {"127.0.0.1", portFromText("loopback:" + key + ":" + get(env, "USER")), "loopback", problem};
}

std::string slurmStep(const EnvSource& env) {
  std::string step = get(env, "SLURM_STEP_ID");
  return step.empty() ? get(env, "SLURM_STEPID") : step;
}

JobKey resolveJobKey(const Settings& s, const EnvSource& env, long uid) {
  if (const std::string& path = s.jobKeyFile; !path.empty()) {
    const char* name = settingName(&Settings::jobKeyFile);
    JobKey k;
    k.source = name;
    std::string problem;
    std::string text = readSecretFile(path, static_cast<uid_t>(uid), kMaxKeyFileBytes, &problem);
    if (!problem.empty()) {
      k.problem = std::string(name) + "=" + path + " is refused: " + problem +
                  "; until then this process joins no coordinator and its communicators keep their static table";
      return k;
    }
    k.key.assign(text.begin(), text.end());
    if (s.jobKey.set())
      k.notice = std::string(settingName(&Settings::jobKey)) + " is ignored: " + name + "=" + path +
                 " is set too and wins; unset one of them";
    return k;
  }
  if (const std::string& k = s.jobKey.value; !k.empty()) {
    JobKey out;
    out.key.assign(k.begin(), k.end());
    out.source = settingName(&Settings::jobKey);
    return out;
  }
  std::string material = "wirewise-job-key:uid=" + std::to_string(uid);
  std::string source = "uid only";
  // torchrun's default rendezvous id names no job: every job of the user that does not set one has it.
  std::string runId = get(env, "TORCHELASTIC_RUN_ID");
  if (runId == "none") runId.clear();
  if (!runId.empty()) {
    material += ":TORCHELASTIC_RUN_ID=" + runId;
    source = "TORCHELASTIC_RUN_ID";
  } else if (std::string job = get(env, "SLURM_JOB_ID"); !job.empty()) {
    material += ":SLURM_JOB_ID=" + job;
    source = "SLURM_JOB_ID";
    if (std::string step = slurmStep(env); !step.empty()) {
      material += ":SLURM_STEP_ID=" + step;
      source += "/SLURM_STEP_ID";
    }
  } else {
    for (const char* name : {"OMPI_MCA_ess_base_jobid", "PMIX_NAMESPACE", "MASTER_ADDR"}) {
      if (std::string v = get(env, name); !v.empty()) {
        material += std::string(":") + name + "=" + v;
        if (std::string(name) == "MASTER_ADDR") material += ":" + get(env, "MASTER_PORT");
        source = name;
        break;
      }
    }
  }
  Digest d = sha256({reinterpret_cast<const uint8_t*>(material.data()), material.size()});
  JobKey out;
  out.key.assign(d.begin(), d.end());
  out.source = "derived from " + source;
  return out;
}

}  // namespace wirewise::control
