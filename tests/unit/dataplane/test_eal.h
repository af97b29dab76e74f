// EAL for a unit test that needs mempools and rings: one lcore, no
// hugepages, no PCI, no shared config or telemetry, a file prefix unique to
// this process, and its runtime directory removed on the way out.
#pragma once

#include <gtest/gtest.h>
#include <rte_eal.h>
#include <unistd.h>

#include <filesystem>
#include <iterator>
#include <string>

namespace gw::dp::test {

// From SetUpTestSuite; `name` tells concurrent test binaries' prefixes apart.
inline void start_test_eal(const std::string& name) {
  const std::string prefix = "--file-prefix=gw-" + name + "-" + std::to_string(getpid());
  const char* argv[] = {name.c_str(),
                        "-l",
                        "0",
                        "--no-huge",
                        "-m",
                        "64",
                        "--no-pci",
                        "--no-shconf",
                        "--no-telemetry",
                        prefix.c_str(),
                        "--log-level=lib.eal:error"};
  ASSERT_GE(rte_eal_init(static_cast<int>(std::size(argv)), const_cast<char**>(argv)), 0);
}

// From TearDownTestSuite.
inline void stop_test_eal() {
  const std::string runtime_dir = rte_eal_get_runtime_dir();
  rte_eal_cleanup();
  std::filesystem::remove_all(runtime_dir);  // --file-prefix's directory under /var/run/dpdk
}

}  // namespace gw::dp::test
