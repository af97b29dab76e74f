// What the control lcore does besides the engine, on its housekeeping pass:
// watch the port's link and talk to systemd. Control lcore only.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>

namespace gw::cp {

// The port's link, checked every 100 ms: while it is down (a memif peer went
// away, a cable) `link_down` tells the workers to leave the driver alone.
class LinkWatch {
 public:
  static constexpr std::uint64_t kCheckNs = 100'000'000ULL;

  LinkWatch(std::uint16_t port_id, std::atomic<bool>& link_down) : port_id_(port_id), link_down_(link_down) {}

  void poll(std::uint64_t now_ns);
  bool up() const noexcept { return !link_down_.load(std::memory_order_relaxed); }
  std::uint64_t down_events() const noexcept { return down_events_; }  // up -> down transitions seen

 private:
  std::uint16_t port_id_;
  std::atomic<bool>& link_down_;
  std::uint64_t next_ns_ = 0;
  bool known_ = false;
  std::uint64_t down_events_ = 0;
};

// systemd (Type=notify): READY=1 on the first pass, i.e. the port is up, the
// workers run and the engine has started; then WATCHDOG=1 every half
// WatchdogSec from this (the control) lcore, so a wedged control loop stops
// feeding it; STOPPING=1 on the way out. No-ops outside systemd.
class SystemdNotifier {
 public:
  SystemdNotifier();  // logs the watchdog's period when systemd set one

  void poll(std::uint64_t now_ns, const std::string& status);
  void stopping();

 private:
  bool ready_sent_ = false;
  bool watchdog_ = false;
  std::uint64_t watchdog_every_ns_ = 0;
  std::uint64_t next_watchdog_ns_ = 0;
};

}  // namespace gw::cp
