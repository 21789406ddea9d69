#include "model/interruption.h"

#include <nlohmann/json.hpp>

#include "model/json_fields.h"

namespace gpucloud {

namespace {
constexpr int64_t kLatestDeadlineMs = 253'402'300'799'000;  // 9999-12-31T23:59:59Z
}

nlohmann::json interrupt_notice_to_json(const InterruptNotice& n) {
  return {{"cause", n.cause},
          {"deadline", n.deadline_ms / 1000},
          {"deadline_ms", n.deadline_ms},
          {"message", n.message}};
}

Result<InterruptNotice> interrupt_notice_from_json(const nlohmann::json& j) {
  try {
    InterruptNotice n;
    n.cause = j.at("cause").get<std::string>();
    n.deadline_ms = json_whole_at(j, "deadline_ms", 0, kLatestDeadlineMs);
    n.message = j.value("message", "");
    if (n.cause.empty() || n.cause.size() > 32)
      return invalid("interrupt notice: cause must be 1..32 characters");
    if (n.message.size() > 1024) return invalid("interrupt notice: message over 1,024 characters");
    return n;
  } catch (const JsonFieldError& e) {
    return invalid(std::string("malformed interrupt notice: ") + e.what());
  } catch (const nlohmann::json::exception& e) {
    return invalid(std::string("malformed interrupt notice: ") + e.what());
  }
}

}  // namespace gpucloud
