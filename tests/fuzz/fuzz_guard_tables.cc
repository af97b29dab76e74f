// Fuzz target: the ladder's state tables driven by arbitrary operation
// sequences (issue 17): the replay table (dataplane/replay.h) and the
// failed-header set, each against a plain shadow model.
//
// Invariants beyond "no crash":
//   - the replay table never holds more than its capacity, and refuses a
//     new sender only when it is full;
//   - at most once: a counter committed for a sender is never fresh again
//     while the sender's window is held, and a window is only ever dropped
//     by age() once its newest datagram is stale (now - max_ts > window);
//   - every window the shadow holds and the table does not was aged out
//     legitimately, and every window the table holds the shadow holds;
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
#include <utility>

#include "dataplane/neighbors.h"
#include "dataplane/replay.h"

namespace {

void check(bool ok) {
  if (!ok) std::abort();
}

struct Shadow {
  std::set<std::uint32_t> counters;
  std::uint32_t max_ts = 0;
};

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
  gw::dp::ReplayTable t(capacity, 7, kWindow);
  gw::dp::FailedHeaders failed(9);
  std::map<std::uint64_t, Shadow> shadow;  // epoch -> what was committed
  std::set<std::pair<std::uint64_t, std::uint32_t>> added;
  std::uint32_t now = 1000;
  for (std::size_t i = 1; i + 3 <= size; i += 3) {
    const std::uint8_t op = data[i] % 4;
    const std::uint64_t epoch = data[i + 1] % 24;
    const std::uint32_t counter = data[i + 2] % 64;
    const gw::dp::ReplayKey k{1, epoch};
    switch (op) {
      case 0: {  // commit what the ladder would: a fresh counter, stamped now +- 3
        const auto* e = t.find(k);
        if (!gw::dp::ReplayTable::is_fresh(e, counter)) {
          // Not fresh: it was committed (or is older than the window).
          break;
        }
        const std::uint32_t ts = now - 3 + data[i + 2] % 7;
        const bool was_full = t.full();
        if (t.commit(k, counter, ts)) {
          Shadow& s = shadow[epoch];
          s.counters.insert(counter);
          s.max_ts = std::max(s.max_ts, ts == 0 ? 1u : ts);
        } else {
          check(was_full && e == nullptr);
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
      default:
        if (failed.contains(k, counter)) check(added.count({epoch, counter}) == 1);
        break;
    }
    check(t.size() <= t.capacity());
    // Table vs shadow.
    for (auto it = shadow.begin(); it != shadow.end();) {
      const auto* e = t.find({1, it->first});
      if (e == nullptr) {
        // Dropped: only legitimately, once stale.
        check(now > it->second.max_ts && now - it->second.max_ts > kWindow);
        it = shadow.erase(it);
        continue;
      }
      for (const std::uint32_t c : it->second.counters) check(!gw::dp::ReplayTable::is_fresh(e, c));
      ++it;
    }
    std::size_t held = 0;
    for (std::uint64_t ep = 0; ep < 24; ++ep) held += t.find({1, ep}) != nullptr;
    check(held == t.size());
    check(held == shadow.size());
  }
  return 0;
}
