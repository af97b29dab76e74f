// Fuzz target: the memberlist keyring file (memberlist.keyring_file,
// config/ml_keyring.h): JSON and base64 from a file an operator names.
// Invariants beyond "no crash, no exception": an accepted keyring has 1..16
// distinct keys of 16, 24 or 32 bytes; a refused one says why; the same
// bytes give the same answer twice.
#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "config/ml_keyring.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  std::string error;
  const auto keys = gw::config::parse_ml_keyring(text, &error);
  if (keys) {
    if (keys->empty() || keys->size() > gw::config::kMaxMlKeys) std::abort();
    for (std::size_t i = 0; i < keys->size(); ++i) {
      const std::size_t n = (*keys)[i].size();
      if (n != 16 && n != 24 && n != 32) std::abort();
      if (std::find(keys->begin() + static_cast<std::ptrdiff_t>(i) + 1, keys->end(), (*keys)[i]) != keys->end()) {
        std::abort();
      }
    }
  } else if (error.empty()) {
    std::abort();
  }
  std::string again_error;
  const auto again = gw::config::parse_ml_keyring(text, &again_error);
  if (again != keys || again_error != error) std::abort();
  return 0;
}
