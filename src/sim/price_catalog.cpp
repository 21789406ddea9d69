#include "sim/price_catalog.h"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <charconv>
#include <cmath>
#include <fstream>
#include <sstream>

#include "model/yaml_json.h"
#include "sim/csv_table.h"

namespace gpucloud::sim {

namespace {

Result<double> price_value(std::string_view s, const std::string& where) {
  double v = 0;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || end != s.data() + s.size() || !std::isfinite(v))
    return invalid(fmt::format("{}usd_per_gpu_hour: '{}' is not a number", where, s));
  if (v < 0) return invalid(fmt::format("{}usd_per_gpu_hour: {} is negative", where, s));
  return v;
}

}  // namespace

Result<PriceCatalog> PriceCatalog::load(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return invalid(fmt::format("{}: cannot open the file; check the path", path));
  std::ostringstream buf;
  buf << in.rdbuf();
  bool yaml = path.ends_with(".yaml") || path.ends_with(".yml");
  return yaml ? parse_yaml(buf.str(), path) : parse_csv(buf.str(), path);
}

Result<PriceCatalog> PriceCatalog::parse_csv(std::string text, const std::string& file) {
  auto t = CsvTable::parse(std::move(text), file);
  if (!t.ok()) return t.error();
  auto model = t->column("gpu_model"), price = t->column("usd_per_gpu_hour");
  for (const auto* c : {&model, &price})
    if (!c->ok()) return c->error();
  PriceCatalog catalog;
  catalog.file_ = file;
  for (size_t r = 0; r < t->size(); ++r) {
    auto v = price_value(t->text(r, *price), t->where(r, *price));
    if (!v.ok()) return v.error();
    std::string name(t->text(r, *model));
    if (name.empty())
      return invalid(
          fmt::format("{}gpu_model: empty; name a model or * for all others", t->where(r, *model)));
    if (!catalog.prices_.emplace(name, *v).second)
      return invalid(fmt::format("{}gpu_model: '{}' is listed twice", t->where(r, *model), name));
  }
  return catalog;
}

Result<PriceCatalog> PriceCatalog::parse_yaml(const std::string& text, const std::string& file) {
  GPUCLOUD_TRY(check_yaml_text(text, file));
  try {
    YAML::Node root = YAML::Load(text);
    YAML::Node prices = root.IsMap() ? root["usd_per_gpu_hour"] : YAML::Node();
    if (!prices || !prices.IsMap())
      return invalid(fmt::format(
          "{}:1:1: expected 'usd_per_gpu_hour:' with a map of GPU model to dollars", file));
    PriceCatalog catalog;
    catalog.file_ = file;
    for (const auto& kv : prices) {
      YAML::Mark m = kv.second.Mark();
      auto v = price_value(kv.second.IsScalar() ? kv.second.Scalar() : "",
                           fmt::format("{}:{}:{}: ", file, m.line + 1, m.column + 1));
      if (!v.ok()) return v.error();
      catalog.prices_[kv.first.Scalar()] = *v;
    }
    return catalog;
  } catch (const YAML::Exception& e) {
    return invalid(fmt::format("{}:{}:{}: {}", file, e.mark.line + 1, e.mark.column + 1, e.msg));
  }
}

std::optional<double> PriceCatalog::usd_per_gpu_hour(const std::string& model) const {
  auto it = prices_.find(model);
  if (it == prices_.end()) it = prices_.find("*");
  if (it == prices_.end()) return std::nullopt;
  return it->second;
}

Status PriceCatalog::check_covers(const std::vector<std::string>& models) const {
  for (const std::string& m : models)
    if (!usd_per_gpu_hour(m))
      return invalid(fmt::format(
          "{}: no price for GPU model '{}' of the cluster; add a line '{},<usd per GPU-hour>' "
          "(or '*,<usd>' for every model not listed)",
          file_, m, m));
  return {};
}

}  // namespace gpucloud::sim
