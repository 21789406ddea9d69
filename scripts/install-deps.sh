#!/usr/bin/env bash
# Installs what gpucloud needs to build and test, from Debian 12 packages only.
# Idempotent: does nothing when everything is present. Used by `make run`, `make test` and CI.
set -euo pipefail

packages=(
  g++ cmake ninja-build ccache pkg-config make
  libboost-dev nlohmann-json3-dev libyaml-cpp-dev libcli11-dev libspdlog-dev libfmt-dev
  libsqlite3-dev libssl-dev libhwloc-dev
  libgoogle-perftools-dev  # tcmalloc, the gpucloud binary's allocator (CMakeLists.txt)
  prometheus-cpp-dev  # src/metrics: counters, gauges, histograms
  prometheus  # tests: a real Prometheus scrapes `gpucloud dev` (tests/integration/dev_prometheus_test.cpp)
  libgtest-dev libgmock-dev libbenchmark-dev
  clang libclang-rt-14-dev  # fuzz/: clang++ -fsanitize=fuzzer,address,undefined
  iproute2 procps
  python3  # tests: a checkpointing job (tests/integration/dev_interruptions_test.cpp)
  libfaketime  # tests: a wall clock set to a chosen moment, e.g. a month end (dev_budget_test.cpp)
  # Container jobs (docs/containers.md): podman with runc (crun refuses hybrid cgroups),
  # catatonit as the containers' init (it passes SIGTERM on to the job), and busybox-static,
  # the root of the tests' image (tests/integration/container_image.cpp).
  podman runc catatonit busybox-static
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "installing missing packages: ${missing[*]}"
sudo=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "error: need root (or sudo) to install: ${missing[*]}" >&2; exit 1; }
  sudo="sudo"
fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -q
$sudo apt-get install -y -q --no-install-recommends "${missing[@]}"
