#include "gpu/simulated/sim_spec.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>

namespace gpucloud::gpu {
namespace {

struct KnownModel {
  std::string_view key;  // upper case, as matched
  std::string_view spec;
  std::string_view product_name;
  std::string_view model;
  int64_t memory_mib;
  SimLinks links;
  int idle_power_w;
};

// Product names and memory as nvidia-smi reports them on these GPUs.
constexpr std::array<KnownModel, 16> kKnown{{
    {"A100-80GB", "A100-80GB", "NVIDIA A100-SXM4-80GB", "A100", 81920, SimLinks::kBoardOf8, 60},
    {"A100", "A100-80GB", "NVIDIA A100-SXM4-80GB", "A100", 81920, SimLinks::kBoardOf8, 60},
    {"A100-40GB", "A100-40GB", "NVIDIA A100-SXM4-40GB", "A100", 40960, SimLinks::kBoardOf8, 55},
    {"H100-80GB", "H100-80GB", "NVIDIA H100 80GB HBM3", "H100", 81559, SimLinks::kBoardOf8, 70},
    {"H100", "H100-80GB", "NVIDIA H100 80GB HBM3", "H100", 81559, SimLinks::kBoardOf8, 70},
    {"H200", "H200", "NVIDIA H200", "H200", 143771, SimLinks::kBoardOf8, 75},
    {"L4", "L4", "NVIDIA L4", "L4", 23034, SimLinks::kNone, 16},
    {"T4", "T4", "Tesla T4", "T4", 15360, SimLinks::kNone, 10},
    {"V100", "V100-16GB", "Tesla V100-SXM2-16GB", "V100", 16160, SimLinks::kPairs, 40},
    {"V100-16GB", "V100-16GB", "Tesla V100-SXM2-16GB", "V100", 16160, SimLinks::kPairs, 40},
    {"V100-32GB", "V100-32GB", "Tesla V100-SXM2-32GB", "V100", 32510, SimLinks::kPairs, 40},
    {"A10", "A10", "NVIDIA A10", "A10", 23028, SimLinks::kNone, 20},
    {"A10G", "A10G", "NVIDIA A10G", "A10G", 23028, SimLinks::kNone, 20},
    {"L40S", "L40S", "NVIDIA L40S", "L40S", 46068, SimLinks::kNone, 35},
    {"RTX4090", "RTX4090", "NVIDIA GeForce RTX 4090", "RTX4090", 24564, SimLinks::kNone, 20},
    {"RTX-4090", "RTX4090", "NVIDIA GeForce RTX 4090", "RTX4090", 24564, SimLinks::kNone, 20},
}};

constexpr int64_t kUnknownModelMemoryMib = 16384;
constexpr int kMaxMemoryGb = 1024;
constexpr std::string_view kHelp =
    "; write COUNTxMODEL parts separated by commas, e.g. \"8xA100-80GB\", \"4xT4\" or "
    "\"2xH100-80GB,2xL4\" (known models: A100-80GB, A100-40GB, H100-80GB, H200, L4, T4, V100, "
    "V100-32GB, A10, A10G, L40S, RTX4090; other names get 16GB unless they end in -NGB)";

std::string upper(std::string_view s) {
  std::string out(s);
  for (auto& c : out) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

bool is_digit(char c) {
  return std::isdigit(static_cast<unsigned char>(c)) != 0;
}

const KnownModel* find_known(std::string_view name) {
  std::string key = upper(name);
  for (const auto& known : kKnown) {
    if (known.key == key) return &known;
  }
  return nullptr;
}

// Parses a number of at most 4 digits; -1 when s is not one.
int small_number(std::string_view s) {
  int value = -1;
  if (s.empty() || s.size() > 4) return -1;
  auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  return ec == std::errc() && end == s.data() + s.size() ? value : -1;
}

class Parser {
 public:
  explicit Parser(std::string_view spec) : spec_(spec) {}

  Error fail(const std::string& what) const {
    return invalid("GPU spec \"" + std::string(spec_) + "\": " + what + std::string(kHelp));
  }

  Result<SimGpuGroup> part(std::string_view text) const {
    std::string quoted = "part \"" + std::string(text) + "\"";
    if (text.empty()) return fail("a part is empty");
    std::vector<std::string> mig;
    if (size_t colon = text.find(':'); colon != std::string_view::npos) {
      std::string_view suffix = text.substr(colon + 1);
      text = text.substr(0, colon);
      if (!suffix.starts_with("mig=") || suffix.size() == 4)
        return fail(quoted + ": after ':' write mig=PROFILE+PROFILE..., e.g. mig=3g.40gb+3g.40gb");
      int slices = 0;
      for (size_t start = 4; start <= suffix.size();) {
        size_t plus = std::min(suffix.find('+', start), suffix.size());
        std::string_view profile = suffix.substr(start, plus - start);
        if (mig_profile_slices(profile) < 0)
          return fail(quoted + ": MIG profile \"" + std::string(profile) +
                      "\" is not of the form 1g.10gb (1..7 slices, 1..999 GB)");
        slices += mig_profile_slices(profile);
        mig.emplace_back(profile);
        start = plus + 1;
      }
      if (slices > 7)
        return fail(quoted + ": the MIG devices take " + std::to_string(slices) +
                    " compute slices; a GPU has 7");
    }
    size_t digits = 0;
    while (digits < text.size() && is_digit(text[digits])) ++digits;
    SimGpuGroup group;
    std::string_view model = text;
    if (digits > 0) {
      if (digits == text.size()) return fail(quoted + " has a count but no model");
      if (text[digits] != 'x' && text[digits] != 'X') {
        return fail(quoted + " needs an 'x' between the count and the model");
      }
      group.count = small_number(text.substr(0, digits));
      if (group.count < 1 || group.count > kMaxSimGpus) {
        return fail(quoted + ": count " + std::string(text.substr(0, digits)) +
                    " is out of range 1.." + std::to_string(kMaxSimGpus));
      }
      model = text.substr(digits + 1);
      if (model.empty()) return fail(quoted + " has a count but no model");
    } else if (text[0] == 'x' || text[0] == 'X') {
      return fail(quoted + " has an 'x' but no count before it");
    }
    for (char c : model) {
      if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_' && c != '.') {
        return fail(quoted + ": model \"" + std::string(model) +
                    "\" may only contain letters, digits, '-', '_' and '.'");
      }
    }
    if (model.size() > 40) return fail(quoted + ": model name longer than 40 characters");
    group.mig_profiles = std::move(mig);
    return describe(quoted, model, group);
  }

 private:
  Result<SimGpuGroup> describe(const std::string& quoted, std::string_view model,
                               SimGpuGroup group) const {
    if (const KnownModel* known = find_known(model)) {
      group.spec = known->spec;
      group.product_name = known->product_name;
      group.model = known->model;
      group.memory_mib = known->memory_mib;
      group.links = known->links;
      group.idle_power_w = known->idle_power_w;
      return group;
    }
    std::string_view base = model;
    group.memory_mib = kUnknownModelMemoryMib;
    size_t dash = model.rfind('-');
    std::string suffix = dash == std::string_view::npos ? "" : upper(model.substr(dash + 1));
    if (suffix.size() > 2 && suffix.ends_with("GB") && is_digit(suffix[0])) {
      int gb = small_number(std::string_view(suffix).substr(0, suffix.size() - 2));
      if (gb < 1 || gb > kMaxMemoryGb) {
        return fail(quoted + ": memory " + suffix + " is out of range 1GB.." +
                    std::to_string(kMaxMemoryGb) + "GB");
      }
      base = model.substr(0, dash);
      if (base.empty()) return fail(quoted + " has a memory size but no model");
      group.memory_mib = int64_t{gb} * 1024;
    }
    group.spec = std::string(model);
    group.product_name = std::string(base);
    group.model = std::string(base);
    group.idle_power_w = 25;
    if (const KnownModel* known = find_known(base)) {  // e.g. "H100-94GB"
      group.spec = std::string(known->model) + "-" + suffix;
      group.product_name = "NVIDIA " + group.spec;
      group.model = known->model;
      group.links = known->links;
      group.idle_power_w = known->idle_power_w;
    }
    return group;
  }

  std::string_view spec_;
};

}  // namespace

int mig_profile_slices(std::string_view profile) {
  // "Ng.Mgb": N one digit 1..7, M 1..3 digits.
  if (profile.size() < 6 || profile.size() > 9 || profile[1] != 'g' || profile[2] != '.' ||
      !profile.ends_with("gb") || profile[0] < '1' || profile[0] > '7')
    return -1;
  int gb = small_number(profile.substr(3, profile.size() - 5));
  return gb >= 1 && gb <= 999 ? profile[0] - '0' : -1;
}

int64_t mig_profile_memory_mib(std::string_view profile) {
  if (mig_profile_slices(profile) < 0) return -1;
  return int64_t{small_number(profile.substr(3, profile.size() - 5))} * 1024;
}

Result<std::vector<SimGpuGroup>> parse_sim_spec(std::string_view spec) {
  if (trim(spec).empty()) spec = kDefaultSimSpec;
  Parser parser(spec);
  std::vector<SimGpuGroup> groups;
  int total = 0;
  size_t start = 0;
  while (true) {
    size_t comma = spec.find(',', start);
    size_t end = comma == std::string_view::npos ? spec.size() : comma;
    auto group = parser.part(trim(spec.substr(start, end - start)));
    if (!group.ok()) return group.error();
    total += group->count;
    groups.push_back(std::move(group).value());
    if (comma == std::string_view::npos) break;
    start = comma + 1;
  }
  if (total > kMaxSimGpus) {
    return parser.fail(std::to_string(total) +
                       " GPUs in all, but a simulated machine has at most " +
                       std::to_string(kMaxSimGpus));
  }
  // A node offers at most 64 devices, whole GPUs and MIG devices together.
  int devices = 0;
  for (const auto& g : groups)
    devices += g.count * std::max<int>(1, static_cast<int>(g.mig_profiles.size()));
  if (devices > kMaxSimGpus)
    return parser.fail(std::to_string(devices) +
                       " GPUs and MIG devices in all, but a machine offers at most " +
                       std::to_string(kMaxSimGpus));
  return groups;
}

std::string format_sim_spec(const std::vector<SimGpuGroup>& groups) {
  std::string out;
  for (const auto& group : groups) {
    if (!out.empty()) out += ",";
    out += std::to_string(group.count) + "x" + group.spec;
    for (size_t i = 0; i < group.mig_profiles.size(); ++i)
      out += (i == 0 ? ":mig=" : "+") + group.mig_profiles[i];
  }
  return out;
}

}  // namespace gpucloud::gpu
