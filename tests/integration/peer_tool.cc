// A scripted peer for testing a gateway's hosted membership engine through
// pcap files: `join` writes the datagrams a real engine sends when it joins
// through the gateway; `inspect` opens what the gateway transmitted (as the
// peer would) and summarises it as JSON.
//
//   peer_tool join    --config GW.yaml --peer-name N --peer-ip IP --out in.pcap
//   peer_tool inspect --config GW.yaml --peer-ip IP --in out.pcap
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <cstdio>
#include <ctime>
#include <map>
#include <set>
#include <span>
#include <string>

#include "config/keys.h"
#include "config/loader.h"
#include "control/codec.h"
#include "control/engine/engine.h"
#include "crypto/datagram.h"
#include "dataplane/ladder.h"
#include "perf/gossipgen/frames.h"
#include "perf/gossipgen/pcap_io.h"

namespace {

using namespace gw;

cp::engine::Address address_of(const perf::IpAddr& ip, std::uint16_t port) {
  cp::engine::Address a;
  a.ip.assign(ip.bytes.begin(), ip.bytes.begin() + (ip.v6 ? 16 : 4));
  a.port = port;
  return a;
}

int join(const config::Config& cfg, const std::string& name, const perf::IpAddr& peer_ip, const std::string& out) {
  const crypto::Keyring ring = config::load_keyring(cfg);
  const perf::IpAddr gw_ip = *perf::parse_ip(cfg.node.address);
  cp::engine::EngineConfig ec = cp::engine::EngineConfig::local();
  ec.name = name;
  ec.addr = address_of(peer_ip, cfg.node.port);
  cp::engine::Engine peer(ec, 1, 1'000'000'000ULL);
  const std::vector<cp::engine::Address> seeds{address_of(gw_ip, cfg.node.port)};
  peer.join(seeds, 1'000'000'000ULL);

  perf::PcapWriter pcap(out, 1700000000);
  crypto::NonceSource nonces(42);
  // Sealed 10 s ahead: the gateway drops datagrams outside its replay time
  // window, and (restart watermark) what was sealed before it started, and
  // it starts after this file is written.
  const auto unix_now = static_cast<std::uint32_t>(std::time(nullptr)) + 10;
  std::vector<std::uint8_t> sealed(2048);
  std::size_t frames = 0;
  for (const auto& o : peer.take_outbox()) {
    const std::vector<std::uint8_t> plain = cp::encode(o.messages);
    const crypto::SealParams params{crypto::derive_cluster_id(cfg.cluster.name), o.priority, unix_now,
                                    crypto::receiver_of(o.to.ip.data(), o.to.ip.size(), o.to.port)};
    const std::size_t n = crypto::seal_datagram(*ring.primary(), params, nonces, plain.data(), plain.size(),
                                                sealed.data(), sealed.size());
    perf::Flow flow;
    flow.src_mac = {0x02, 0, 0, 0, 0, 0x02};
    flow.dst_mac = {0x02, 0, 0, 0, 0, 0x01};
    flow.src = peer_ip;
    flow.dst = gw_ip;
    flow.src_port = cfg.node.port;
    flow.dst_port = cfg.node.port;
    pcap.write(perf::build_udp_frame(flow, std::span<const std::uint8_t>(sealed.data(), n)));
    ++frames;
  }
  pcap.close();
  std::printf("{\"frames\": %zu}\n", frames);
  return frames == 0 ? 1 : 0;
}

int inspect(const config::Config& cfg, const std::string& peer_ip, const std::string& in) {
  const crypto::Keyring ring = config::load_keyring(cfg);
  dp::LadderConfig lc;
  if (!dp::parse_endpoint(peer_ip.c_str(), cfg.node.port, &lc.local)) return 2;
  lc.cluster_id = crypto::derive_cluster_id(cfg.cluster.name);
  lc.keys = &ring;
  lc.max_payload_bytes = 65535;

  std::map<std::string, std::uint64_t> verdicts;
  std::map<std::string, std::uint64_t> messages;
  std::set<std::string> leaves;
  std::set<std::string> alives;
  std::size_t frames = 0;
  for (auto frame : perf::read_pcap(in).frames) {
    ++frames;
    const dp::LadderResult r = dp::run_ladder(lc, frame.data(), static_cast<std::uint32_t>(frame.size()));
    verdicts[std::string(dp::verdict_name(r.verdict))]++;
    if (r.verdict != dp::Verdict::kAccepted) continue;
    const auto d = cp::decode(std::span<const std::uint8_t>(frame.data() + r.plaintext_offset, r.plaintext_len));
    if (!d.ok()) {
      messages["decode_error"]++;
      continue;
    }
    for (const auto& m : d.messages) {
      messages[cp::engine::message_type_name(m.index())]++;
      if (const auto* l = std::get_if<cp::engine::Leave>(&m)) leaves.insert(l->node);
      if (const auto* a = std::get_if<cp::engine::Alive>(&m)) alives.insert(a->node);
    }
  }
  nlohmann::ordered_json j;
  j["frames"] = frames;
  j["verdicts"] = verdicts;
  j["messages"] = messages;
  j["leave_nodes"] = leaves;
  j["alive_nodes"] = alives;
  std::printf("%s\n", j.dump().c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"peer_tool: a scripted gossipgw peer over pcap files"};
  app.require_subcommand(1);
  std::string config_path, name, ip, file;
  auto* j = app.add_subcommand("join", "write the datagrams of a peer joining through the gateway");
  j->add_option("--config", config_path)->required();
  j->add_option("--peer-name", name)->required();
  j->add_option("--peer-ip", ip)->required();
  j->add_option("--out", file)->required();
  auto* i = app.add_subcommand("inspect", "open and summarise what the gateway sent to the peer");
  i->add_option("--config", config_path)->required();
  i->add_option("--peer-ip", ip)->required();
  i->add_option("--in", file)->required();
  CLI11_PARSE(app, argc, argv);
  if (!crypto::init()) return 1;
  try {
    const config::Config cfg = config::load_config(config_path);
    if (*j) {
      const auto peer_ip = perf::parse_ip(ip);
      if (!peer_ip) return 2;
      return join(cfg, name, *peer_ip, file);
    }
    return inspect(cfg, ip, file);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "peer_tool: %s\n", e.what());
    return 2;
  }
}
