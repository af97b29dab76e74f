// EAL-side setup: the port the gateway owns, its queues and buffer pools.
#pragma once

#include <rte_mempool.h>

#include <array>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace gw::dp {

// A start-up failure an operator can fix (wrong device, too little memory).
class SetupError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct PortPlan {
  std::uint16_t port_id = 0;
  std::uint16_t queues = 1;  // one rx and one tx queue per worker
  std::uint16_t rx_descriptors = 1024;
  std::uint16_t tx_descriptors = 1024;
  std::uint32_t mbufs_per_queue = 16384;
  std::uint32_t tx_mbufs = 4096;  // the control lcore's transmit pool
};

struct PortState {
  std::uint16_t port_id = 0;
  std::vector<rte_mempool*> pools;  // one per rx queue
  rte_mempool* tx_pool = nullptr;   // control lcore's transmit buffers
  std::array<std::uint8_t, 6> mac{};
  std::string driver;
  bool rss = false;
};

// Configures and starts the port; throws SetupError with the reason.
PortState start_port(const PortPlan& plan);

void stop_port(PortState& state) noexcept;

}  // namespace gw::dp
