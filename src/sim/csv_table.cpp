#include "sim/csv_table.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <charconv>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>

namespace gpucloud::sim {

namespace {

std::vector<CsvField> split(std::string_view line) {
  std::vector<CsvField> fields;
  size_t start = 0;
  while (true) {
    size_t comma = line.find(',', start);
    size_t end = comma == std::string_view::npos ? line.size() : comma;
    fields.push_back({line.substr(start, end - start), static_cast<int>(start) + 1});
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  return fields;
}

}  // namespace

Result<CsvTable> CsvTable::read_file(const std::string& path, const CsvLimits& limits) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return invalid(fmt::format("{}: cannot open the file; check the path", path));
  std::error_code ec;
  auto size = std::filesystem::file_size(path, ec);
  if (!ec && size > limits.max_bytes)
    return Error{ErrorCode::kTooLarge, fmt::format("{}: {} bytes is above the limit of {} bytes",
                                                   path, size, limits.max_bytes)};
  std::ostringstream buf;
  buf << in.rdbuf();
  return parse(buf.str(), path, limits);
}

Result<CsvTable> CsvTable::parse(std::string text, std::string file, const CsvLimits& limits) {
  if (text.size() > limits.max_bytes)
    return Error{ErrorCode::kTooLarge, fmt::format("{}: {} bytes is above the limit of {} bytes",
                                                   file, text.size(), limits.max_bytes)};
  CsvTable t;
  t.file_ = std::move(file);
  t.text_ = std::make_shared<const std::string>(std::move(text));
  std::string_view all = *t.text_;
  int line_no = 0;
  bool have_header = false;
  size_t header_fields = 0;
  while (!all.empty()) {
    size_t nl = all.find('\n');
    std::string_view line = all.substr(0, nl);
    all = nl == std::string_view::npos ? std::string_view{} : all.substr(nl + 1);
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.find_first_not_of(" \t") == std::string_view::npos) continue;
    if (line.size() > limits.max_line_bytes)
      return invalid(fmt::format("{}:{}:1: the line is {} bytes long; the limit is {}", t.file_,
                                 line_no, line.size(), limits.max_line_bytes));
    if (static_cast<size_t>(std::count(line.begin(), line.end(), ',')) >= limits.max_fields)
      return invalid(fmt::format("{}:{}:1: more than {} fields on one line", t.file_, line_no,
                                 limits.max_fields));
    if (have_header && t.records_.size() >= limits.max_records)
      return invalid(fmt::format("{}:{}:1: more than {} records; split the file", t.file_, line_no,
                                 limits.max_records));
    std::vector<CsvField> fields = split(line);
    if (!have_header) {
      for (const CsvField& f : fields) t.header_.emplace_back(f.text);
      header_fields = fields.size();
      have_header = true;
      continue;
    }
    if (fields.size() != header_fields)
      return invalid(fmt::format("{}:{}:1: {} fields but the header has {}", t.file_, line_no,
                                 fields.size(), header_fields));
    t.records_.push_back({line_no, std::move(fields)});
  }
  if (!have_header) return invalid(fmt::format("{}:1:1: empty file, expected a header", t.file_));
  return t;
}

Result<int> CsvTable::column(std::string_view name) const {
  for (size_t i = 0; i < header_.size(); ++i)
    if (header_[i] == name) return static_cast<int>(i);
  return invalid(fmt::format("{}:1:1: missing column '{}' (the header has: {})", file_, name,
                             fmt::join(header_, ",")));
}

std::string CsvTable::where(size_t r, int c) const {
  return fmt::format("{}:{}:{}: ", file_, records_[r].line, records_[r].fields[c].column);
}

Result<int64_t> CsvTable::non_negative(size_t r, int c, int64_t max) const {
  std::string_view s = text(r, c);
  int64_t v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec == std::errc::result_out_of_range && end == s.data() + s.size())
    return invalid(fmt::format("{}column '{}': {} is out of range; the largest allowed is {}",
                               where(r, c), header_[c], s, max));
  if (s.empty() || ec != std::errc() || end != s.data() + s.size())
    return invalid(
        fmt::format("{}column '{}': '{}' is not a whole number", where(r, c), header_[c], s));
  if (v < 0)
    return invalid(fmt::format("{}column '{}': {} is negative; it must be 0 or more", where(r, c),
                               header_[c], v));
  if (v > max)
    return invalid(fmt::format("{}column '{}': {} is out of range; the largest allowed is {}",
                               where(r, c), header_[c], v, max));
  return v;
}

}  // namespace gpucloud::sim
