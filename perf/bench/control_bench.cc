// What one control lcore can serve, per message type (issue 19): the path a
// payload takes after a worker accepted it (decode, the membership engine,
// the egress shaper, sealing each reply), timed on one core with no DPDK.
// The gateway's control lcore runs exactly this (ControlLoop::poll_once ->
// EngineHost::on_payload, then EngineHost::poll once a pass).
//
//   control_bench [--members N] [--messages K] [--repeats R] [--suite aes256gcm|chacha20poly1305]
//
// Each type is measured on a fresh host that knows N live members (default
// 1,000) and receives K payloads (default 20,000) of one message each, sent
// by those members; the host polls (timers, shaper) every 32 payloads, as a
// control-lcore pass does, and the fake clock advances 1 us a payload. The
// shaper is unlimited (egress_bytes_per_sec 0) so every reply is sealed and
// handed to the sink: the costly case. What each type is:
//
//   ping           a member probes us: decode, ack sealed and sent
//   ack / nack     for no probe of ours (what a flood of them costs)
//   indirect_ping  a member asks us to probe another: a ping sealed and sent
//   alive          a member's refutation (incarnation one higher each time):
//                  news, queued for gossip
//   suspect        a member suspects another (each target suspected once):
//                  news, a suspicion timer, queued for gossip
//   dead / leave   each member's death / leave once: news, queued for gossip
//   sync_request   a member's push-pull with a digest that differs: we send
//                  our whole view back (N entries, in parts)
//   sync_equal     the same with our own digest: views equal, short answer
//   user_data      64 bytes of user data from a member
//
// Member-event log lines are off (spdlog at warn). Prints one line per type: "type=ping members=1000 msgs_per_s=812345
// ns_per_msg=1231 sent_per_msg=1.00", the median of R runs (default 5).
#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "control/codec.h"
#include "control/host/engine_host.h"
#include "control/host/message_stats.h"
#include "crypto/keys.h"

#include <spdlog/spdlog.h>

namespace {

using gw::cp::engine::Address;
using gw::cp::engine::Compound;

constexpr std::uint64_t kSecondNs = 1'000'000'000ULL;
constexpr std::uint64_t kStartNs = 1000 * kSecondNs;
constexpr std::uint32_t kUnixS = 1'800'000'000U;
constexpr std::size_t kPollEvery = 32;  // payloads between EngineHost::poll, as a control-lcore pass

Address member_addr(std::size_t i) {
  return Address{
      {10, static_cast<std::uint8_t>(1 + (i >> 16)), static_cast<std::uint8_t>(i >> 8), static_cast<std::uint8_t>(i)},
      7946};
}
std::string member_name(std::size_t i) { return "member-" + std::to_string(i); }

struct CountingSink : gw::dp::DatagramSink {
  std::uint64_t sent = 0;
  std::uint64_t bytes = 0;
  bool send(const gw::dp::Endpoint&, gw::crypto::PriorityClass, const std::uint8_t*,
            std::size_t len) noexcept override {
    ++sent;
    bytes += len;
    return true;
  }
};

struct Bench {
  std::size_t members = 1000;
  std::size_t messages = 20000;
  int repeats = 5;
  gw::crypto::Suite suite = gw::crypto::Suite::kAes256Gcm;
};

// A host named "gw" at 10.0.0.1 that knows `n` live members.
using Tweak = std::function<void(gw::cp::engine::EngineConfig&)>;

struct Host {
  Host(const Bench& b, const Tweak& tweak) {
    gw::crypto::KeyBytes k{};
    k.fill(7);
    keys.add(gw::crypto::Key(k, b.suite), true);
    key_id = gw::crypto::derive_key_id(k);
    gw::cp::EngineHost::Options o;
    o.engine = gw::cp::engine::EngineConfig::lan();
    o.engine.name = "gw";
    o.engine.addr = Address{{10, 0, 0, 1}, 7946};
    o.engine.admit_rate = 1'000'000'000;  // every member of the setup admitted at once
    o.engine.admit_burst = 1'000'000'000;
    if (tweak) tweak(o.engine);
    o.keys = &keys;
    o.suite = b.suite;
    o.rng_seed = 1;
    o.shaper.bytes_per_sec = 0;  // unlimited: every reply is sealed and sent
    host = std::make_unique<gw::cp::EngineHost>(o, sink, kStartNs);
    host->start(kStartNs, kUnixS);
    for (std::size_t i = 0; i < b.members; ++i) {
      host->engine().handle(member_addr(i), {gw::cp::engine::Alive{1, member_name(i), member_addr(i), {}, 1}},
                            kStartNs);
    }
    host->poll(kStartNs, kUnixS);
    sink.sent = 0;
    sink.bytes = 0;
  }

  gw::crypto::Keyring keys;
  std::uint32_t key_id = 0;
  CountingSink sink;
  std::unique_ptr<gw::cp::EngineHost> host;
};

struct Payload {
  std::vector<std::uint8_t> bytes;
  std::size_t from = 0;  // member index
};

struct Result {
  double ns_per_msg = 0;
  double sent_per_msg = 0;
};

// Times `payloads` through a fresh host; `make` built them for that host.
Result run_once(const Bench& b, const std::function<std::vector<Payload>(const Host&)>& make, const Tweak& tweak) {
  Host h(b, tweak);
  const std::vector<Payload> payloads = make(h);
  gw::cp::ControlCounters counters;
  std::uint64_t now = kStartNs + kSecondNs;
  const auto t0 = std::chrono::steady_clock::now();
  for (std::size_t i = 0; i < payloads.size(); ++i) {
    gw::dp::Handoff x;
    x.data = payloads[i].bytes.data();
    x.len = static_cast<std::uint32_t>(payloads[i].bytes.size());
    x.from = gw::cp::to_endpoint(member_addr(payloads[i].from));
    x.key_id = h.key_id;
    h.host->on_payload(x, now, counters);
    now += 1000;
    if ((i + 1) % kPollEvery == 0) h.host->poll(now, kUnixS);
  }
  h.host->poll(now, kUnixS);
  const auto t1 = std::chrono::steady_clock::now();
  if (counters.msg_decode_error != 0) {
    std::fprintf(stderr, "control_bench: %llu payloads did not decode\n",
                 static_cast<unsigned long long>(counters.msg_decode_error));
    std::exit(1);
  }
  Result r;
  const double ns = std::chrono::duration<double, std::nano>(t1 - t0).count();
  r.ns_per_msg = ns / static_cast<double>(payloads.size());
  r.sent_per_msg = static_cast<double>(h.sink.sent) / static_cast<double>(payloads.size());
  return r;
}

Payload one(std::size_t from, gw::cp::engine::Message m) {
  return Payload{gw::cp::encode(Compound{std::move(m)}), from};
}

// The member that sends the i-th payload, and a different one it talks about.
std::size_t sender(const Bench& b, std::size_t i) { return i % b.members; }
std::size_t other(const Bench& b, std::size_t i) { return (i * 7 + 1) % b.members; }

int usage(const char* argv0) {
  std::fprintf(stderr,
               "usage: %s [--members N] [--messages K] [--repeats R] [--suite aes256gcm|chacha20poly1305]\n"
               "  decode + engine + shaper + seal per message type on one core; prints one line a type\n",
               argv0);
  return 2;
}

bool parse_size(const char* s, std::size_t lo, std::size_t hi, std::size_t* out) {
  char* end = nullptr;
  const unsigned long long v = std::strtoull(s, &end, 10);
  if (end == s || *end != '\0' || v < lo || v > hi) return false;
  *out = static_cast<std::size_t>(v);
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  // Member events are logged at info; gossipgw runs at info too, but a
  // terminal would time the console, not the control lcore.
  spdlog::set_level(spdlog::level::warn);
  Bench b;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const char* v = i + 1 < argc ? argv[i + 1] : nullptr;
    std::size_t x = 0;
    if (a == "--members" && v && parse_size(v, 2, 100000, &x)) {
      b.members = x;
    } else if (a == "--messages" && v && parse_size(v, 1, 10000000, &x)) {
      b.messages = x;
    } else if (a == "--repeats" && v && parse_size(v, 1, 100, &x)) {
      b.repeats = static_cast<int>(x);
    } else if (a == "--suite" && v && (std::strcmp(v, "aes256gcm") == 0 || std::strcmp(v, "chacha20poly1305") == 0)) {
      b.suite = std::strcmp(v, "aes256gcm") == 0 ? gw::crypto::Suite::kAes256Gcm : gw::crypto::Suite::kChaCha20Poly1305;
    } else {
      return usage(argv[0]);
    }
    ++i;
  }

  using gw::cp::engine::Message;
  using Make = std::function<std::vector<Payload>(const Host&)>;
  const std::size_t k = b.messages;
  const std::size_t news = std::min(k, b.members);  // one piece of news per member
  // `count` payloads, the i-th made by f(i).
  auto payloads = [](std::size_t count, std::function<Payload(std::size_t)> f) -> Make {
    return [count, f](const Host&) {
      std::vector<Payload> v;
      v.reserve(count);
      for (std::size_t i = 0; i < count; ++i) v.push_back(f(i));
      return v;
    };
  };
  // K payloads; and one piece of news per member (each only once is news).
  auto repeat = [&payloads, k](std::function<Payload(std::size_t)> f) { return payloads(k, std::move(f)); };
  auto once_each = [&payloads, news](std::function<Payload(std::size_t)> f) { return payloads(news, std::move(f)); };
  auto sync = [&b, k](bool equal) {
    return [&b, k, equal](const Host& h) {
      const gw::cp::engine::MemberTable& t = h.host->engine().table();
      std::vector<Payload> v;
      for (std::size_t i = 0; i < std::min<std::size_t>(k, 2000); ++i) {
        gw::cp::engine::SyncRequest r;
        r.seq_no = static_cast<std::uint32_t>(i + 1);
        r.source = member_name(sender(b, i));
        r.digest = equal ? t.view_digest() : t.view_digest() ^ 1;
        r.view_size = static_cast<std::uint32_t>(t.size());
        v.push_back(one(sender(b, i), Message{r}));
      }
      return v;
    };
  };
  struct Type {
    const char* name;
    Make make;
    Tweak tweak;  // null: EngineConfig::lan() as the gateway runs it
  };
  // The served rows lift the engine's own limits on work done for others
  // (max_pending_relays, sync_answer_rate, max_concurrent_syncs), so each
  // request is answered: what one answer costs, not what a refusal costs.
  const Tweak serve_all = [](gw::cp::engine::EngineConfig& c) {
    c.max_pending_relays = 1'000'000;
    c.sync_answer_rate = 1'000'000'000;
    c.sync_answer_burst = 1'000'000'000;
    c.max_concurrent_syncs = 1'000'000;
  };
  const Make indirect = repeat([&b](std::size_t i) {
    gw::cp::engine::IndirectPing p;
    p.seq_no = static_cast<std::uint32_t>(i + 1);
    p.target = member_name(other(b, i));
    p.target_addr = member_addr(other(b, i));
    p.want_nack = true;
    p.source = member_name(sender(b, i));
    p.source_addr = member_addr(sender(b, i));
    return one(sender(b, i), Message{p});
  });
  const std::vector<Type> types = {
      {"ping", repeat([&b](std::size_t i) {
         return one(sender(b, i), Message{gw::cp::engine::Ping{static_cast<std::uint32_t>(i + 1), "gw",
                                                               member_name(sender(b, i)), member_addr(sender(b, i))}});
       }),
       nullptr},
      {"ack", repeat([&b](std::size_t i) {
         return one(sender(b, i),
                    Message{gw::cp::engine::Ack{static_cast<std::uint32_t>(i + 1), member_name(sender(b, i))}});
       }),
       nullptr},
      {"nack", repeat([&b](std::size_t i) {
         return one(sender(b, i),
                    Message{gw::cp::engine::Nack{static_cast<std::uint32_t>(i + 1), member_name(sender(b, i))}});
       }),
       nullptr},
      {"indirect_ping", indirect, nullptr},
      {"indirect_ping_served", indirect, serve_all},
      {"alive", repeat([&b](std::size_t i) {
         const std::size_t m = sender(b, i);
         return one(m, Message{gw::cp::engine::Alive{2 + i / b.members, member_name(m), member_addr(m), {}, 1}});
       }),
       nullptr},
      {"suspect", once_each([&b](std::size_t i) {
         return one(sender(b, i),
                    Message{gw::cp::engine::Suspect{1, member_name(other(b, i)), member_name(sender(b, i))}});
       }),
       nullptr},
      {"dead", once_each([&b](std::size_t i) {
         return one(sender(b, i),
                    Message{gw::cp::engine::Dead{1, member_name(other(b, i)), member_name(sender(b, i))}});
       }),
       nullptr},
      {"leave", once_each([&b](std::size_t i) {
         return one(sender(b, i), Message{gw::cp::engine::Leave{1, member_name(sender(b, i))}});
       }),
       nullptr},
      {"sync_request", sync(false), nullptr},
      {"sync_request_served", sync(false), serve_all},
      {"sync_equal_served", sync(true), serve_all},
      {"user_data", repeat([&b](std::size_t i) {
         return one(sender(b, i), Message{gw::cp::engine::UserData{member_name(sender(b, i)), std::string(64, 'u')}});
       }),
       nullptr},
  };

  for (const Type& t : types) {
    std::vector<Result> runs;
    for (int r = 0; r < b.repeats; ++r) runs.push_back(run_once(b, t.make, t.tweak));
    std::sort(runs.begin(), runs.end(), [](const Result& x, const Result& y) { return x.ns_per_msg < y.ns_per_msg; });
    const Result& m = runs[runs.size() / 2];
    std::printf("type=%s members=%zu msgs_per_s=%.0f ns_per_msg=%.0f sent_per_msg=%.2f\n", t.name, b.members,
                1e9 / m.ns_per_msg, m.ns_per_msg, m.sent_per_msg);
  }
  return 0;
}
