#include "control/host/egress_shaper.h"

#include <algorithm>

namespace gw::cp {

EgressShaper::EgressShaper(ShaperConfig config, dp::DatagramSink& sink, std::uint64_t now_ns)
    : config_(config), sink_(sink), tokens_(static_cast<double>(config.burst_bytes)), last_ns_(now_ns) {}

void EgressShaper::refill(std::uint64_t now_ns) {
  if (now_ns <= last_ns_) return;
  const double earned = static_cast<double>(now_ns - last_ns_) * static_cast<double>(config_.bytes_per_sec) / 1e9;
  tokens_ = std::min(tokens_ + earned, static_cast<double>(config_.burst_bytes));
  last_ns_ = now_ns;
}

// Evicts the newest datagrams of classes below `cls`, lowest class first,
// until `len` more bytes fit. False if they cannot be made to fit.
bool EgressShaper::make_room(std::size_t cls, std::size_t len) {
  for (std::size_t victim = crypto::kClassCount; victim-- > cls + 1;) {
    auto& q = queues_[victim];
    while (!q.empty() && queued_bytes_ + len > config_.queue_bytes) {
      queued_bytes_ -= q.back().bytes.size();
      q.pop_back();
      ++counters_[victim].dropped;
      --counters_[victim].depth;
    }
  }
  return queued_bytes_ + len <= config_.queue_bytes;
}

bool EgressShaper::submit(const dp::Endpoint& to, crypto::PriorityClass cls, const std::uint8_t* data, std::size_t len,
                          std::uint64_t now_ns) {
  const auto c = static_cast<std::size_t>(cls);
  if (queued_bytes_ + len > config_.queue_bytes && !make_room(c, len)) {
    ++counters_[c].dropped;  // nothing lower to give way: the newcomer waits no more
    return false;
  }
  refill(now_ns);
  // It goes at once only if nothing of its class or above is waiting and the
  // budget covers it; otherwise it is deferred (counted once, here).
  bool ahead = false;
  for (std::size_t h = 0; h <= c; ++h) ahead = ahead || !queues_[h].empty();
  const double need = std::min(static_cast<double>(len), static_cast<double>(config_.burst_bytes));
  if (ahead || (config_.bytes_per_sec != 0 && tokens_ < need)) ++counters_[c].deferred;
  queues_[c].push_back(Pending{to, std::vector<std::uint8_t>(data, data + len)});
  queued_bytes_ += len;
  auto& k = counters_[c];
  k.depth_max = std::max(k.depth_max, ++k.depth);
  release(now_ns);
  return true;
}

void EgressShaper::release(std::uint64_t now_ns) {
  refill(now_ns);
  const bool unlimited = config_.bytes_per_sec == 0;
  for (std::size_t c = 0; c < crypto::kClassCount; ++c) {
    auto& q = queues_[c];
    auto& k = counters_[c];
    while (!q.empty()) {
      Pending& p = q.front();
      const double cost = static_cast<double>(p.bytes.size());
      // Out of budget: this class and every lower one wait. A datagram larger
      // than the burst goes once the bucket is full, and leaves a debt.
      if (!unlimited && tokens_ < std::min(cost, static_cast<double>(config_.burst_bytes))) return;
      if (!unlimited) tokens_ -= cost;
      if (sink_.send(p.to, static_cast<crypto::PriorityClass>(c), p.bytes.data(), p.bytes.size())) {
        ++k.sent;
        k.sent_bytes += p.bytes.size();
      } else {
        ++k.refused;
      }
      queued_bytes_ -= p.bytes.size();
      --k.depth;
      q.pop_front();
    }
  }
}

}  // namespace gw::cp
