#include "perf/gossipgen/pcap_io.h"

#include <pcap/pcap.h>

#include <cstdio>
#include <memory>

namespace gw::perf {
namespace {

constexpr int kSnapLen = 65535;
constexpr std::uint16_t kEtherTypeVlan = 0x8100;

struct PcapCloser {
  void operator()(pcap_t* p) const noexcept { pcap_close(p); }
};
using PcapHandle = std::unique_ptr<pcap_t, PcapCloser>;

// Offset of the IP header for a link type, or -1 if the frame is not IP.
long ip_offset(int linktype, const Frame& f) {
  switch (linktype) {
    case DLT_EN10MB: {
      if (f.size() < kEthHeaderBytes) return -1;
      std::size_t at = 12;
      std::uint16_t type = load_be16(f.data() + at);
      if (type == kEtherTypeVlan) {
        at += 4;
        if (f.size() < at + 2) return -1;
        type = load_be16(f.data() + at);
      }
      if (type != kEtherTypeIpv4 && type != kEtherTypeIpv6) return -1;
      return static_cast<long>(at + 2);
    }
    // The 4-byte address family is in the capturing host's byte order (NULL)
    // or big-endian (LOOP), and AF_INET6 differs between systems: the IP
    // version nibble below tells the family instead.
    case DLT_NULL:
    case DLT_LOOP:
      return 4;
    case DLT_RAW:
    case DLT_IPV4:
    case DLT_IPV6:
      return 0;
    case DLT_LINUX_SLL:
      return 16;
    default:
      return -1;
  }
}

}  // namespace

PcapWriter::PcapWriter(const std::string& path, std::uint32_t unix_seconds)
    : path_(path), unix_seconds_(unix_seconds), dead_(pcap_open_dead(DLT_EN10MB, kSnapLen)) {
  if (dead_ == nullptr) throw PcapError(path + ": cannot create a pcap handle");
  dumper_ = pcap_dump_open(dead_, path.c_str());
  if (dumper_ == nullptr) {
    const std::string err = pcap_geterr(dead_);
    pcap_close(dead_);
    throw PcapError(path + ": " + err);
  }
}

PcapWriter::~PcapWriter() {
  if (dumper_ != nullptr) pcap_dump_close(dumper_);
  if (dead_ != nullptr) pcap_close(dead_);
}

void PcapWriter::write(const Frame& frame) {
  pcap_pkthdr hdr{};
  hdr.ts.tv_sec = static_cast<time_t>(unix_seconds_ + count_ / 1000000);
  hdr.ts.tv_usec = static_cast<suseconds_t>(count_ % 1000000);
  hdr.caplen = static_cast<bpf_u_int32>(frame.size());
  hdr.len = hdr.caplen;
  pcap_dump(reinterpret_cast<u_char*>(dumper_), &hdr, frame.data());
  ++count_;
}

void PcapWriter::close() {
  if (dumper_ == nullptr) return;
  const bool failed = pcap_dump_flush(dumper_) != 0 || std::ferror(pcap_dump_file(dumper_)) != 0;
  pcap_dump_close(dumper_);
  dumper_ = nullptr;
  if (failed) throw PcapError(path_ + ": write failed");
}

void write_pcap(const std::string& path, const std::vector<Frame>& frames, std::uint32_t unix_seconds) {
  PcapWriter w(path, unix_seconds);
  for (const Frame& f : frames) w.write(f);
  w.close();
}

PcapContents read_pcap(const std::string& path) {
  char err[PCAP_ERRBUF_SIZE] = {};
  PcapHandle p(pcap_open_offline(path.c_str(), err));
  if (!p) throw PcapError(path + ": " + err);
  PcapContents out;
  out.linktype = pcap_datalink(p.get());
  pcap_pkthdr* hdr = nullptr;
  const u_char* data = nullptr;
  int rc = 0;
  while ((rc = pcap_next_ex(p.get(), &hdr, &data)) == 1) {
    out.frames.emplace_back(data, data + hdr->caplen);
  }
  if (rc == PCAP_ERROR) throw PcapError(path + ": " + pcap_geterr(p.get()));
  return out;
}

std::vector<std::vector<std::uint8_t>> read_udp_payloads(const std::string& path) {
  const PcapContents pc = read_pcap(path);
  switch (pc.linktype) {
    case DLT_EN10MB:
    case DLT_NULL:
    case DLT_LOOP:
    case DLT_RAW:
    case DLT_IPV4:
    case DLT_IPV6:
    case DLT_LINUX_SLL:
      break;
    default:
      throw PcapError(path + ": unsupported link type " + std::to_string(pc.linktype) +
                      " (need Ethernet, loopback, raw IP or Linux cooked)");
  }
  std::vector<std::vector<std::uint8_t>> out;
  for (const Frame& f : pc.frames) {
    const long off = ip_offset(pc.linktype, f);
    if (off < 0 || f.size() <= static_cast<std::size_t>(off)) continue;
    const std::uint8_t* ip = f.data() + off;
    const std::size_t avail = f.size() - static_cast<std::size_t>(off);
    std::size_t l4 = 0;
    std::size_t ip_end = 0;
    if ((ip[0] >> 4) == 4) {
      if (avail < kIpv4HeaderBytes) continue;
      const std::size_t ihl = static_cast<std::size_t>(ip[0] & 0x0F) * 4;
      const std::size_t total = load_be16(ip + 2);
      const bool fragment = (load_be16(ip + 6) & 0x3FFF) != 0;
      if (ihl < kIpv4HeaderBytes || ip[9] != kIpProtoUdp || fragment || total > avail) continue;
      l4 = ihl;
      ip_end = total;
    } else if ((ip[0] >> 4) == 6) {
      if (avail < kIpv6HeaderBytes || ip[6] != kIpProtoUdp) continue;
      l4 = kIpv6HeaderBytes;
      ip_end = kIpv6HeaderBytes + load_be16(ip + 4);
      if (ip_end > avail) continue;
    } else {
      continue;
    }
    if (ip_end < l4 + kUdpHeaderBytes) continue;
    const std::size_t udp_len = load_be16(ip + l4 + 4);
    if (udp_len < kUdpHeaderBytes || l4 + udp_len > ip_end) continue;
    out.emplace_back(ip + l4 + kUdpHeaderBytes, ip + l4 + udp_len);
  }
  return out;
}

}  // namespace gw::perf
