#include "exec/process/claim.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <sstream>

#include "exec/process/files.h"

namespace gpucloud::exec {

std::string claim_to_text(const Claim& claim) {
  if (claim.abandoned) return "abandoned\n";
  return "shim " + std::to_string(claim.shim_pid) + " " + std::to_string(claim.shim_start_ticks) +
         "\n";
}

Result<Claim> claim_from_text(const std::string& text) {
  std::istringstream in(text);
  std::string kind;
  in >> kind;
  Claim claim;
  if (kind == "abandoned") {
    claim.abandoned = true;
    return claim;
  }
  if (kind == "shim" && in >> claim.shim_pid >> claim.shim_start_ticks && claim.shim_pid > 0)
    return claim;
  return invalid("claim file holds '" + text.substr(0, 80) +
                 "', not 'shim <pid> <start ticks>' or 'abandoned'");
}

Result<bool> try_claim(const std::string& attempt_dir, const Claim& claim) {
  std::string path = attempt_dir + "/" + kClaimFile;
  // A name of this thread's own: the agent and a shim may race for the same claim.
  std::string tmp = attempt_dir + "/.claim." + std::to_string(::getpid()) + "." +
                    std::to_string(::gettid()) + ".tmp";
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return internal(errno_message("cannot create " + tmp));
  std::string text = claim_to_text(claim);
  bool written = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  auto write_error = internal(errno_message("cannot write " + tmp));
  ::close(fd);
  if (!written) {
    ::unlink(tmp.c_str());
    return write_error;
  }
  // link(2), unlike rename(2), never replaces an existing name: the first claim stays.
  int linked = ::link(tmp.c_str(), path.c_str());
  int link_errno = errno;
  ::unlink(tmp.c_str());
  if (linked != 0) {
    if (link_errno == EEXIST) return false;
    errno = link_errno;
    return internal(errno_message("cannot create " + path));
  }
  return true;
}

Result<Claim> read_claim(const std::string& attempt_dir) {
  auto text = read_file(attempt_dir + "/" + kClaimFile);
  if (!text.ok()) return text.error();
  auto claim = claim_from_text(*text);
  if (!claim.ok()) return invalid(attempt_dir + "/" + kClaimFile + ": " + claim.error().message);
  return claim;
}

}  // namespace gpucloud::exec
