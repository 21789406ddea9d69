#include "exec/process/files.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

namespace gpucloud::exec {

std::string errno_message(const std::string& what) {
  return what + ": " + std::strerror(errno);
}

Result<std::string> read_file(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT) return not_found(path + " does not exist");
    return internal(errno_message("cannot open " + path));
  }
  std::string out;
  char buf[8192];
  for (;;) {
    ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      auto err = internal(errno_message("cannot read " + path));
      ::close(fd);
      return err;
    }
    if (n == 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  ::close(fd);
  return out;
}

static bool write_all(int fd, const char* data, size_t size) {
  while (size > 0) {
    ssize_t n = ::write(fd, data, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

Status write_file_atomic(const std::string& path, const std::string& content, int mode,
                         bool durable) {
  std::filesystem::path target(path);
  std::string dir = target.parent_path().empty() ? "." : target.parent_path().string();
  std::string tmp = dir + "/." + target.filename().string() + ".tmp";
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
  if (fd < 0) return internal(errno_message("cannot create " + tmp));
  if (!write_all(fd, content.data(), content.size()) || (durable && ::fsync(fd) != 0)) {
    auto err = internal(errno_message("cannot write " + tmp));
    ::close(fd);
    ::unlink(tmp.c_str());
    return err;
  }
  // A full disk may only show at close (NFS): then the old file stays, whole.
  if (::close(fd) != 0) {
    auto err = internal(errno_message("cannot write " + tmp));
    ::unlink(tmp.c_str());
    return err;
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    auto err = internal(errno_message("cannot rename " + tmp + " to " + path));
    ::unlink(tmp.c_str());
    return err;
  }
  int dfd = durable ? ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC) : -1;
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
  return {};
}

Status write_file_in_place(const std::string& path, const std::string& content, int mode) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
  if (fd < 0) return internal(errno_message("cannot create " + path));
  bool ok = write_all(fd, content.data(), content.size());
  ::close(fd);
  if (!ok) return internal(errno_message("cannot write " + path));
  return {};
}

Status make_dirs(const std::string& path, int mode) {
  std::filesystem::path p(path);
  std::filesystem::path partial;
  for (const auto& part : p) {
    partial /= part;
    if (partial == partial.root_path()) continue;
    if (::mkdir(partial.c_str(), static_cast<mode_t>(mode)) == 0 || errno == EEXIST) continue;
    return internal(errno_message("cannot create directory " + partial.string()));
  }
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    return internal(path + " exists but is not a directory; remove it or choose another path");
  }
  return {};
}

bool path_exists(const std::string& path) {
  struct stat st {};
  return ::lstat(path.c_str(), &st) == 0;
}

}  // namespace gpucloud::exec
