// Fuzz target: the ladder's state tables driven by arbitrary operation
// sequences (issue 17): the replay table (dataplane/replay.h) and the
// failed-header set, each against a plain shadow model.
//
// Invariants beyond "no crash":
//   - the replay table never holds more than its capacity, and refuses a
//     new sender only when it is full (of windows no older than it) or its
//     source used its share;
//   - at most once (issue 51: whatever rebases, evictions and floors did):
//     a datagram (epoch, counter, timestamp) it accepted is never accepted
//     again while its timestamp is within the window of now; commit()
//     succeeds exactly when check() said fresh;
//   - a window is only ever dropped by age() once its newest datagram is
//     stale, or by an eviction (counted);
//   - stamps go back in time too (a clock stepped back): still at most once.
//   - FailedHeaders never claims a nonce that was not added;
//   - the transmit MAC table (dataplane/neighbors.h; the same bytes read as
//     pin/learn/hint/lookup operations): a pinned address always yields its
//     pinned MAC; otherwise a MAC is returned only if it was learned for
//     exactly that (IP, port) last, or (hints allowed) offered as an ARP hint
//     for that IP; never a non-unicast MAC, never one learned for another port.
#include <array>
#include <cstdint>
#include <cstdlib>
#include <map>
#include <set>
#include <tuple>
#include <utility>

#include "dataplane/neighbors.h"
#include "dataplane/replay.h"

namespace {

void check(bool ok) {
  if (!ok) std::abort();
}

gw::dp::Endpoint endpoint(std::uint8_t host, std::uint16_t port) {
  gw::dp::Endpoint e;
  e.ip = {10, 0, 0, host};
  e.ip_len = 4;
  e.port = port;
  return e;
}

void neighbors_ops(const std::uint8_t* data, std::size_t size) {
  gw::dp::Neighbors n;
  const bool hints = (data[0] & 0x80) != 0;
  n.allow_hints(hints);
  using Mac = gw::dp::Neighbors::Mac;
  std::map<std::uint8_t, Mac> pinned;
  std::map<std::pair<std::uint8_t, std::uint16_t>, Mac> learned;  // last learned per endpoint
  std::map<std::uint8_t, std::set<Mac>> offered;                  // hints offered per IP
  const auto unicast = [](const Mac& m) { return (m[0] & 1) == 0; };
  for (std::size_t i = 1; i + 3 <= size; i += 3) {
    const std::uint8_t host = data[i + 1] % 8;
    const auto port = static_cast<std::uint16_t>(7946 + data[i + 2] % 4);
    const Mac mac = {static_cast<std::uint8_t>(0x02 | (data[i + 2] >> 7)), 0, 0, 0, 0,
                     static_cast<std::uint8_t>(1 + (data[i + 2] >> 2) % 8)};
    switch (data[i] % 4) {
      case 0:
        if (n.pin(endpoint(host, 0), mac.data())) pinned[host] = mac;
        check(n.pinned() == pinned.size());
        break;
      case 1:
        n.learn(endpoint(host, port), mac.data());
        if (unicast(mac)) learned[{host, port}] = mac;
        break;
      case 2:
        if (n.hint(endpoint(host, 0), mac.data())) {
          check(hints && unicast(mac) && pinned.count(host) == 0);
          offered[host].insert(mac);
        }
        break;
      default: {
        Mac got{};
        const bool known = n.lookup(endpoint(host, port), &got);
        if (pinned.count(host) != 0) {
          check(known && got == pinned[host]);
          break;
        }
        if (!known) break;
        check(unicast(got));
        const auto l = learned.find({host, port});
        const bool was_learned = l != learned.end() && l->second == got;
        const bool was_hint = hints && offered[host].count(got) != 0;
        check(was_learned || was_hint);
        break;
      }
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < 1) return 0;
  neighbors_ops(data, size);
  const std::size_t capacity = 1 + data[0] % 16;
  constexpr std::uint32_t kWindow = 5;
  gw::dp::ReplayTable t(capacity, 7, kWindow, 1 + data[0] / 16 % 4);
  gw::dp::FailedHeaders failed(9);
  // Every datagram accepted: (epoch, counter, ts).
  std::set<std::tuple<std::uint64_t, std::uint32_t, std::uint32_t>> accepted;
  std::set<std::pair<std::uint64_t, std::uint32_t>> added;
  std::uint32_t now = 1000;
  for (std::size_t i = 1; i + 3 <= size; i += 3) {
    const std::uint8_t op = data[i] % 5;
    const std::uint64_t epoch = data[i + 1] % 24;
    const std::uint32_t counter = data[i + 2] % 64 + (data[i] & 0x80 ? 0xFFFFFF00u : 0);
    const gw::dp::ReplayKey k{1, epoch};
    gw::dp::SourceAddress src;
    src.ip_len = 4;
    src.ip[3] = static_cast<std::uint8_t>(data[i + 1] % 3);
    switch (op) {
      case 0: {  // a datagram stamped now +- 3 (as the ladder would let through)
        const std::uint32_t ts = now - 3 + data[i + 2] % 7;
        const gw::dp::ReplayCheck c = t.check(k, counter, ts, &src);
        const bool seen = accepted.count({epoch, counter, ts}) != 0;
        if (seen) check(c != gw::dp::ReplayCheck::kFresh);
        const std::size_t size_before = t.size();
        const bool had = t.find(k) != nullptr;
        const bool ok = t.commit(k, counter, ts, &src);
        check(ok == (c == gw::dp::ReplayCheck::kFresh));
        if (ok) {
          accepted.insert({epoch, counter, ts});
        } else if (c == gw::dp::ReplayCheck::kNoRoom) {
          check(!had);
          check(size_before == t.capacity() || t.windows_of(src) >= 1);
        }
        break;
      }
      case 1: {  // time passes, one ageing step
        now += data[i + 2] % 4;
        t.age(now, 1 + data[i + 1] % 8);
        break;
      }
      case 2:
        failed.add(k, counter);
        added.insert({epoch, counter});
        break;
      case 3:  // the clock steps back a little
        now -= data[i + 2] % 8;
        break;
      default:
        if (failed.contains(k, counter)) check(added.count({epoch, counter}) == 1);
        break;
    }
    check(t.size() <= t.capacity());
    std::size_t held = 0;
    for (std::uint64_t ep = 0; ep < 24; ++ep) held += t.find({1, ep}) != nullptr;
    check(held == t.size());
  }
  // At most once, at the end, for everything still inside the timestamp
  // window of now (the ladder refuses the rest as stale).
  for (const auto& [epoch, counter, ts] : accepted) {
    if (ts + kWindow < now || ts > now + kWindow) continue;
    check(t.check({1, epoch}, counter, ts) != gw::dp::ReplayCheck::kFresh);
  }
  return 0;
}
