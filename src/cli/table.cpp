#include "cli/table.h"

#include <algorithm>

namespace gpucloud::cli {
namespace {

size_t display_width(const std::string& s) {
  size_t n = 0;
  for (unsigned char c : s) n += (c & 0xc0) != 0x80 ? 1 : 0;
  return n;
}

}  // namespace

void Table::print(std::ostream& out) const {
  std::vector<size_t> widths;
  for (const auto& row : rows_) {
    if (widths.size() < row.size()) widths.resize(row.size(), 0);
    for (size_t i = 0; i < row.size(); ++i) widths[i] = std::max(widths[i], display_width(row[i]));
  }
  for (const auto& row : rows_) {
    std::string line;
    for (size_t i = 0; i < row.size(); ++i) {
      line += row[i];
      if (i + 1 < row.size()) line += std::string(widths[i] - display_width(row[i]) + 2, ' ');
    }
    out << line << "\n";
  }
}

}  // namespace gpucloud::cli
