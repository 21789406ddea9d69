// A small CSV reader for trace files: a header line, then one record per line, fields without
// quotes. Every error names the file, the line and the column (1-based character position).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace gpucloud::sim {

/// One field of a record and where it starts in the file.
struct CsvField {
  std::string_view text;
  int column = 1;  // 1-based character position in its line
};

/// The default upper bound of numbers in CSV files: large enough for any count of milli-CPUs,
/// MiB or seconds, small enough that sums and unit conversions (x1000) cannot overflow.
constexpr int64_t kMaxCsvNumber = int64_t{1} << 40;

/// What CsvTable reads at most; above any of them it fails with file:line and the limit.
struct CsvLimits {
  size_t max_bytes = 512u << 20;      // the whole file
  size_t max_line_bytes = 64u << 10;  // one line
  size_t max_fields = 256;            // fields of one line
  size_t max_records = 5'000'000;     // lines after the header
};

/// A parsed CSV file: its header and records, with positions for error messages.
class CsvTable {
 public:
  /// Reads and splits a file. Fails if it cannot be read or has no header.
  static Result<CsvTable> read_file(const std::string& path, const CsvLimits& limits = {});
  /// Splits text already in memory; `file` is the name used in messages.
  static Result<CsvTable> parse(std::string text, std::string file, const CsvLimits& limits = {});

  /// The index of a header column, or an error naming the file and the columns it has.
  Result<int> column(std::string_view name) const;
  /// Records (lines after the header, blank lines skipped).
  size_t size() const { return records_.size(); }
  /// The line number (1-based) of record r.
  int line(size_t r) const { return records_[r].line; }
  /// The text of field c of record r.
  std::string_view text(size_t r, int c) const { return records_[r].fields[c].text; }
  /// A whole number field within 0..max, or an error with file:line:column and the column's
  /// name.
  Result<int64_t> non_negative(size_t r, int c, int64_t max = kMaxCsvNumber) const;
  /// The 1-based character position of field c of record r in its line.
  int position(size_t r, int c) const { return records_[r].fields[static_cast<size_t>(c)].column; }
  /// "file:line:column: " for field c of record r, the prefix of every message about it.
  std::string where(size_t r, int c) const;
  /// The name of column c, as the header writes it.
  const std::string& header(int c) const { return header_[static_cast<size_t>(c)]; }
  /// All column names, in file order.
  const std::vector<std::string>& headers() const { return header_; }
  /// The file name used in messages.
  const std::string& file() const { return file_; }

 private:
  struct Record {
    int line = 0;
    std::vector<CsvField> fields;
  };
  std::string file_;
  // The file's text, which the fields view: shared and never moved, so that a copied or moved
  // table (and a short text kept inline by std::string) still views valid memory.
  std::shared_ptr<const std::string> text_;
  std::vector<std::string> header_;
  std::vector<Record> records_;
};

}  // namespace gpucloud::sim
