// Fuzz target: classifier rules from the config (operator bytes) and the
// classifier scanning unkeyed payloads (network bytes).
//
// Input: NAME '\n' PATTERN '\n' PAYLOAD (missing parts are empty).
// Invariants beyond "no crash":
//   - check_classifier_rule() (what the config loader asks) and the
//     Classifier constructor agree on whether the rule is acceptable, and a
//     refusal names the rule;
//   - classify() returns a rule index or unmatched, and looks only at the
//     first scan_bytes of the payload;
//   - the built-in signatures agree with gossipgen's independent decode of
//     memberlist framing (the pcap cases' ground truth) on every payload.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "dataplane/classifier.h"
#include "perf/gossipgen/generator.h"

namespace {

void check(bool ok) {
  if (!ok) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const gw::dp::Classifier builtins({}, true, gw::dp::kMinScanBytes, 0);
  static gw::dp::Classifier::Scratch builtin_scratch = builtins.make_scratch();

  const std::string_view in(reinterpret_cast<const char*>(data), size);
  const std::size_t a = in.find('\n');
  const std::string_view name = in.substr(0, a);
  const std::string_view rest = a == std::string_view::npos ? std::string_view{} : in.substr(a + 1);
  const std::size_t b = rest.find('\n');
  const std::string_view pattern = rest.substr(0, b);
  const std::string_view payload_sv = b == std::string_view::npos ? std::string_view{} : rest.substr(b + 1);
  const auto* payload = reinterpret_cast<const std::uint8_t*>(payload_sv.data());

  // Built-ins against the independent decode.
  const std::uint32_t id = builtins.classify(builtin_scratch, payload, payload_sv.size());
  check(id <= builtins.unmatched());
  check(gw::perf::unkeyed_labels()[id] ==
        gw::perf::unkeyed_labels()[gw::perf::unkeyed_label(payload, payload_sv.size())]);

  // Patterns of real rules are short; long ones only slow the fuzzer down.
  if (pattern.size() > 256) return 0;
  const std::string why = gw::dp::check_classifier_rule(name, pattern);
  try {
    // Without the built-ins: compiling them on every input would halve the speed.
    // Budget 0: compiled in this process (no fork per input, coverage kept).
    const gw::dp::Classifier c({{std::string(name), std::string(pattern)}}, false, 96, 0);
    check(why.empty());
    gw::dp::Classifier::Scratch s = c.make_scratch();
    const std::uint32_t got = c.classify(s, payload, payload_sv.size());
    check(got <= c.unmatched());
    const std::size_t prefix = payload_sv.size() < c.scan_bytes() ? payload_sv.size() : c.scan_bytes();
    check(c.classify(s, payload, prefix) == got);
  } catch (const gw::dp::ClassifierError& e) {
    check(!why.empty());
    check(e.rule() == name);
  }
  return 0;
}
