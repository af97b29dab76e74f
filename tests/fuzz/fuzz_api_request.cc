// Fuzz target: one control API request line (control/api/request.h), as a
// local client may send it. parse_request must never throw or crash, returns
// either a request or an error, and whatever it accepts is within the limits
// the gateway relies on.
#include <cstdint>
#include <cstdlib>
#include <string_view>
#include <variant>

#include "control/api/request.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view line(reinterpret_cast<const char*>(data), size);
  const gw::cp::api::ParseResult r = gw::cp::api::parse_request(line);
  if (r.request.has_value() == !r.error.empty()) std::abort();  // exactly one of the two
  if (!r.request) return 0;
  if (const auto* t = std::get_if<gw::cp::api::TagsSetRequest>(&*r.request)) {
    if (t->tags.empty() || t->tags.size() > 32) std::abort();
    for (const auto& [k, v] : t->tags) {
      if (k.empty() || k.size() > 64 || v.size() > 256) std::abort();
    }
  }
  if (const auto* j = std::get_if<gw::cp::api::JoinRequest>(&*r.request)) {
    if (j->port == 0 || j->ip.empty()) std::abort();
  }
  // Replies quote what they echo: always one line.
  if (gw::cp::api::error_reply(r.error.empty() ? line : r.error).find('\n') != std::string::npos) std::abort();
  return 0;
}
