#include "control/engine/return_routes.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <random>

namespace gw::cp::engine {

ReturnRoutes::ReturnRoutes(std::uint64_t seed, std::size_t max_members) : entries_(kMinSets * kWays) {
  while (max_sets_ * kWays < 2 * max_members) max_sets_ *= 2;
  // The kernel's random numbers: the key must be unknown to whoever picks
  // the spoofed addresses. It changes no output but under a flood of them
  // (which entry a full set forgets).
  std::random_device rd;
  const auto word = [&rd] { return (std::uint64_t{rd()} << 32) ^ rd(); };
  table_key_ = crypto::SipKey{word(), word()};
  // splitmix64 of the seed, twice: not the RNG's stream (which it leaves as
  // it is).
  const auto mix = [](std::uint64_t z) {
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  };
  cookie_key_ = crypto::SipKey{mix(seed + 0x9e3779b97f4a7c15ULL), mix(seed + 2 * 0x9e3779b97f4a7c15ULL)};
}

std::uint64_t ReturnRoutes::mac(const Address& a, std::uint64_t epoch) const {
  // SipHash-2-4 (a PRF: the MAC the ladder uses for headers) of the epoch,
  // the address and its length, and the port, in 40 bytes.
  std::array<std::uint8_t, 40> b{};
  std::memcpy(b.data(), &epoch, sizeof epoch);
  const std::size_t n = std::min<std::size_t>(a.ip.size(), 16);
  std::copy_n(a.ip.begin(), n, b.begin() + 8);
  b[24] = static_cast<std::uint8_t>(n);
  b[25] = static_cast<std::uint8_t>(a.port >> 8);
  b[26] = static_cast<std::uint8_t>(a.port);
  const std::uint64_t h = crypto::siphash24_40(cookie_key_, b.data());
  return h == 0 ? 1 : h;
}

bool ReturnRoutes::valid_cookie(const Address& a, std::uint64_t cookie, std::uint64_t now_ns) const {
  if (cookie == 0) return false;
  const std::uint64_t epoch = now_ns / kEpochNs;
  // Constant time is not needed: a wrong guess costs the guesser a datagram
  // and teaches it nothing about the next epoch's secret.
  return cookie == mac(a, epoch) || (epoch > 0 && cookie == mac(a, epoch - 1));
}

std::size_t ReturnRoutes::set_of(const Address& a) const {
  std::array<std::uint8_t, 19> b{};
  const std::size_t n = std::min<std::size_t>(a.ip.size(), 16);
  std::copy_n(a.ip.begin(), n, b.begin());
  b[n] = static_cast<std::uint8_t>(a.port >> 8);
  b[n + 1] = static_cast<std::uint8_t>(a.port);
  b[n + 2] = static_cast<std::uint8_t>(n);
  return static_cast<std::size_t>(crypto::siphash13(table_key_, b.data(), n + 3) % sets_);
}

ReturnRoutes::Entry* ReturnRoutes::find(const Address& a) {
  Entry* set = &entries_[set_of(a) * kWays];
  for (std::size_t i = 0; i < kWays; ++i)
    if (set[i].used && set[i].addr == a) return &set[i];
  return nullptr;
}

const ReturnRoutes::Entry* ReturnRoutes::find(const Address& a) const {
  return const_cast<ReturnRoutes*>(this)->find(a);
}

void ReturnRoutes::grow() {
  std::vector<Entry> old = std::move(entries_);
  sets_ *= 2;
  entries_.assign(sets_ * kWays, Entry{});
  // An old set's entries go to two new sets (the hash modulo twice as
  // many): each has room for all of them.
  for (Entry& e : old) {
    if (!e.used) continue;
    Entry* set = &entries_[set_of(e.addr) * kWays];
    for (std::size_t i = 0; i < kWays; ++i)
      if (!set[i].used) {
        set[i] = std::move(e);
        break;
      }
  }
}

ReturnRoutes::Entry& ReturnRoutes::get(const Address& a, std::uint64_t now_ns) {
  if (Entry* e = find(a)) {
    e->touched_ns = now_ns;
    return *e;
  }
  Entry* set = &entries_[set_of(a) * kWays];
  while (sets_ < max_sets_ && std::all_of(set, set + kWays, [](const Entry& e) { return e.used; })) {
    grow();
    set = &entries_[set_of(a) * kWays];
  }
  Entry* victim = nullptr;
  for (std::size_t i = 0; i < kWays && (victim == nullptr || victim->used); ++i) {
    Entry& e = set[i];
    if (!e.used) {
      victim = &e;
      continue;
    }
    // Forgotten first: one no longer proven, then the least recently used.
    const bool e_proven = e.proven_until_ns > now_ns;
    const bool v_proven = victim != nullptr && victim->proven_until_ns > now_ns;
    if (victim == nullptr || (v_proven && !e_proven) || (v_proven == e_proven && e.touched_ns < victim->touched_ns))
      victim = &e;
  }
  if (victim->used) ++evictions_;
  *victim = Entry{a, true, 0, now_ns, 0, 0, 0, 0, 0};
  return *victim;
}

bool ReturnRoutes::proven(const Address& a, std::uint64_t now_ns) const {
  const Entry* e = find(a);
  return e != nullptr && e->proven_until_ns > now_ns;
}

void ReturnRoutes::prove(const Address& a, std::uint64_t now_ns, std::uint64_t ttl_ns) {
  Entry& e = get(a, now_ns);
  e.proven_until_ns = std::max(e.proven_until_ns, now_ns + std::max(kProvenTtlNs, ttl_ns));
}

std::size_t ReturnRoutes::bank(const Address& a) const {
  const Entry* e = find(a);
  return e == nullptr ? 0 : e->bank;
}

void ReturnRoutes::earn(const Address& a, std::size_t bytes, std::uint64_t now_ns) {
  Entry& e = get(a, now_ns);
  e.bank = static_cast<std::uint32_t>(std::min<std::size_t>(kMaxBank, e.bank + bytes));
}

void ReturnRoutes::spend(const Address& a, std::size_t bytes) {
  if (Entry* e = find(a)) e->bank = bytes >= e->bank ? 0 : e->bank - static_cast<std::uint32_t>(bytes);
}

bool ReturnRoutes::take_answer_bytes(const Address& a, std::uint64_t bytes, std::uint64_t per_sec,
                                     std::uint64_t burst, std::uint64_t now_ns) {
  Entry& e = get(a, now_ns);
  const auto cap = static_cast<std::int64_t>(burst);
  if (e.tokens_ns == 0) {
    e.tokens = cap;
  } else if (now_ns > e.tokens_ns) {
    const std::uint64_t earned = (now_ns - e.tokens_ns) / 1000 * per_sec / 1'000'000;
    e.tokens = std::min<std::int64_t>(cap, e.tokens + static_cast<std::int64_t>(std::min<std::uint64_t>(earned, burst)));
  }
  e.tokens_ns = std::max(now_ns, std::uint64_t{1});
  if (e.tokens <= 0) return false;
  e.tokens -= static_cast<std::int64_t>(std::min<std::uint64_t>(bytes, burst));
  return true;
}

bool ReturnRoutes::start_check(const Address& a, std::uint32_t seq, std::uint64_t now_ns, std::uint64_t gap_ns) {
  Entry& e = get(a, now_ns);
  if (e.check_ns != 0 && now_ns < e.check_ns + gap_ns) return false;
  e.check_seq = seq == 0 ? 1 : seq;
  e.check_ns = std::max<std::uint64_t>(now_ns, 1);
  return true;
}

bool ReturnRoutes::answers_check(const Address& a, std::uint32_t seq) {
  Entry* e = find(a);
  if (e == nullptr || e->check_seq == 0 || e->check_seq != seq) return false;
  e->check_seq = 0;
  return true;
}

void ReturnRoutes::expire_held(std::uint64_t now_ns) {
  // Held in time order with one lifetime: the expired ones are in front.
  while (!held_.empty() && held_.front().until_ns <= now_ns) {
    held_expired_ += held_.front().news.size();
    held_.pop_front();
  }
}

bool ReturnRoutes::hold(const Address& a, Message m, std::size_t bytes, std::size_t limit_bytes,
                        std::uint64_t now_ns, std::uint64_t ttl_ns) {
  expire_held(now_ns);
  for (Held& h : held_)
    if (h.to == a) {
      if (h.bytes + bytes > limit_bytes) return false;
      h.news.push_back(std::move(m));
      h.bytes += bytes;
      return true;
    }
  if (held_.size() >= kMaxHeld || bytes > limit_bytes) return false;
  held_.push_back(Held{a, Compound{std::move(m)}, bytes, now_ns + ttl_ns});
  return true;
}

Compound ReturnRoutes::take_held(const Address& a, std::uint64_t now_ns) {
  expire_held(now_ns);
  for (auto it = held_.begin(); it != held_.end(); ++it)
    if (it->to == a) {
      Compound news = std::move(it->news);
      held_.erase(it);
      return news;
    }
  return {};
}

}  // namespace gw::cp::engine
