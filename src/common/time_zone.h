// TimeZone: a named zone of the system's time zone database (IANA names such as Europe/Berlin),
// read once from its TZif file and immutable after that, so any thread may ask it for offsets
// without touching the process-wide TZ (localtime_r with setenv("TZ") is not thread-safe, and
// libstdc++ 12 has no std::chrono::tzdb).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/result.h"

namespace gpucloud {

/// One zone's UTC offsets over time: its transitions, and the rule of its TZif footer for
/// the years after the last transition (M-format POSIX rules, as every zone of tzdata has).
class TimeZone {
 public:
  /// Loads the zone from the database in $TZDIR or /usr/share/zoneinfo. Fails (kInvalidArgument)
  /// for a name that is not a zone there, e.g. "time zone 'Europe/Berln' is not in the time zone
  /// database (/usr/share/zoneinfo); use an IANA name such as Europe/Berlin or UTC".
  static Result<std::shared_ptr<const TimeZone>> load(const std::string& name);
  /// Parses TZif bytes (tests, and load).
  static Result<std::shared_ptr<const TimeZone>> parse(const std::string& name,
                                                       const std::string& bytes);

  const std::string& name() const { return name_; }
  /// Seconds east of UTC at the instant (seconds since the epoch, UTC).
  int64_t offset_s(int64_t utc_s) const;
  /// The instant of a local wall-clock time (seconds since the epoch as if the local time were
  /// UTC). A local time that happens twice (clocks going back) is its first instant; one that
  /// does not happen (clocks going forward) is read in the offset before the change, e.g.
  /// 02:30 on the spring-forward night of Europe/Berlin is 01:30 UTC (03:30 CEST).
  int64_t to_utc_s(int64_t local_s) const;

 private:
  // The footer's rule: standard offset, and when it has one, the DST offset and the two
  // changes (month, week 1..5 with 5 = last, weekday 0 = Sunday, seconds after local midnight).
  struct Change {
    int month = 0, week = 0, weekday = 0;
    int64_t time_s = 7200;
  };
  struct Rule {
    bool valid = false;
    int64_t std_offset = 0, dst_offset = 0;
    bool has_dst = false;
    Change start, end;
  };
  static bool parse_rule(const std::string& text, Rule& rule);
  int64_t rule_offset(int64_t utc_s) const;

  std::string name_;
  std::vector<int64_t> transitions_;  // instants, ascending
  std::vector<int32_t> offsets_;      // the offset from each transition on
  int32_t initial_offset_ = 0;        // before the first transition
  Rule rule_;
};

}  // namespace gpucloud
