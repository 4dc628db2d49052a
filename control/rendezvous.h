// Where the coordinator is, and the job's key. Functions of the settings and the launcher's variables
// (both injected) and, for the key, of the key file's content when one is set.
//
// Order: the coordinator setting (host:port); torchrun's MASTER_ADDR with port MASTER_PORT + kPortOffset;
// SLURM (first host of SLURM_JOB_NODELIST, port from SLURM_JOB_ID and SLURM_STEP_ID: concurrent srun steps
// of one job are separate jobs to NCCL); Open MPI on one node (loopback, port from its job id); loopback
// with a port derived from the job key when the user set one; otherwise a coordinator of this process's
// own (port 0: the kernel picks it). Every process first tries to
// bind host:port (so the process on that host that binds first hosts the coordinator: it binds exactly
// that address, never a wildcard), then connects to it as a member.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "common/settings.h"

namespace wirewise::control {

inline constexpr int kPortOffset = 17;
// The rendezvous of a process with no launcher variables and no job key: a coordinator of its own, on a
// loopback port the kernel picks (port 0).
inline constexpr const char* kPrivateRendezvous = "loopback, this process only";

struct Rendezvous {
  std::string host;
  uint16_t port = 0;
  std::string source;   // which rule chose it, for the log
  std::string problem;  // non-empty: a variable was malformed (the next rule was used)
};

// env supplies the launcher's variables (MASTER_ADDR, SLURM_*, OMPI_*, USER); our own come from s.
Rendezvous resolveRendezvous(const Settings& s, const EnvSource& env);

struct JobKey {
  std::vector<uint8_t> key;  // empty when refused
  std::string source;        // the setting's name, or "derived from" the launcher variables used
  // Non-empty: the key file was refused (why, and the fix). The process must then join no coordinator:
  // falling back to a derived key would let anyone who can derive it steer a job whose user asked for a
  // secret.
  std::string problem;
  std::string notice;  // non-empty: a WARN worth giving that changes nothing (both key settings set)
  bool refused() const { return !problem.empty(); }
};
// The key: the key file's content (WIREWISE_JOB_KEY_FILE, read with readSecretFile's checks against uid),
// else WIREWISE_JOB_KEY, else SHA-256 of the uid and the launcher's job id: TORCHELASTIC_RUN_ID unless it
// is torchrun's default "none" (shared by every job that does not name one), SLURM_JOB_ID with
// SLURM_STEP_ID, Open MPI's job id, PMIx's namespace, or MASTER_ADDR:MASTER_PORT; the first present.
JobKey resolveJobKey(const Settings& s, const EnvSource& env, long uid);

// Bytes a key file may hold: a key, not a document.
inline constexpr size_t kMaxKeyFileBytes = 4096;

// SLURM_STEP_ID (or its older spelling SLURM_STEPID); "" outside a step.
std::string slurmStep(const EnvSource& env);

// "node[03-05,07],other" -> "node03"; "a,b" -> "a". Empty on a form it does not understand.
std::string firstSlurmHost(const std::string& nodeList);

}  // namespace wirewise::control
