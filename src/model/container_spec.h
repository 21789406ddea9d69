// The container part of a job spec (docs/containers.md): the image a job runs in and how.
// A spec without an image runs its command as a host process; the other fields need an image.
#pragma once

#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "common/result.h"

namespace gpucloud {

/// When the node pulls the image: podman's --pull always, missing or never.
enum class PullPolicy { kIfNotPresent, kAlways, kNever };

const char* to_string(PullPolicy p);

/// A host path or a named volume mounted into the container.
struct ContainerMount {
  std::string source;  // an absolute host path, or a volume name (letters, digits, '_.-')
  std::string target;  // an absolute path inside the container
  bool read_only = false;

  bool operator==(const ContainerMount&) const = default;
};

/// What a container job adds to its spec. image "" = not a container job.
struct ContainerSpec {
  std::string image;                    // e.g. nvidia/cuda:12.4.1-base-ubuntu22.04
  std::vector<std::string> entrypoint;  // replaces the image's ENTRYPOINT; empty = the image's
  std::vector<ContainerMount> mounts;
  int64_t shm_size_mib = 0;  // /dev/shm; 0 = podman's default (64 MiB)
  PullPolicy pull_policy = PullPolicy::kIfNotPresent;
  // The name of a registry credentials file on the node (<agent --registry-auth-dir>/NAME.json);
  // never the credentials themselves.
  std::string registry_auth;

  bool operator==(const ContainerSpec&) const = default;
};

/// Limits of the container fields.
struct ContainerSpecLimits {
  static constexpr size_t kMaxImageLength = 512;
  static constexpr size_t kMaxMounts = 32;
  static constexpr size_t kMaxPathLength = 4096;
  static constexpr size_t kMaxEntrypointArgs = 64;
  static constexpr size_t kMaxEntrypointBytes = 16 * 1024;
  static constexpr size_t kMaxNameLength = 64;
  static constexpr int64_t kMaxShmSizeMib = 64 * 1024;
};

/// Whether `key` is one of the container fields of a job spec.
bool is_container_field(const std::string& key);

/// Reads the container field `key` of a job spec into spec; a wrong type or value is
/// kInvalidArgument naming the field.
Status read_container_field(const std::string& key, const nlohmann::json& v, ContainerSpec& spec);

/// Checks the fields' values and that they come with an image.
Status validate_container_spec(const ContainerSpec& spec);

/// Adds the container fields of spec (none without an image) to the JSON object j.
void container_spec_to_json(const ContainerSpec& spec, nlohmann::json& j);

/// Parses "SRC:DST" or "SRC:DST:ro" (`gpucloud run --mount`).
Result<ContainerMount> parse_mount_flag(const std::string& text);

/// Whether name is a plain name: 1..64 letters, digits, '_', '-' or '.', not starting with '.'
/// or '-' (a registry_auth file name or a volume name).
bool is_plain_name(const std::string& name);

}  // namespace gpucloud
