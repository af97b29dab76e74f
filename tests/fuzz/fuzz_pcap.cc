// Fuzz target: gossipgen's pcap reader (it reads operator-supplied corpora).
// Only PcapError may come out.
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "perf/gossipgen/pcap_io.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const std::string path = "/tmp/gw-fuzz-pcap-" + std::to_string(::getpid()) + ".pcap";
  FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) std::abort();
  if (size != 0 && std::fwrite(data, 1, size, f) != size) std::abort();
  std::fclose(f);
  try {
    (void)gw::perf::read_udp_payloads(path);
  } catch (const gw::perf::PcapError&) {
  }
  return 0;
}
