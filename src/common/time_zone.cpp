#include "common/time_zone.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <sstream>

namespace gpucloud {
namespace {

constexpr size_t kMaxTzifBytes = 1 << 20;  // tzdata's largest file is under 4 KiB
constexpr int64_t kMaxOffsetS = 26 * 3600;

bool valid_zone_name(const std::string& name) {
  if (name.empty() || name.size() > 64 || name.front() == '/' || name.front() == '.') return false;
  if (name.find("..") != std::string::npos) return false;
  for (char c : name)
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '/' ||
          c == '_' || c == '-' || c == '+'))
      return false;
  return true;
}

// A bounds-checked big-endian reader over the file's bytes.
struct Reader {
  const std::string& bytes;
  size_t pos = 0;
  bool ok = true;
  bool need(size_t n) {
    if (pos + n > bytes.size()) ok = false;
    return ok;
  }
  int64_t be(size_t n) {
    if (!need(n)) return 0;
    uint64_t v = 0;
    for (size_t i = 0; i < n; ++i) v = v << 8 | static_cast<uint8_t>(bytes[pos + i]);
    pos += n;
    if (n == 4) return static_cast<int32_t>(static_cast<uint32_t>(v));
    return static_cast<int64_t>(v);
  }
  void skip(size_t n) {
    if (need(n)) pos += n;
  }
};

// "[+-]hh[:mm[:ss]]" in seconds; false when malformed.
bool parse_hms(const std::string& s, size_t& i, int64_t& out) {
  int sign = 1;
  if (i < s.size() && (s[i] == '+' || s[i] == '-')) sign = s[i++] == '-' ? -1 : 1;
  int64_t parts[3] = {0, 0, 0};
  for (int p = 0; p < 3; ++p) {
    if (p > 0) {
      if (i >= s.size() || s[i] != ':') break;
      ++i;
    }
    size_t start = i;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9' && i - start < 3)
      parts[p] = parts[p] * 10 + (s[i++] - '0');
    if (i == start) return false;
  }
  out = sign * (parts[0] * 3600 + parts[1] * 60 + parts[2]);
  return out >= -167 * 3600 && out <= 167 * 3600;
}

bool skip_abbreviation(const std::string& s, size_t& i) {
  if (i < s.size() && s[i] == '<') {
    size_t close = s.find('>', i);
    if (close == std::string::npos) return false;
    i = close + 1;
    return true;
  }
  size_t start = i;
  while (i < s.size() && ((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z'))) ++i;
  return i - start >= 3;
}

// The instant (UTC) of a rule's change in `year`, for a local offset in force before it.
int64_t change_instant(int year, int month, int week, int weekday, int64_t time_s,
                       int64_t offset_before) {
  using namespace std::chrono;
  year_month ym{std::chrono::year{year}, std::chrono::month{static_cast<unsigned>(month)}};
  std::chrono::weekday wd{static_cast<unsigned>(weekday)};
  sys_days day = week >= 5 ? sys_days{ym / weekday_last{wd}}
                           : sys_days{ym / weekday_indexed{wd, static_cast<unsigned>(week)}};
  return day.time_since_epoch().count() * 86400 + time_s - offset_before;
}

}  // namespace

bool TimeZone::parse_rule(const std::string& s, Rule& rule) {
  size_t i = 0;
  if (!skip_abbreviation(s, i)) return false;
  int64_t posix_std = 0;
  if (!parse_hms(s, i, posix_std)) return false;
  rule.std_offset = -posix_std;  // POSIX offsets are west of UTC
  if (rule.std_offset < -kMaxOffsetS || rule.std_offset > kMaxOffsetS) return false;
  rule.has_dst = false;
  if (i == s.size()) return rule.valid = true;
  if (!skip_abbreviation(s, i)) return false;
  rule.dst_offset = rule.std_offset + 3600;
  if (i < s.size() && s[i] != ',') {
    int64_t posix_dst = 0;
    if (!parse_hms(s, i, posix_dst)) return false;
    rule.dst_offset = -posix_dst;
  }
  if (rule.dst_offset < -kMaxOffsetS || rule.dst_offset > kMaxOffsetS) return false;
  auto change = [&](Change& c) {
    if (i >= s.size() || s[i] != ',') return false;
    ++i;
    if (i >= s.size() || s[i] != 'M') return false;  // Jn and n forms: not used by tzdata
    ++i;
    int fields[3] = {0, 0, 0};
    for (int f = 0; f < 3; ++f) {
      if (f > 0) {
        if (i >= s.size() || s[i] != '.') return false;
        ++i;
      }
      size_t start = i;
      while (i < s.size() && s[i] >= '0' && s[i] <= '9' && i - start < 2)
        fields[f] = fields[f] * 10 + (s[i++] - '0');
      if (i == start) return false;
    }
    c.month = fields[0], c.week = fields[1], c.weekday = fields[2];
    if (c.month < 1 || c.month > 12 || c.week < 1 || c.week > 5 || c.weekday > 6) return false;
    c.time_s = 7200;
    if (i < s.size() && s[i] == '/') {
      ++i;
      if (!parse_hms(s, i, c.time_s)) return false;
    }
    return true;
  };
  if (!change(rule.start) || !change(rule.end) || i != s.size()) return false;
  rule.has_dst = true;
  return rule.valid = true;
}

int64_t TimeZone::rule_offset(int64_t utc_s) const {
  if (!rule_.has_dst) return rule_.std_offset;
  using namespace std::chrono;
  auto local_days = floor<days>(sys_seconds{seconds{utc_s + rule_.std_offset}});
  int y = static_cast<int>(year_month_day{local_days}.year());
  // The changes of the year before and after too: near New Year the local year may differ.
  for (int year : {y - 1, y, y + 1}) {
    int64_t start = change_instant(year, rule_.start.month, rule_.start.week, rule_.start.weekday,
                                   rule_.start.time_s, rule_.std_offset);
    int64_t end = change_instant(year, rule_.end.month, rule_.end.week, rule_.end.weekday,
                                 rule_.end.time_s, rule_.dst_offset);
    if (start < end) {  // northern hemisphere: DST within the year
      if (utc_s >= start && utc_s < end) return rule_.dst_offset;
    } else {  // southern: DST across New Year, from `start` of this year to `end` of the next
      int64_t next_end = change_instant(year + 1, rule_.end.month, rule_.end.week,
                                        rule_.end.weekday, rule_.end.time_s, rule_.dst_offset);
      if (utc_s >= start && utc_s < next_end) return rule_.dst_offset;
      if (year == y - 1 && utc_s < end) {
        int64_t prev_start =
            change_instant(year - 1, rule_.start.month, rule_.start.week, rule_.start.weekday,
                           rule_.start.time_s, rule_.std_offset);
        if (utc_s >= prev_start) return rule_.dst_offset;
      }
    }
  }
  return rule_.std_offset;
}

int64_t TimeZone::offset_s(int64_t utc_s) const {
  if (transitions_.empty() || utc_s < transitions_.front())
    return transitions_.empty() && rule_.valid ? rule_offset(utc_s) : initial_offset_;
  if (utc_s >= transitions_.back() && rule_.valid) return rule_offset(utc_s);
  auto it = std::upper_bound(transitions_.begin(), transitions_.end(), utc_s);
  return offsets_[static_cast<size_t>(it - transitions_.begin()) - 1];
}

int64_t TimeZone::to_utc_s(int64_t local_s) const {
  // Any valid offset o has offset_s(local - o) == o with |o| <= 26 h, so it is the offset
  // either before or after the (at most one) change within a day of the local time.
  int64_t before = offset_s(local_s - kMaxOffsetS), after = offset_s(local_s + kMaxOffsetS);
  int64_t first = std::max(before, after),
          second = std::min(before, after);  // earlier instant first
  if (offset_s(local_s - first) == first) return local_s - first;
  if (offset_s(local_s - second) == second) return local_s - second;
  return local_s - before;  // skipped by the change: read in the offset before it
}

Result<std::shared_ptr<const TimeZone>> TimeZone::parse(const std::string& name,
                                                        const std::string& bytes) {
  auto bad = [&](const std::string& why) {
    return invalid(
        fmt::format("time zone '{}': its database file is not valid TZif ({})", name, why));
  };
  if (bytes.size() > kMaxTzifBytes) return bad("larger than 1 MiB");
  Reader r{bytes};
  char version = 0;
  auto header = [&](int64_t counts[6]) {
    if (!r.need(44) || bytes.compare(r.pos, 4, "TZif") != 0) return false;
    version = bytes[r.pos + 4];
    r.skip(20);
    for (int i = 0; i < 6; ++i) counts[i] = r.be(4);
    return r.ok;
  };
  int64_t c[6];  // isutcnt, isstdcnt, leapcnt, timecnt, typecnt, charcnt
  if (!header(c)) return bad("no TZif header");
  for (int64_t n : c)
    if (n < 0 || n > 100000) return bad("counts out of range");
  size_t time_size = 4;
  if (version >= '2') {  // skip the 32-bit block: the 64-bit one follows
    r.skip(static_cast<size_t>(c[3] * 5 + c[4] * 6 + c[5] + c[2] * 8 + c[1] + c[0]));
    if (!header(c)) return bad("no second header");
    for (int64_t n : c)
      if (n < 0 || n > 100000) return bad("counts out of range");
    time_size = 8;
  }
  if (c[4] < 1) return bad("no local time types");
  auto zone = std::shared_ptr<TimeZone>(new TimeZone());
  zone->name_ = name;
  std::vector<int64_t> times;
  std::vector<uint8_t> types;
  for (int64_t i = 0; i < c[3]; ++i) times.push_back(r.be(time_size));
  for (int64_t i = 0; i < c[3]; ++i) types.push_back(static_cast<uint8_t>(r.be(1)));
  std::vector<int32_t> type_offsets;
  for (int64_t i = 0; i < c[4]; ++i) {
    int64_t off = r.be(4);
    r.skip(2);
    if (off < -kMaxOffsetS || off > kMaxOffsetS) return bad("an offset beyond 26 hours");
    type_offsets.push_back(static_cast<int32_t>(off));
  }
  r.skip(static_cast<size_t>(c[5] + c[2] * (time_size + 4) + c[1] + c[0]));
  if (!r.ok) return bad("truncated");
  for (size_t i = 0; i < times.size(); ++i) {
    if (types[i] >= type_offsets.size()) return bad("a transition to an unknown type");
    if (i > 0 && times[i] <= times[i - 1]) return bad("transitions out of order");
    zone->transitions_.push_back(times[i]);
    zone->offsets_.push_back(type_offsets[types[i]]);
  }
  zone->initial_offset_ = type_offsets[0];
  if (time_size == 8 && r.pos < bytes.size() && bytes[r.pos] == '\n') {
    size_t end = bytes.find('\n', r.pos + 1);
    if (end != std::string::npos && end - r.pos < 128)
      (void)parse_rule(bytes.substr(r.pos + 1, end - r.pos - 1), zone->rule_);
  }
  return std::shared_ptr<const TimeZone>(std::move(zone));
}

Result<std::shared_ptr<const TimeZone>> TimeZone::load(const std::string& name) {
  const char* env = std::getenv("TZDIR");
  std::string dir = env && *env ? env : "/usr/share/zoneinfo";
  auto unknown = [&] {
    return invalid(fmt::format(
        "time zone '{}' is not in the time zone database ({}); use an IANA name such as "
        "Europe/Berlin, America/New_York or UTC",
        name, dir));
  };
  if (!valid_zone_name(name)) return unknown();
  std::ifstream in(dir + "/" + name, std::ios::binary);
  if (!in) return unknown();
  std::string bytes(kMaxTzifBytes + 1, '\0');
  in.read(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  bytes.resize(static_cast<size_t>(in.gcount()));
  if (bytes.compare(0, 4, "TZif") != 0) return unknown();  // a directory or another file
  return parse(name, bytes);
}

}  // namespace gpucloud
