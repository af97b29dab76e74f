// gossipsim --scenario FILE --out DIR [--seed N] [--scale F]
// Exit: 0 ok, 1 an `expect:` property failed, 2 bad scenario or arguments.
#include <CLI/CLI.hpp>

#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "perf/gossipsim/report.h"
#include "perf/gossipsim/scenario.h"
#include "perf/gossipsim/simulator.h"

namespace {
// The engines' tables are gigabytes at 10,000 members and every message
// lands on a cold one: with 4 KiB pages nearly each access also misses the
// TLB. glibc (2.35+) asks for transparent huge pages for its heap when the
// tunable glibc.malloc.hugetlb=1 is set, which it reads only at start-up; so
// gossipsim re-executes itself once with it (11 % faster at 5,000 members;
// results are identical). Not when GLIBC_TUNABLES is already set (the
// caller's choice stands) or GOSSIPSIM_NO_THP is; a failed exec just goes on.
void reexec_with_huge_pages(char** argv) {
  if (std::getenv("GLIBC_TUNABLES") != nullptr || std::getenv("GOSSIPSIM_NO_THP") != nullptr) return;
  if (setenv("GLIBC_TUNABLES", "glibc.malloc.hugetlb=1", 0) != 0) return;
  execv("/proc/self/exe", argv);
  unsetenv("GLIBC_TUNABLES");
}
}  // namespace

int main(int argc, char** argv) {
  reexec_with_huge_pages(argv);
  CLI::App app{"gossipsim: the membership engine on a virtual network"};
  std::string scenario_path;
  std::string out_dir;
  std::uint64_t seed = 0;
  double scale = 1.0;
  bool progress = false;
  app.add_option("--scenario", scenario_path, "scenario YAML file")->required();
  app.add_option("--out", out_dir, "output directory (created)")->required();
  auto* seed_opt = app.add_option("--seed", seed, "override the scenario's seed");
  app.add_option("--scale", scale, "multiply member/phantom/failure counts")->check(CLI::Range(0.0001, 1000.0));
  app.add_flag("--progress", progress, "print each sample to stderr");
  bool decode = false;
  app.add_flag("--decode", decode, "decode each datagram's codec bytes at the receiver (same results, slower)");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);
    return rc == 0 ? 0 : 2;
  }

  gw::sim::Scenario sc;
  try {
    sc = gw::sim::load_scenario_file(scenario_path);
  } catch (const gw::sim::ScenarioError& e) {
    std::cerr << "gossipsim: " << e.what() << '\n';
    return 2;
  }
  if (*seed_opt) sc.seed = seed;
  sc.decode_at_receiver = decode;
  if (scale != 1.0) gw::sim::scale_scenario(sc, scale);

  std::error_code ec;
  std::filesystem::create_directories(out_dir, ec);
  if (ec) {
    std::cerr << "gossipsim: --out " << out_dir << ": " << ec.message() << '\n';
    return 2;
  }
  const auto wall0 = std::chrono::steady_clock::now();
  gw::sim::SampleHook hook;
  if (progress)
    hook = [&](const gw::sim::Sample& s) {
      const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();
      std::cerr << "t=" << s.t_s << "s wall=" << wall << "s up=" << s.up << " view=" << s.view_min << ".." << s.view_max
                << " egress=" << s.egress_bytes_per_member_s << "B/s\n";
    };
  const gw::sim::Results r = gw::sim::run_scenario(sc, hook);
  const std::vector<std::string> bad = gw::sim::check_expectations(sc, r);
  nlohmann::json j = gw::sim::to_json(r, true);
  j["expectations_failed"] = bad;
  const std::filesystem::path dir(out_dir);
  std::ofstream(dir / "result.json") << j.dump(2) << '\n';
  std::ofstream(dir / "timeseries.csv") << gw::sim::to_csv(r);
  std::ofstream(dir / "plot.svg") << gw::sim::to_svg(r);
  for (const auto& [name, svg] : gw::sim::to_svgs(r)) std::ofstream(dir / name) << svg;
  std::cout << sc.name << ": " << r.members << " members, " << r.duration_s << " s simulated in " << r.perf.wall_s
            << " s wall (" << static_cast<std::uint64_t>(r.perf.sim_events_per_s) << " events/s); egress mean "
            << r.egress_bytes_per_s.mean << " B/s, p99 " << r.egress_bytes_per_s.p99 << "; false positives "
            << r.false_positives << "; resurrections " << r.resurrections << "; urgent drops " << r.urgent_drops
            << "; converged " << (r.converged_at_end ? "yes" : "no") << '\n';
  for (const std::string& b : bad) std::cerr << "gossipsim: expectation failed: " << b << '\n';
  return bad.empty() ? 0 : 1;
}
