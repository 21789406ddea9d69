// A plain-text table with aligned columns, for ps and nodes.
#pragma once

#include <ostream>
#include <string>
#include <vector>

namespace gpucloud::cli {

class Table {
 public:
  explicit Table(std::vector<std::string> header) : rows_{std::move(header)} {}
  void add(std::vector<std::string> row) { rows_.push_back(std::move(row)); }
  /// Prints the rows; the last column is not padded. Widths count UTF-8 characters.
  void print(std::ostream& out) const;

 private:
  std::vector<std::vector<std::string>> rows_;
};

}  // namespace gpucloud::cli
