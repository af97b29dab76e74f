// EAL-side setup: the port the gateway owns, its queues and buffer pools.
#pragma once

#include <rte_mempool.h>

#include <array>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "config/config.h"

namespace gw::dp {

// A start-up failure an operator can fix (wrong device, too little memory).
class SetupError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

struct PortPlan {
  std::uint16_t port_id = 0;
  std::uint16_t queues = 1;  // one rx and one tx queue per worker
  // Defaults: the config's (dataplane.*), written once there.
  std::uint16_t rx_descriptors = config::DataplaneConfig{}.rx_descriptors;
  std::uint16_t tx_descriptors = config::DataplaneConfig{}.tx_descriptors;
  std::uint32_t mbufs_per_queue = config::DataplaneConfig{}.mbufs;
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

// EAL memory the port's packet pools need, in bytes (rx pools and the
// transmit pool as start_port creates them). After EAL init.
std::uint64_t pool_bytes(const PortPlan& plan);

// EAL memory that could still be allocated on `socket`: the heap's free
// bytes, plus free hugepages of that NUMA node when EAL uses hugepages.
// After EAL init, main lcore.
std::uint64_t eal_memory_available(int socket);

// Configures and starts the port; throws SetupError with the reason (also
// when EAL lacks the memory for its packet pools).
PortState start_port(const PortPlan& plan);

void stop_port(PortState& state) noexcept;

}  // namespace gw::dp
