// Writes seed corpora for the fuzz targets from gossipgen's generator, so the
// fuzzers start from valid traffic and mutate inward:
//   OUT/ladder/    whole frames of every kind (IPv4 and IPv6), keys of fuzz_ladder
//   OUT/compound/  the opened plaintexts of the valid ones, and engine
//                  messages gossipgen does not make (builds, sync releases:
//                  listed, unlisted, over-long; a ping that asks for the
//                  build, acks that say one)
// usage: make_seeds OUT_DIR
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "control/codec.h"
#include "dataplane/ladder.h"
#include "perf/gossipgen/generator.h"

namespace fs = std::filesystem;

namespace {

void write(const fs::path& p, const std::uint8_t* data, std::size_t n) {
  std::ofstream(p, std::ios::binary).write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(n));
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: make_seeds OUT_DIR\n");
    return 2;
  }
  if (!gw::crypto::init()) return 1;
  const fs::path out = argv[1];
  fs::create_directories(out / "ladder");
  fs::create_directories(out / "compound");

  gw::crypto::KeyBytes k1{}, k2{}, k3{};
  k1.fill(0x11);  // the keys fuzz_ladder.cc holds
  k2.fill(0x22);
  k3.fill(0x33);  // its AES-256-GCM key, where the CPU can run it
  const bool aes = gw::crypto::aes256gcm_available();
  gw::crypto::Keyring ring;
  ring.add(gw::crypto::Key(k1, gw::crypto::Suite::kChaCha20Poly1305), true);
  ring.add(gw::crypto::Key(k2, gw::crypto::Suite::kChaCha20Poly1305), false);
  if (aes) ring.add(gw::crypto::Key(k3, gw::crypto::Suite::kAes256Gcm), false);

  std::size_t frames = 0;
  std::size_t plaintexts = 0;
  struct Pass {
    const char* dst;
    bool aes;
  };
  std::vector<Pass> passes = {{"10.0.0.1", false}, {"fd00::1", false}};
  if (aes) passes.push_back({"10.0.0.1", true});
  for (const Pass& pass : passes) {
    const char* dst = pass.dst;
    gw::perf::GenOptions opts;
    opts.seed = pass.aes ? 8 : 7;
    opts.mix = gw::perf::parse_mix(
        pass.aes ? "valid=20,forged_tag=5,forged_ciphertext=5"
                 : "valid=40,valid_secondary=10,foreign=5,unknown_key=5,forged_header=5,forged_tag=5,"
                   "forged_ciphertext=5,unkeyed_random=5,unkeyed_short=5,unkeyed_version=5,not_gossip=10,"
                   "malformed=30");
    opts.cluster = "fuzz";
    if (pass.aes) {
      opts.keys = {k3};
      opts.suite = gw::crypto::Suite::kAes256Gcm;
    } else {
      opts.keys = {k1, k2};
      opts.suite = gw::crypto::Suite::kChaCha20Poly1305;
    }
    opts.dst_ip = *gw::perf::parse_ip(dst);
    gw::dp::LadderConfig cfg;
    gw::dp::parse_endpoint(dst, opts.dst_port, &cfg.local);
    cfg.cluster_id = gw::crypto::derive_cluster_id("fuzz");
    cfg.keys = &ring;

    gw::perf::generate(opts, [&](const gw::perf::Packet& p) {
      write(out / "ladder" / ("frame-" + std::to_string(frames++)), p.frame.data(), p.frame.size());
      if (p.verdict != gw::perf::Verdict::kAccepted) return;
      auto copy = p.frame;
      const auto r = gw::dp::run_ladder(cfg, copy.data(), static_cast<std::uint32_t>(copy.size()));
      if (r.verdict != gw::dp::Verdict::kAccepted) return;
      write(out / "compound" / ("plain-" + std::to_string(plaintexts++)), copy.data() + r.plaintext_offset,
            r.plaintext_len);
    });
  }
  // What members run (Alive.build, MemberState.release, the syncs' releases).
  {
    namespace e = gw::cp::engine;
    const e::Address a1{{10, 0, 0, 2}, 7946};
    const e::Address a2{{10, 0, 0, 3}, 7946};
    std::vector<e::Compound> extra;
    extra.push_back({e::Alive{3, "gw-2", a1, {{"role", "db"}}, 1, "0.1.0+aa83e72b1c2d"}});
    extra.push_back({e::Alive{3, "gw-2", a1, {}, 1, std::string(e::kMaxBuildBytes + 1, 'v')}});
    e::SyncResponse r;
    r.seq_no = 1;
    r.source = "gw-2";
    r.parts = 1;
    r.releases = {{1, "0.1.0+aa83e72b1c2d"}, {2, std::string(e::kMaxBuildBytes + 1, 'w')}};
    r.members = {{"gw-2", a1, 3, e::MemberStatus::kAlive, {}, 1},
                 {"gw-3", a2, 4, e::MemberStatus::kAlive, {}, 2},
                 {"gw-4", a2, 5, e::MemberStatus::kAlive, {}, 7}};
    extra.push_back({r});
    e::SyncRequest q;
    q.seq_no = 2;
    q.source = "gw-2";
    q.join = true;
    q.parts = 1;
    q.members = r.members;
    q.releases = r.releases;
    extra.push_back({q});
    // The probe path: a ping that asks for the build (to fuzz_engine's own
    // name, so that it answers), acks that say one (a gateway's, an
    // over-long one), beside the Alive of the member they are about.
    extra.push_back({e::Ping{1, "fuzz-self", "gw-2", a1, 1765000000000ULL, true}});
    extra.push_back({e::Alive{3, "gw-2", a1, {}, 1}, e::Ack{1, "gw-2", "0.1.0+aa83e72b1c2d"}});
    extra.push_back({e::Ack{2, "gw-3", std::string(e::kMaxBuildBytes + 1, 'a')}});
    for (const e::Compound& c : extra) {
      const std::vector<std::uint8_t> bytes = gw::cp::encode(c);
      write(out / "compound" / ("plain-" + std::to_string(plaintexts++)), bytes.data(), bytes.size());
    }
  }
  std::printf("make_seeds: %zu frames, %zu plaintexts in %s\n", frames, plaintexts, out.c_str());
  return plaintexts == 0 ? 1 : 0;
}
