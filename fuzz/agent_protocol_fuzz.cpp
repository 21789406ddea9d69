// The agent protocol as the server and the agent read it from the network. The first byte picks
// the message (poll request, poll response, node registration, allocation, replica event); the
// rest is its JSON body. A message that is accepted must read back the same after encoding.
#include <cstddef>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string_view>

#include "fuzz_check.h"
#include "model/agent_protocol.h"
#include "model/json_limits.h"
#include "model/node_json.h"

using namespace gpucloud;
using nlohmann::json;

namespace {

template <typename T, typename From, typename To>
void check(const json& doc, From from, To to, const char* what) {
  Result<T> r = from(doc);
  if (!r) {
    fuzz::require_user_error(r.error(), what);
    return;
  }
  json out = to(*r);
  Result<T> again = from(out);
  fuzz::require(again.ok(), what, again.ok() ? "" : "round trip refused: " + again.error().message);
  fuzz::require(to(*again) == out, what, "round trip changed the message");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  std::string_view text(reinterpret_cast<const char*>(data) + 1, size - 1);
  auto doc = parse_json_limited(text, "agent message");
  if (!doc) {
    fuzz::require_user_error(doc.error(), "parse_json_limited");
    return 0;
  }
  switch (data[0] % 5) {
    case 0:
      check<PollRequest>(*doc, poll_request_from_json, poll_request_to_json, "poll request");
      break;
    case 1:
      check<PollResponse>(*doc, poll_response_from_json, poll_response_to_json, "poll response");
      break;
    case 2:
      check<NodeInfo>(*doc, node_info_from_json, node_info_to_json, "node registration");
      break;
    case 3:
      check<Allocation>(*doc, allocation_from_json, allocation_to_json, "allocation");
      break;
    case 4:
      check<ReplicaEvent>(*doc, replica_event_from_json, replica_event_to_json, "replica event");
      break;
  }
  return 0;
}
