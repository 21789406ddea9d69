#include "exec/process/bpf_devices.h"

#include <fcntl.h>
#include <linux/bpf.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>

#include "exec/process/cgroup.h"

namespace gpucloud::exec {
namespace {

static_assert(sizeof(BpfInstruction) == sizeof(bpf_insn), "BpfInstruction must match bpf_insn");

constexpr uint8_t kR0 = 0, kR1 = 1, kR2 = 2, kR3 = 3, kR4 = 4;

BpfInstruction load_u32(uint8_t dst, uint8_t src, int16_t offset) {
  return {BPF_LDX | BPF_MEM | BPF_W, static_cast<uint8_t>(dst | (src << 4)), offset, 0};
}
BpfInstruction and_imm32(uint8_t dst, int32_t imm) {
  return {BPF_ALU | BPF_AND | BPF_K, dst, 0, imm};
}
BpfInstruction mov_imm(uint8_t dst, int32_t imm) {
  return {BPF_ALU64 | BPF_MOV | BPF_K, dst, 0, imm};
}
BpfInstruction jump_if(uint8_t op, uint8_t dst, int32_t imm, int16_t offset) {
  return {static_cast<uint8_t>(BPF_JMP | op | BPF_K), dst, offset, imm};
}
BpfInstruction exit_insn() {
  return {BPF_JMP | BPF_EXIT, 0, 0, 0};
}

long bpf(int cmd, bpf_attr& attr) {
  return ::syscall(__NR_bpf, cmd, &attr, sizeof attr);
}

// Refusals that mean "this host does not let the agent confine devices with BPF" (not root, no
// BPF or no cgroup device programs in the kernel, a parent's exclusive program): the executor
// then runs jobs unconfined and warns, as where cgroups are not writable.
ErrorCode bpf_refusal(int err) {
  return err == EPERM || err == EACCES || err == EINVAL || err == ENOSYS || err == EOPNOTSUPP
             ? ErrorCode::kPermissionDenied
             : ErrorCode::kInternal;
}

}  // namespace

std::vector<BpfInstruction> gpu_device_program(const GpuDeviceAccess& access) {
  std::vector<int> gpus = access.gpu_minors;
  gpus.insert(gpus.end(), std::begin(kNvidiaControlMinors), std::end(kNvidiaControlMinors));
  // A tiny assembler: jumps name a label, resolved once every instruction is laid out.
  enum Label { kNone, kGpu, kCaps, kDeny, kAllow };
  std::vector<std::pair<BpfInstruction, Label>> code;
  std::map<Label, int> at;
  auto emit = [&](BpfInstruction insn, Label to = kNone) { code.push_back({insn, to}); };
  auto mark = [&](Label label) { at[label] = static_cast<int>(code.size()); };
  // r1: struct bpf_cgroup_dev_ctx {u32 access_type (access << 16 | type); u32 major; u32 minor}.
  emit(load_u32(kR2, kR1, 0));
  emit(and_imm32(kR2, 0xffff));
  emit(jump_if(BPF_JNE, kR2, BPF_DEVCG_DEV_CHAR, 0), kAllow);
  emit(load_u32(kR3, kR1, 4));
  emit(load_u32(kR4, kR1, 8));
  emit(jump_if(BPF_JEQ, kR3, kNvidiaDeviceMajor, 0), kGpu);
  if (access.caps_major >= 0) emit(jump_if(BPF_JEQ, kR3, access.caps_major, 0), kCaps);
  emit({BPF_JMP | BPF_JA, 0, 0, 0}, kAllow);  // any other device: as the parents allow
  mark(kGpu);
  for (int minor : gpus) emit(jump_if(BPF_JEQ, kR4, minor, 0), kAllow);
  emit({BPF_JMP | BPF_JA, 0, 0, 0}, kDeny);
  mark(kCaps);
  if (access.caps_major >= 0)
    for (int minor : access.caps_minors) emit(jump_if(BPF_JEQ, kR4, minor, 0), kAllow);
  mark(kDeny);
  emit(mov_imm(kR0, 0));
  emit(exit_insn());
  mark(kAllow);
  emit(mov_imm(kR0, 1));
  emit(exit_insn());
  std::vector<BpfInstruction> program;
  for (size_t i = 0; i < code.size(); ++i) {
    BpfInstruction insn = code[i].first;
    if (code[i].second != kNone)
      insn.offset = static_cast<int16_t>(at[code[i].second] - static_cast<int>(i) - 1);
    program.push_back(insn);
  }
  return program;
}

Status attach_gpu_device_program(const std::string& cgroup, const GpuDeviceAccess& access) {
  std::vector<BpfInstruction> program = gpu_device_program(access);
  static const char kLicense[] = "GPL";
  std::string log(64 * 1024, '\0');
  bpf_attr load{};
  load.prog_type = BPF_PROG_TYPE_CGROUP_DEVICE;
  load.insns = reinterpret_cast<uint64_t>(program.data());
  load.insn_cnt = static_cast<uint32_t>(program.size());
  load.license = reinterpret_cast<uint64_t>(kLicense);
  load.log_buf = reinterpret_cast<uint64_t>(log.data());
  load.log_size = static_cast<uint32_t>(log.size());
  load.log_level = 1;
  int prog = static_cast<int>(bpf(BPF_PROG_LOAD, load));
  if (prog < 0) {
    int err = errno;
    std::string verifier(log.c_str());
    return Error{bpf_refusal(err),
                 std::string("cannot load the GPU device program: ") + std::strerror(err) +
                     (verifier.empty() ? "" : " (verifier: " + verifier.substr(0, 400) + ")")};
  }
  int dir = ::open(cgroup.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dir < 0) {
    int err = errno;
    ::close(prog);
    return internal("cannot open the cgroup " + cgroup + ": " + std::strerror(err));
  }
  bpf_attr attach{};
  attach.target_fd = static_cast<uint32_t>(dir);
  attach.attach_bpf_fd = static_cast<uint32_t>(prog);
  attach.attach_type = BPF_CGROUP_DEVICE;
  attach.attach_flags = BPF_F_ALLOW_MULTI;
  long rc = bpf(BPF_PROG_ATTACH, attach);
  int err = errno;
  ::close(dir);
  ::close(prog);  // the attachment keeps the program
  if (rc != 0)
    return Error{bpf_refusal(err),
                 "cannot attach the GPU device program to " + cgroup + ": " + std::strerror(err)};
  return {};
}

bool gpu_device_programs_allowed() {
  std::vector<BpfInstruction> program = gpu_device_program({});
  static const char kLicense[] = "GPL";
  bpf_attr load{};
  load.prog_type = BPF_PROG_TYPE_CGROUP_DEVICE;
  load.insns = reinterpret_cast<uint64_t>(program.data());
  load.insn_cnt = static_cast<uint32_t>(program.size());
  load.license = reinterpret_cast<uint64_t>(kLicense);
  int prog = static_cast<int>(bpf(BPF_PROG_LOAD, load));
  if (prog < 0) return false;
  ::close(prog);
  return true;
}

std::optional<std::string> find_unified_cgroup_root(const std::string& mounts_path) {
  std::ifstream in(mounts_path);
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string device, mountpoint, type;
    if (fields >> device >> mountpoint >> type && type == "cgroup2") return mountpoint;
  }
  return std::nullopt;
}

}  // namespace gpucloud::exec
