// Fuzz target: an authenticated payload decoded and handed to the membership
// engine, as the control lcore does. The input's first byte picks the
// sender, the rest is the Compound. Invariants: no crash; the member table,
// broadcast queue, outbox and events stay within their configured bounds;
// whatever the engine sends encodes and decodes again.
#include <cstdint>
#include <cstdlib>
#include <span>

#include "control/codec.h"
#include "control/engine/engine.h"

namespace {

using gw::cp::engine::Address;
using gw::cp::engine::Engine;
using gw::cp::engine::EngineConfig;

constexpr std::uint64_t kSecond = 1'000'000'000ULL;

EngineConfig small_config() {
  EngineConfig c = EngineConfig::lan();
  c.name = "fuzz-self";
  c.addr = Address{{10, 0, 0, 1}, 7946};
  c.max_members = 64;
  c.max_broadcasts = 32;
  c.max_events = 64;
  c.max_outbox = 64;
  return c;
}

void check(bool ok) {
  if (!ok) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 1) return 0;
  const auto decoded = gw::cp::decode(std::span<const std::uint8_t>(data + 1, size - 1));
  if (!decoded.ok()) return 0;

  const EngineConfig cfg = small_config();
  Engine engine(cfg, /*seed=*/data[0], /*now_ns=*/kSecond);
  const Address from{{10, 0, 0, static_cast<std::uint8_t>(2 + data[0] % 8)}, 7946};
  std::uint64_t now = kSecond;
  for (int round = 0; round < 3; ++round) {
    engine.handle(from, decoded.messages, now);
    now += cfg.probe_interval_ns;
    engine.tick(now);
    check(engine.table().size() <= cfg.max_members);
    check(engine.broadcasts().size() <= cfg.max_broadcasts);
    const auto out = engine.take_outbox();
    check(out.size() <= cfg.max_outbox);
    for (const auto& o : out) {
      const auto again = gw::cp::decode(gw::cp::encode(o.messages));
      check(again.ok());
    }
    check(engine.take_events().size() <= cfg.max_events);
  }
  return 0;
}
