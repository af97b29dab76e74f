// Fuzz target: the Prometheus endpoint's request parsing (issue 51 item 9;
// control/gateway/prometheus_server.cc, parse_http_request). Any bytes give
// an answer, never a crash; /metrics is served only to a GET or HEAD of it.
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "control/gateway/metrics.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view head(reinterpret_cast<const char*>(data), size);
  const gw::cp::HttpAsk a = gw::cp::parse_http_request(head);
  if (a.what == gw::cp::HttpAsk::What::kMetrics && !(head.starts_with("GET /metrics") || head.starts_with("HEAD /metrics"))) {
    std::abort();
  }
  if (a.head_only && !head.starts_with("HEAD")) std::abort();
  return 0;
}
