#include "cost/instance_catalog.h"

#include <fmt/format.h>

#include <charconv>
#include <cmath>

#include "model/spot_price.h"
#include "sim/csv_table.h"

namespace gpucloud::cost {

namespace {

using sim::CsvTable;

// The columns every catalog has; `source`, `vcpus`, `memory_gib` and `gpu_memory_gib` are
// read by people, not by gpucloud, and may be absent.
constexpr const char* kRequired[] = {"cloud",  "instance_type",          "gpu_model",        "gpus",
                                     "region", "on_demand_usd_per_hour", "spot_usd_per_hour"};

Result<double> price(const CsvTable& t, size_t r, int c, bool may_be_empty) {
  std::string_view s = t.text(r, c);
  if (s.empty() && may_be_empty) return -1.0;
  double v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || end != s.data() + s.size() || !std::isfinite(v))
    return invalid(
        fmt::format("{}{}: '{}' is not a number of USD per hour", t.where(r, c), t.header(c), s));
  if (v < 0)
    return invalid(
        fmt::format("{}{}: {} is negative; a price is 0 or more", t.where(r, c), t.header(c), s));
  if (!valid_node_price_per_hour(v))
    return invalid(fmt::format("{}{}: {} is above the largest node price, {} USD per hour",
                               t.where(r, c), t.header(c), s, kMaxNodePricePerHour));
  return v;
}

// Refuses price columns in another currency: gpucloud's prices are USD.
Status check_currency(const CsvTable& t) {
  for (const std::string& h : t.headers()) {
    bool price_column =
        h.ends_with("_per_hour") && (h.starts_with("on_demand_") || h.starts_with("spot_"));
    if (price_column && h.find("_usd_") == std::string::npos)
      return invalid(
          fmt::format("{}:1:1: column '{}': unknown currency; prices must be in USD "
                      "(on_demand_usd_per_hour, spot_usd_per_hour): convert them first",
                      t.file(), h));
  }
  return {};
}

Result<std::map<InstanceCatalog::Key, InstanceOffer>> offers_of(const CsvTable& t,
                                                                const CatalogLimits& limits) {
  GPUCLOUD_TRY(check_currency(t));
  int col[std::size(kRequired)];
  for (size_t i = 0; i < std::size(kRequired); ++i) {
    auto c = t.column(kRequired[i]);
    if (!c.ok()) return c.error();
    col[i] = *c;
  }
  enum { kCloud, kType, kModel, kGpus, kRegion, kOnDemand, kSpot };
  std::map<InstanceCatalog::Key, InstanceOffer> out;
  for (size_t r = 0; r < t.size(); ++r) {
    for (size_t c = 0; c < t.headers().size(); ++c)
      if (t.text(r, static_cast<int>(c)).size() > limits.max_field_bytes)
        return invalid(fmt::format("{}{}: {} bytes; the limit is {}",
                                   t.where(r, static_cast<int>(c)), t.header(static_cast<int>(c)),
                                   t.text(r, static_cast<int>(c)).size(), limits.max_field_bytes));
    InstanceOffer o;
    o.line = t.line(r);
    o.cloud = t.text(r, col[kCloud]);
    o.instance_type = t.text(r, col[kType]);
    o.region = t.text(r, col[kRegion]);
    o.gpu_model = t.text(r, col[kModel]);
    for (int c : {col[kCloud], col[kType], col[kRegion]})
      if (t.text(r, c).empty())
        return invalid(
            fmt::format("{}{}: empty; every row names its cloud, instance_type and "
                        "region",
                        t.where(r, c), t.header(c)));
    auto gpus = t.non_negative(r, col[kGpus], 1024);
    if (!gpus.ok()) return gpus.error();
    o.gpus = static_cast<int>(*gpus);
    auto on_demand = price(t, r, col[kOnDemand], false);
    if (!on_demand.ok()) return on_demand.error();
    o.on_demand_usd_per_hour = *on_demand;
    auto spot = price(t, r, col[kSpot], true);
    if (!spot.ok()) return spot.error();
    o.spot_usd_per_hour = *spot;
    InstanceCatalog::Key key{o.cloud, o.instance_type, o.region};
    auto [it, fresh] = out.emplace(key, o);
    if (!fresh)
      return invalid(
          fmt::format("{}:{}:1: {} {} in {} is listed twice (first on line {}); keep one row",
                      t.file(), o.line, o.cloud, o.instance_type, o.region, it->second.line));
  }
  return out;
}

}  // namespace

Result<InstanceCatalog> InstanceCatalog::load(const std::string& path,
                                              const CatalogLimits& limits) {
  sim::CsvLimits csv;
  csv.max_bytes = limits.max_bytes;
  csv.max_records = limits.max_rows;
  auto t = CsvTable::read_file(path, csv);
  if (!t.ok()) return t.error();
  auto offers = offers_of(*t, limits);
  if (!offers.ok()) return offers.error();
  InstanceCatalog c;
  c.file_ = path;
  c.offers_ = std::move(*offers);
  return c;
}

Result<InstanceCatalog> InstanceCatalog::parse(std::string text, const std::string& file,
                                               const CatalogLimits& limits) {
  sim::CsvLimits csv;
  csv.max_bytes = limits.max_bytes;
  csv.max_records = limits.max_rows;
  auto t = CsvTable::parse(std::move(text), file, csv);
  if (!t.ok()) return t.error();
  auto offers = offers_of(*t, limits);
  if (!offers.ok()) return offers.error();
  InstanceCatalog c;
  c.file_ = file;
  c.offers_ = std::move(*offers);
  return c;
}

const InstanceOffer* InstanceCatalog::find(const std::string& cloud,
                                           const std::string& instance_type,
                                           const std::string& region) const {
  auto it = offers_.find(Key{cloud, instance_type, region});
  return it == offers_.end() ? nullptr : &it->second;
}

}  // namespace gpucloud::cost
