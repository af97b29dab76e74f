// Random engine messages of every type, every field length and every varint
// width, for the codec's and the size model's property tests.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "control/engine/messages.h"
#include "control/engine/rng.h"

namespace gw::cp::engine::testing {

inline std::string random_string(Rng& rng, std::size_t max_len) {
  std::string s(static_cast<std::size_t>(rng.uniform(max_len + 1)), 'x');
  for (char& c : s) c = static_cast<char>('a' + rng.uniform(26));
  return s;
}

// Empty (not given), IPv4 or IPv6, any port.
inline Address random_addr(Rng& rng) {
  Address a;
  const std::uint64_t kind = rng.uniform(3);
  a.ip.resize(kind == 0 ? 0 : (kind == 1 ? 4 : 16));
  for (auto& b : a.ip) b = static_cast<std::uint8_t>(rng.next());
  a.port = static_cast<std::uint16_t>(rng.uniform(65536));
  return a;
}

inline std::uint64_t random_u64(Rng& rng) {
  // Mix small and huge values so every varint length occurs (zero included).
  const std::uint64_t v = rng.next();
  const std::uint64_t shift = rng.uniform(65);
  return shift == 64 ? 0 : v >> shift;
}

inline MemberState random_state(Rng& rng) {
  MemberState s{random_string(rng, 40), random_addr(rng), random_u64(rng), static_cast<MemberStatus>(rng.uniform(4)), {},
                static_cast<std::uint32_t>(random_u64(rng))};
  for (std::uint64_t i = rng.uniform(4); i > 0; --i)
    s.tags.push_back({random_string(rng, 20), random_string(rng, 200)});
  return s;
}

inline std::vector<Release> random_releases(Rng& rng) {
  std::vector<Release> out;
  for (std::uint64_t i = rng.uniform(4); i > 0; --i)
    out.push_back(Release{static_cast<std::uint32_t>(random_u64(rng)), random_string(rng, 80)});
  return out;
}

inline Message random_message(Rng& rng, MessageType type) {
  const auto u32 = [&] { return static_cast<std::uint32_t>(random_u64(rng)); };
  const auto flag = [&] { return rng.uniform(2) == 1; };
  switch (type) {
    case MessageType::kPing:
      return Ping{u32(), random_string(rng, 40), random_string(rng, 40), random_addr(rng), random_u64(rng), flag()};
    case MessageType::kAck:
      return Ack{u32(), random_string(rng, 300), flag() ? random_string(rng, 80) : std::string()};
    case MessageType::kIndirectPing:
      return IndirectPing{u32(),  random_string(rng, 40), random_addr(rng),
                          flag(), random_string(rng, 40), random_addr(rng)};
    case MessageType::kNack:
      return Nack{u32(), random_string(rng, 40)};
    case MessageType::kAlive: {
      Alive a{random_u64(rng), random_string(rng, 40), random_addr(rng), {}, u32(), random_string(rng, 80)};
      for (std::uint64_t i = rng.uniform(5); i > 0; --i)
        a.tags.push_back({random_string(rng, 20), random_string(rng, 200)});
      return a;
    }
    case MessageType::kSuspect:
      return Suspect{random_u64(rng), random_string(rng, 40), random_string(rng, 40)};
    case MessageType::kDead:
      return Dead{random_u64(rng), random_string(rng, 40), random_string(rng, 40)};
    case MessageType::kLeave:
      return Leave{random_u64(rng), random_string(rng, 40)};
    case MessageType::kSyncRequest: {
      SyncRequest s{u32(), random_string(rng, 40), flag(), u32(), u32(), {}, flag() ? rng.next() : 0, {}, u32()};
      for (std::uint64_t i = rng.uniform(30); i > 0; --i) s.members.push_back(random_state(rng));
      for (std::uint64_t i = rng.uniform(3) == 0 ? rng.uniform(300) : 0; i > 0; --i) s.buckets.push_back(u32());
      s.releases = random_releases(rng);
      return s;
    }
    case MessageType::kSyncResponse: {
      SyncResponse s{u32(), random_string(rng, 40), u32(), u32(), {}, flag() ? rng.next() : 0, {}};
      for (std::uint64_t i = rng.uniform(30); i > 0; --i) s.members.push_back(random_state(rng));
      for (std::uint64_t i = rng.uniform(3) == 0 ? rng.uniform(300) : 0; i > 0; --i) s.buckets.push_back(u32());
      s.releases = random_releases(rng);
      return s;
    }
    case MessageType::kUserData:
      return UserData{random_string(rng, 40), random_string(rng, 3000)};
  }
  return UserData{};
}

inline Message random_message(Rng& rng) {
  return random_message(rng, static_cast<MessageType>(rng.uniform(kMessageTypes)));
}

}  // namespace gw::cp::engine::testing
