#include "control/gateway/housekeeping.h"

#include <rte_ethdev.h>

#include <spdlog/spdlog.h>
#include <systemd/sd-daemon.h>

namespace gw::cp {

void LinkWatch::poll(std::uint64_t now_ns) {
  if (now_ns < next_ns_) return;
  next_ns_ = now_ns + kCheckNs;
  rte_eth_link link{};
  if (rte_eth_link_get_nowait(port_id_, &link) != 0) return;  // no link status: assume up
  const bool down = link.link_status == RTE_ETH_LINK_DOWN;
  if (known_ && down == link_down_.load(std::memory_order_relaxed)) return;
  if (!known_) {
    known_ = true;
    if (down) spdlog::info("port {} link is down (waiting for the peer or cable)", port_id_);
  } else if (down) {
    ++down_events_;
    spdlog::warn("port {} link went down: workers stop polling it until it is back", port_id_);
  } else {
    spdlog::info("port {} link is up", port_id_);
  }
  link_down_.store(down, std::memory_order_relaxed);
}

SystemdNotifier::SystemdNotifier() {
  std::uint64_t usec = 0;
  watchdog_ = sd_watchdog_enabled(0, &usec) > 0 && usec > 0;
  watchdog_every_ns_ = usec * 1000ULL / 2;
  if (watchdog_) spdlog::info("systemd watchdog: fed every {} ms", watchdog_every_ns_ / 1'000'000ULL);
}

void SystemdNotifier::poll(std::uint64_t now_ns, const std::string& status) {
  if (!ready_sent_) {
    ready_sent_ = true;
    (void)sd_notifyf(0, "READY=1\nSTATUS=%s", status.c_str());
  }
  if (watchdog_ && now_ns >= next_watchdog_ns_) {
    next_watchdog_ns_ = now_ns + watchdog_every_ns_;
    (void)sd_notify(0, "WATCHDOG=1");
  }
}

void SystemdNotifier::stopping() { (void)sd_notify(0, "STOPPING=1"); }

}  // namespace gw::cp
