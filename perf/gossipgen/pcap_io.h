// Reading and writing pcap files for gossipgen (libpcap).
#pragma once

#include <pcap/pcap.h>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "perf/gossipgen/frames.h"

namespace gw::perf {

class PcapError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Streams frames into an Ethernet (DLT_EN10MB) pcap with snap length 65535.
// Frame i is stamped `unix_seconds` + i microseconds, so the file depends on
// nothing but what is written. Throws PcapError naming the path on failure.
class PcapWriter {
 public:
  PcapWriter(const std::string& path, std::uint32_t unix_seconds);
  ~PcapWriter();
  PcapWriter(const PcapWriter&) = delete;
  PcapWriter& operator=(const PcapWriter&) = delete;

  void write(const Frame& frame);
  // Flushes and closes; throws PcapError if anything could not be written.
  void close();

 private:
  std::string path_;
  std::uint32_t unix_seconds_;
  std::uint64_t count_ = 0;
  pcap_t* dead_ = nullptr;
  pcap_dumper_t* dumper_ = nullptr;
};

// All of `frames` through a PcapWriter.
void write_pcap(const std::string& path, const std::vector<Frame>& frames, std::uint32_t unix_seconds);

// Reads every frame of a pcap (captured bytes only) and its link type.
struct PcapContents {
  int linktype = 0;
  std::vector<Frame> frames;
};
PcapContents read_pcap(const std::string& path);

// The UDP payloads of the unfragmented IPv4/IPv6 UDP packets of a capture, in
// file order. Handles Ethernet (with one optional 802.1Q tag), BSD loopback
// (DLT_NULL, DLT_LOOP), raw IP (DLT_RAW, DLT_IPV4, DLT_IPV6) and Linux cooked
// captures. Throws PcapError if the file cannot be read or its link type is
// none of those.
std::vector<std::vector<std::uint8_t>> read_udp_payloads(const std::string& path);

}  // namespace gw::perf
