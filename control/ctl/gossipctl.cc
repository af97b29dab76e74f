// gossipctl: the operator's command for a gossipgw node.
//
//   gossipctl keygen --out FILE [--force]   write a new random key (mode 0600)
//   gossipctl keyid FILE...                 print the key id of key files
#include <CLI/CLI.hpp>

#include <cstdio>
#include <string>
#include <vector>

#include "crypto/keys.h"

namespace {

constexpr int kExitRuntime = 1;
constexpr int kExitUsage = 2;

int fail(int status, const std::string& message) {
  std::fprintf(stderr, "gossipctl: %s\n", message.c_str());
  return status;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"gossipctl: operate a gossipgw node"};
  app.require_subcommand(1);

  std::string out;
  bool force = false;
  CLI::App* keygen = app.add_subcommand("keygen", "write a new random 32-byte key file with mode 0600");
  keygen->add_option("--out,-o", out, "key file to create")->required();
  keygen->add_flag("--force", force, "replace an existing file");

  std::vector<std::string> files;
  CLI::App* keyid = app.add_subcommand("keyid", "print the key id of each key file");
  keyid->add_option("files", files, "key files")->required();

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::fprintf(stderr, "gossipctl: %s (try --help)\n", e.what());
    return kExitUsage;
  }

  if (!gw::crypto::init()) return fail(kExitRuntime, "libsodium failed to initialise");
  try {
    if (*keygen) {
      const std::uint32_t id = gw::crypto::write_key_file(out, force);
      std::printf("%s: key id %u\n", out.c_str(), id);
    } else if (*keyid) {
      for (const std::string& f : files) {
        std::printf("%s: key id %u\n", f.c_str(), gw::crypto::derive_key_id(gw::crypto::load_key_file(f)));
      }
    }
  } catch (const gw::crypto::KeyError& e) {
    return fail(kExitUsage, e.what());
  }
  return 0;
}
