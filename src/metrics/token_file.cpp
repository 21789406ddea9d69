#include "metrics/token_file.h"

#include <fmt/format.h>

#include <cctype>
#include <fstream>

namespace gpucloud::metrics {

namespace {

constexpr size_t kMaxTokenFileBytes = 4096;
constexpr size_t kMinTokenChars = 16;

}  // namespace

Result<std::string> read_token_file(const std::string& path, const std::string& flag) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return invalid(
        fmt::format("{} {}: cannot read it; write a token (e.g. `openssl rand -hex 32`) to "
                    "that file, readable by this process",
                    flag, path));
  std::string token(kMaxTokenFileBytes + 1, '\0');
  in.read(token.data(), static_cast<std::streamsize>(token.size()));
  token.resize(static_cast<size_t>(in.gcount()));
  if (token.size() > kMaxTokenFileBytes)
    return invalid(fmt::format("{} {}: longer than {} bytes; it should hold one token on one line",
                               flag, path, kMaxTokenFileBytes));
  while (!token.empty() && std::isspace(static_cast<unsigned char>(token.back()))) token.pop_back();
  size_t start = 0;
  while (start < token.size() && std::isspace(static_cast<unsigned char>(token[start]))) ++start;
  token.erase(0, start);
  if (token.size() < kMinTokenChars || token.find_first_of(" \t\r\n") != std::string::npos)
    return invalid(
        fmt::format("{} {}: the token must be one word of at least {} characters (e.g. "
                    "`openssl rand -hex 32`), got {} characters",
                    flag, path, kMinTokenChars, token.size()));
  return token;
}

}  // namespace gpucloud::metrics
