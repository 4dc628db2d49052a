// Runs the built `wirewise` binary as a child process and captures its exit status, stdout and stderr.
#pragma once

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

namespace wirewise::tools::testing {

struct CliResult {
  int status = -1;
  std::string out, err;
};

inline std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// args is appended to the binary's path as shell words; the caller quotes what needs quoting.
inline CliResult runCli(const std::string& args, const std::string& envPrefix = "") {
  char errPath[] = "/tmp/ww_cli_err_XXXXXX";
  int fd = mkstemp(errPath);
  if (fd >= 0) close(fd);
  std::string cmd = envPrefix + " '" + std::string(WW_CLI) + "' " + args + " 2>" + errPath;
  CliResult r;
  if (FILE* p = popen(cmd.c_str(), "r")) {
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, p)) > 0) r.out.append(buf, n);
    int st = pclose(p);
    r.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  }
  r.err = slurp(errPath);
  unlink(errPath);
  return r;
}

}  // namespace wirewise::tools::testing
