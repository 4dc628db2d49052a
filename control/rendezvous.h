// Where the coordinator is, and the job's key. Pure functions of the settings and the launcher's
// variables (both injected).
//
// Order: the coordinator setting (host:port); torchrun's MASTER_ADDR with port MASTER_PORT + kPortOffset;
// SLURM (first host of SLURM_JOB_NODELIST, port from SLURM_JOB_ID); Open MPI on one node (loopback, port
// from its job id); otherwise loopback with a port derived from the job key. Every process first tries to
// bind host:port (so the process on that host that binds first hosts the coordinator: it binds exactly
// that address, never a wildcard), then connects to it as a member.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/settings.h"

namespace wirewise::control {

inline constexpr int kPortOffset = 17;

struct Rendezvous {
  std::string host;
  uint16_t port = 0;
  std::string source;   // which rule chose it, for the log
  std::string problem;  // non-empty: a variable was malformed (the next rule was used)
};

// env supplies the launcher's variables (MASTER_ADDR, SLURM_*, OMPI_*, USER); our own come from s.
Rendezvous resolveRendezvous(const Settings& s, const EnvSource& env);

struct JobKey {
  std::vector<uint8_t> key;
  std::string source;  // the job-key setting's name, or "derived from" the launcher variable used
};
JobKey resolveJobKey(const Settings& s, const EnvSource& env, long uid);

// "node[03-05,07],other" -> "node03"; "a,b" -> "a". Empty on a form it does not understand.
std::string firstSlurmHost(const std::string& nodeList);

}  // namespace wirewise::control
