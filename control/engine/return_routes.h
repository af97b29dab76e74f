// No reflection (issue 51 item 4): which addresses have proven that they
// receive our datagrams, the cookies that prove one, and how many bytes of
// large answers one destination may be sent.
//
// A key holder can seal a request with any source address: a join request or
// a short-view sync request of ~100 bytes was answered with the whole view to
// that address (75x and 242x). The rule (docs/membership.md, "No
// reflection"): while a datagram is handled, what goes to addresses that have
// not proven they receive ours is at most as large as that datagram; sync
// answers larger than their request go to proven addresses only.
//
// An address is proven for kProvenTtlNs (or two probe ring rounds, if longer)
// by
//   - a direct ack, from the member's own address, to a ping of ours (a probe,
//     a proof ping, a relay's ping): members that probe each other prove each
//     other all the time;
//   - a cookie it echoes (WireGuard's cookie reply, QUIC's Retry): a sync
//     request from an address not proven whose answer would be larger than
//     the request gets a SyncResponse carrying only a cookie, a keyed MAC of
//     the source address and port under a secret of the current epoch
//     (kEpochNs); the asker sends the same request again with it, and a valid
//     cookie (this epoch's or the previous one's) proves the address.
// The cookie is stateless: nothing is kept for the address until its cookie
// comes back, and the secret is random per process.
//
// Bounded memory: at most max_sets() x kWays entries (a set picked by a keyed
// SipHash of the address, the key random per process, so that spoofed
// addresses cannot be chosen to crowd out one set). The table starts at
// kMinSets and doubles while a full set could use room; at its bound a full
// set forgets an entry no longer proven first, then the least recently used
// (counted).
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <utility>
#include <vector>

#include "control/engine/messages.h"
#include "crypto/siphash.h"

namespace gw::cp::engine {

class ReturnRoutes {
 public:
  static constexpr std::size_t kMinSets = 16;
  // Room for twice `max_members` addresses at most (a member's address and
  // its previous one, at half load so that a set of 8 seldom overflows):
  // every member stays proven in a full view. At least 4,096 entries.
  static constexpr std::size_t kMinMaxSets = 512;
  static constexpr std::size_t kWays = 8;
  static constexpr std::uint64_t kProvenTtlNs = 600'000'000'000ULL;  // 10 min
  // A cookie's secret changes every epoch; this epoch's and the previous
  // one's are accepted (a cookie lives 2 to 4 minutes).
  static constexpr std::uint64_t kEpochNs = 120'000'000'000ULL;  // 2 min

  // The table's key: the kernel's random numbers. The cookie's: derived from
  // `seed`, so that the engine stays deterministic (the same seed and inputs
  // give the same bytes); a host that faces a network sets a random one
  // (set_cookie_key: EngineHost does), since a seed may be guessed.
  ReturnRoutes(std::uint64_t seed, std::size_t max_members);
  std::size_t max_sets() const { return max_sets_; }
  void set_cookie_key(std::uint64_t k0, std::uint64_t k1) { cookie_key_ = crypto::SipKey{k0, k1}; }
  // For tests: both keys, and the table emptied.
  void set_keys(std::uint64_t table_k0, std::uint64_t table_k1, std::uint64_t cookie_k0, std::uint64_t cookie_k1) {
    table_key_ = crypto::SipKey{table_k0, table_k1};
    cookie_key_ = crypto::SipKey{cookie_k0, cookie_k1};
    entries_.assign(kMinSets * kWays, Entry{});
    sets_ = kMinSets;
  }

  bool proven(const Address& a, std::uint64_t now_ns) const;
  // `a` receives our datagrams, as of now, for max(kProvenTtlNs, `ttl_ns`).
  void prove(const Address& a, std::uint64_t now_ns, std::uint64_t ttl_ns = 0);

  // The cookie for `a` at `now_ns` (never 0: 0 means none on the wire).
  std::uint64_t cookie(const Address& a, std::uint64_t now_ns) const { return mac(a, now_ns / kEpochNs); }
  // True if `cookie` is `a`'s, of this epoch or the previous one.
  bool valid_cookie(const Address& a, std::uint64_t cookie, std::uint64_t now_ns) const;

  // Large answers (sync answers) to `a`: a byte bucket of `burst` bytes
  // refilled at `per_sec`. True (and `bytes` taken, the bucket may go into
  // debt) if the bucket is not empty; false otherwise.
  bool take_answer_bytes(const Address& a, std::uint64_t bytes, std::uint64_t per_sec, std::uint64_t burst,
                         std::uint64_t now_ns);

  // What an address not proven sent us and was not answered with (the
  // unspent bytes of its datagrams, at most kMaxBank): later replies to it
  // may be paid from them (QUIC's anti-amplification limit, with a factor
  // of 1), so that a reply larger than the one datagram that asked for it
  // (our Alive correcting a stale Dead) still goes to a member that has
  // sent us as much.
  static constexpr std::uint32_t kMaxBank = 8192;
  std::size_t bank(const Address& a) const;
  void earn(const Address& a, std::size_t bytes, std::uint64_t now_ns);
  void spend(const Address& a, std::size_t bytes);

  // Route checks (docs/membership.md, "News held for a route check"): when
  // a reply to `a` was held back by the bound, a ping of ours, no larger
  // than what asked, makes `a` prove itself; its ack from `a` does.
  // True if one may go now (none sent to `a` within `gap_ns`): then noted
  // under `seq`.
  bool start_check(const Address& a, std::uint32_t seq, std::uint64_t now_ns, std::uint64_t gap_ns);
  // True if `seq`, acked from `a`, answers the check sent there (once).
  bool answers_check(const Address& a, std::uint32_t seq);

  // News held back from `a` until it proves itself (at most kMaxHeld
  // addresses, `limit_bytes` each, for `ttl_ns`): false if it could not be
  // kept (counted by the caller).
  static constexpr std::size_t kMaxHeld = 256;
  bool hold(const Address& a, Message m, std::size_t bytes, std::size_t limit_bytes, std::uint64_t now_ns,
            std::uint64_t ttl_ns);
  // What is held for `a` (taken), and how many held messages expired since
  // the last call (taken as well).
  Compound take_held(const Address& a, std::uint64_t now_ns);
  std::uint64_t take_held_expired() { return std::exchange(held_expired_, 0); }

  std::uint64_t evictions() const { return evictions_; }
  std::size_t capacity() const { return entries_.size(); }

 private:
  struct Entry {
    Address addr;
    bool used = false;
    std::uint64_t proven_until_ns = 0;
    std::uint64_t touched_ns = 0;
    // Large answers: tokens (bytes, may be negative) as of tokens_ns.
    std::int64_t tokens = 0;
    std::uint64_t tokens_ns = 0;
    std::uint32_t bank = 0;
    // The route check sent there (start_check), 0 = none awaited.
    std::uint32_t check_seq = 0;
    std::uint64_t check_ns = 0;
  };
  struct Held {
    Address to;
    Compound news;
    std::size_t bytes = 0;
    std::uint64_t until_ns = 0;
  };
  void expire_held(std::uint64_t now_ns);
  std::uint64_t mac(const Address& a, std::uint64_t epoch) const;
  std::size_t set_of(const Address& a) const;
  Entry* find(const Address& a);
  const Entry* find(const Address& a) const;
  // `a`'s entry, made if need be (a full set forgets one: counted).
  Entry& get(const Address& a, std::uint64_t now_ns);
  // Doubles the sets (up to max_sets_), every entry moved to its new set.
  void grow();

  crypto::SipKey table_key_;
  crypto::SipKey cookie_key_;
  std::size_t sets_ = kMinSets;
  std::size_t max_sets_ = kMinMaxSets;
  std::vector<Entry> entries_;  // sets_ x kWays
  std::uint64_t evictions_ = 0;
  std::deque<Held> held_;  // oldest first
  std::uint64_t held_expired_ = 0;
};

}  // namespace gw::cp::engine
