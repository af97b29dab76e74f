// gossipsim-scaling --out DIR RUN_DIR...
// scale-N runs against N: reads each RUN_DIR/result.json (gossipsim's output)
// and writes DIR/scaling.svg (charts against the member count) and
// DIR/scaling.csv (the same figures, one row per run) and DIR/memory-law.txt
// (the heap peaks fitted against N; --memory-gib, --target-n).
// Exit: 0 ok, 2 bad arguments or a result that cannot be read.
#include <CLI/CLI.hpp>

#include <filesystem>
#include <fstream>
#include <iostream>
#include <stdexcept>

#include "perf/gossipsim/report.h"

int main(int argc, char** argv) {
  CLI::App app{"gossipsim-scaling: scale-N runs against N"};
  std::string out_dir;
  std::vector<std::string> runs;
  app.add_option("--out", out_dir, "output directory (created)")->required();
  app.add_option("runs", runs, "gossipsim --out directories (each with result.json)")->required();
  double memory_gib = 24;
  double target_n = 50000;
  app.add_option("--memory-gib", memory_gib, "memory the law's largest N must fit in, GiB (default 24)")
      ->check(CLI::Range(0.001, 1e9));
  app.add_option("--target-n", target_n, "member count the law extrapolates the heap to (default 50000)")
      ->check(CLI::Range(1.0, 1e12));
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    const int rc = app.exit(e);
    return rc == 0 ? 0 : 2;
  }
  std::vector<std::pair<std::string, nlohmann::json>> results;
  for (const std::string& run : runs) {
    const std::filesystem::path file = std::filesystem::path(run) / "result.json";
    std::ifstream in(file);
    if (!in) {
      std::cerr << "gossipsim-scaling: " << file.string() << ": cannot be read\n";
      return 2;
    }
    nlohmann::json j = nlohmann::json::parse(in, nullptr, false);
    if (j.is_discarded()) {
      std::cerr << "gossipsim-scaling: " << file.string() << ": not JSON\n";
      return 2;
    }
    results.emplace_back(file.string(), std::move(j));
  }
  std::string svg;
  std::string csv;
  std::string law;
  try {
    svg = gw::sim::scaling_svg(results);
    csv = gw::sim::scaling_csv(results);
    law = gw::sim::memory_law(results, memory_gib * (1ULL << 30), target_n);
  } catch (const std::runtime_error& e) {
    std::cerr << "gossipsim-scaling: " << e.what() << '\n';
    return 2;
  }
  std::error_code ec;
  std::filesystem::create_directories(out_dir, ec);
  if (ec) {
    std::cerr << "gossipsim-scaling: --out " << out_dir << ": " << ec.message() << '\n';
    return 2;
  }
  std::ofstream(std::filesystem::path(out_dir) / "scaling.svg") << svg;
  std::ofstream(std::filesystem::path(out_dir) / "scaling.csv") << csv;
  std::ofstream(std::filesystem::path(out_dir) / "memory-law.txt") << law;
  std::cout << csv << '\n' << law;
  return 0;
}
