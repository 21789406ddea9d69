// Runs the built `gpucloud` binary through the shell and captures what it prints, for the
// `gpucloud sim ...` end-to-end tests.
#pragma once

#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <string>

namespace gpucloud::testing {

/// What a command printed and its exit status (-1 if it could not be started).
struct CliOutput {
  int status = -1;
  std::string text;
};

/// Runs `gpucloud ARGS REDIRECT` with /bin/sh; `redirect` is e.g. "2>&1" or "2>/dev/null".
inline CliOutput run_gpucloud(const std::string& args, const std::string& redirect = "2>&1") {
  std::string cmd = std::string(GPUCLOUD_BINARY) + " " + args + " " + redirect;
  CliOutput out;
  FILE* pipe = popen(cmd.c_str(), "r");
  if (pipe == nullptr) return out;
  std::array<char, 4096> buf;
  size_t n = 0;
  while ((n = fread(buf.data(), 1, buf.size(), pipe)) > 0) out.text.append(buf.data(), n);
  out.status = WEXITSTATUS(pclose(pipe));
  return out;
}

}  // namespace gpucloud::testing
