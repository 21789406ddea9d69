// Canonical GPU model names and GPU model constraints ("A100|H100", "A100-80GB").
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace gpucloud {

/// The canonical short model of a product name: "NVIDIA A100-SXM4-80GB" -> "A100",
/// "Tesla T4" -> "T4", "NVIDIA GeForce RTX 4090" -> "RTX4090". Names that are not
/// recognisable NVIDIA product names (a trace's "G2") are returned unchanged.
std::string canonical_gpu_model(std::string_view product_name);

/// Whether a GPU with this canonical model and memory satisfies a constraint: a '|'-separated
/// list of alternatives, each a model ("A100", case-insensitive) or a model with memory
/// ("A100-80GB", matched within 7 % as drivers report slightly less than the label).
/// A MIG device's model is its GPU's model and its profile ("A100/1g.10gb"): only alternatives
/// that name the profile match it ("A100/1g.10gb" or "A100-80GB/1g.10gb"), so a job asking for
/// a GPU never gets a slice. An empty constraint matches every whole GPU.
bool gpu_model_matches(std::string_view constraint, std::string_view model, int64_t memory_mib);

}  // namespace gpucloud
