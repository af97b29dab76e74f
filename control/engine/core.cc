#include "control/engine/core.h"

#include <cmath>

#include "control/engine/sync.h"

namespace gw::cp::engine {
namespace {

// Timers must advance: a zero interval would make tick() spin. The incarnation
// bounds must leave room for refutation: a zero jump would freeze every member,
// and one near UINT64_MAX would leave no believable incarnation at all.
EngineConfig sanitized(EngineConfig c) {
  for (std::uint64_t* d : {&c.probe_interval_ns, &c.probe_timeout_ns, &c.gossip_interval_ns, &c.push_pull_interval_ns,
                           &c.sync_timeout_ns, &c.join_retry_min_ns})
    if (*d == 0) *d = kMillisecond;
  c.join_retry_max_ns = std::max(c.join_retry_max_ns, c.join_retry_min_ns);
  if (c.max_incarnation_jump == 0) c.max_incarnation_jump = EngineConfig{}.max_incarnation_jump;
  c.max_incarnation_jump = std::min<std::uint64_t>(c.max_incarnation_jump, 1ULL << 63);
  c.initial_incarnation = std::min(c.initial_incarnation, UINT64_MAX - c.max_incarnation_jump);
  return c;
}

// ceil(log10(n + 1)): memberlist's retransmit scale.
std::uint32_t retransmit_scale(std::size_t live) {
  return static_cast<std::uint32_t>(std::ceil(std::log10(static_cast<double>(live) + 1.0)));
}

}  // namespace

Core::Core(EngineConfig c, std::uint64_t seed, std::uint64_t now_ns)
    : config(sanitized(std::move(c))),
      rng(seed),
      table(std::max<std::uint32_t>(config.max_members, 1), config.max_graveyard, config.tombstone_ttl_ns,
            config.graveyard_ttl_ns),
      routes(seed, std::max<std::uint32_t>(config.max_members, 1)),
      budget(config.egress_bytes_per_sec, config.sync_timeout_ns, now_ns) {
  Member me;
  me.name = config.name;
  self_name = me.name;
  me.incarnation = config.initial_incarnation;
  me.set_profile(config.addr, tag_bytes(config.tags) <= config.max_tag_bytes ? config.tags : std::vector<Tag>{},
                 config.protocol_version, config.build.size() <= kMaxBuildBytes ? config.build : std::string{});
  me.state_change_ns = now_ns;
  table.insert(std::move(me));
}

std::uint32_t Core::retransmit_limit() const {
  return std::max<std::uint32_t>(1, config.retransmit_mult * retransmit_scale(table.live_count()));
}

std::uint32_t Core::suspicion_retransmit_limit() const {
  return std::max<std::uint32_t>(1, config.suspicion_retransmit_mult * retransmit_scale(table.live_count()));
}

std::uint64_t Core::sync_interval() const { return push_pull_scale(config.push_pull_interval_ns, table.live_count()); }

void Core::emit(EventKind kind, const Member& m) {
  if (events.size() >= config.max_events) {
    events.pop_front();
    ++counters.events_drop_full;
  }
  events.push_back(MemberEvent{kind, m.name, m.addr(), m.incarnation, m.tags()});
}

}  // namespace gw::cp::engine
