// Parsing of simulated-GPU specs such as "8xA100-80GB", "4xT4" or "2xH100-80GB,2xL4".
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/result.h"

namespace gpucloud::gpu {

/// The simulated machine when no spec is given.
inline constexpr std::string_view kDefaultSimSpec = "8xA100-80GB";
/// The most GPUs a simulated machine may have, in one part or in all parts together.
inline constexpr int kMaxSimGpus = 64;

/// How the GPUs of one part of a spec are linked to each other.
enum class SimLinks {
  kNone,      // PCIe only (T4, L4, A10, unknown models)
  kPairs,     // NVLink bridges between GPUs 0-1, 2-3, ... (V100)
  kBoardOf8,  // SXM boards of up to 8 GPUs, NVLink/NVSwitch full mesh (A100, H100, H200)
};

/// One part of a spec: `count` identical GPUs.
struct SimGpuGroup {
  int count = 1;
  std::string spec;          // the part as it reads in a normalised spec, e.g. "A100-80GB"
  std::string product_name;  // e.g. "NVIDIA A100-SXM4-80GB"; the model itself when unknown
  std::string model;         // canonical short model, e.g. "A100"
  int64_t memory_mib = 0;
  SimLinks links = SimLinks::kNone;
  int idle_power_w = 0;
  // MIG devices each GPU of the part is split into ("3g.40gb"), in order; empty: MIG off.
  std::vector<std::string> mig_profiles;
};

/// The memory of a MIG profile "Ng.Mgb" (M GiB), or -1 when the text is not such a profile
/// (N 1..7, M 1..999).
int64_t mig_profile_memory_mib(std::string_view profile);
/// The compute slices of a MIG profile ("3g.40gb" -> 3), or -1.
int mig_profile_slices(std::string_view profile);

/// Parses a spec: comma-separated parts "COUNTxMODEL" or "MODEL" (count 1), each optionally
/// followed by ":mig=PROFILE+PROFILE..." to split every GPU of the part into MIG devices
/// (e.g. "2xA100-80GB:mig=3g.40gb+3g.40gb"; at most 7 compute slices per GPU). Models are matched
/// case-insensitively against the known ones (A100-80GB, A100-40GB, H100-80GB, H200, L4, T4,
/// V100, V100-16GB, V100-32GB, A10, A10G, L40S, RTX4090; "A100" and "H100" mean their 80GB
/// versions). Other names are kept as they are (a trace's "G2"), with 16 GiB of memory unless
/// they end in "-NGB". An empty spec means kDefaultSimSpec.
Result<std::vector<SimGpuGroup>> parse_sim_spec(std::string_view spec);

/// The normalised spec of parsed groups, e.g. "2xH100-80GB,2xL4".
std::string format_sim_spec(const std::vector<SimGpuGroup>& groups);

}  // namespace gpucloud::gpu
