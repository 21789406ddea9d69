#include "server/log_store.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <string_view>

namespace gpucloud::server {

std::string LogStore::path_for(const std::string& key) const {
  // key = <job>.<attempt>.<rank>; job ids are hex, so the key is a safe file name.
  return fmt::format("{}/{}.log", dir_, key);
}

int64_t LogStore::size(const std::string& key) {
  auto it = sizes_.find(key);
  if (it != sizes_.end()) return it->second;
  struct stat st {};
  int64_t n = ::stat(path_for(key).c_str(), &st) == 0 ? st.st_size : 0;
  sizes_[key] = n;
  return n;
}

Result<int64_t> LogStore::append(const std::string& key, int64_t offset, const std::string& data) {
  int64_t current = size(key);
  // A chunk that starts before the end repeats what is stored (an agent that lost the answer
  // to its last poll sends it again, with what came since): only its rest is new. One that
  // starts past the end would leave a gap: the agent continues from `current` instead.
  if (offset < 0 || offset > current) return current;
  const int64_t end = offset + static_cast<int64_t>(data.size());
  if (end <= current) return current;
  const std::string_view fresh =
      std::string_view(data).substr(static_cast<size_t>(current - offset));
  std::string path = path_for(key);
  if (!dir_made_) {
    std::error_code ec;
    std::filesystem::create_directories(dir_, ec);
    // Other tenants' output: closed to every other user (job users included).
    dir_made_ = !ec && ::chmod(dir_.c_str(), 0700) == 0;
  }
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
  if (fd < 0) return internal(fmt::format("cannot open log {}: {}", path, std::strerror(errno)));
  size_t written = 0;
  while (written < fresh.size()) {
    ssize_t n = ::write(fd, fresh.data() + written, fresh.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      ::close(fd);
      return internal(fmt::format("cannot write log {}: {}", path, std::strerror(errno)));
    }
    written += static_cast<size_t>(n);
  }
  ::close(fd);
  sizes_[key] = end;
  wake(key);
  return sizes_[key];
}

Result<std::string> LogStore::read(const std::string& key, int64_t offset, int64_t max_bytes) {
  int64_t total = size(key);
  if (offset >= total) return std::string();
  int fd = ::open(path_for(key).c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return internal(fmt::format("cannot open log of {}: {}", key, std::strerror(errno)));
  std::string out(static_cast<size_t>(std::min(max_bytes, total - offset)), '\0');
  ssize_t n = ::pread(fd, out.data(), out.size(), offset);
  ::close(fd);
  if (n < 0) return internal(fmt::format("cannot read log of {}: {}", key, std::strerror(errno)));
  out.resize(static_cast<size_t>(n));
  return out;
}

uint64_t LogStore::on_next_append(const std::string& key, std::function<void()> fn) {
  uint64_t id = next_waiter_++;
  waiters_.emplace(key, std::make_pair(id, std::move(fn)));
  return id;
}

void LogStore::cancel_waiter(const std::string& key, uint64_t id) {
  auto [begin, end] = waiters_.equal_range(key);
  for (auto it = begin; it != end; ++it)
    if (it->second.first == id) {
      waiters_.erase(it);
      return;
    }
}

void LogStore::wake(const std::string& key) {
  auto [begin, end] = waiters_.equal_range(key);
  std::vector<std::function<void()>> fns;
  for (auto it = begin; it != end; ++it) fns.push_back(std::move(it->second.second));
  waiters_.erase(begin, end);
  for (auto& fn : fns) fn();
}

}  // namespace gpucloud::server
