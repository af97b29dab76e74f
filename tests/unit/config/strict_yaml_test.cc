// config/strict_yaml: what the config loader's tests do not already cover
// through parse_config, mainly read_number (only scenarios use it so far) and
// guarded. Links strict_yaml alone: no Hyperscan, no DPDK.
#include "config/strict_yaml.h"

#include <gtest/gtest.h>

#include <string>

namespace gw::config::strict {
namespace {

class TestError : public Error {
 public:
  using Error::Error;
};

// The error Reader("t.yaml") gives for `value: <text>` read as a number in
// [lo, hi], or "" if it reads; the value itself through `out`.
std::string number_error(const std::string& text, double lo, double hi, double* out = nullptr) {
  const Reader r("t.yaml");
  try {
    const Map m(r, r.load_document("value: " + text + "\n"), "", 1, {"value"}, false);
    const double v = r.read_number(m.require("value"), lo, hi);
    if (out != nullptr) *out = v;
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(StrictYaml, NumbersInDecimalNotation) {
  double v = 0;
  for (const auto& [text, want] : std::initializer_list<std::pair<const char*, double>>{{"0.25", 0.25},
                                                                                        {"1e-3", 0.001},
                                                                                        {"1E3", 1000},
                                                                                        {"5.", 5},
                                                                                        {".5", 0.5},
                                                                                        {"+2", 2},
                                                                                        {"007", 7},
                                                                                        {"2.5e+1", 25}}) {
    EXPECT_EQ(number_error(text, 0, 1e6, &v), "") << text;
    EXPECT_EQ(v, want) << text;
  }
  // Correctly rounded, as yaml-cpp's stream conversion was: 0.01 s is 1e7 ns.
  EXPECT_EQ(number_error("0.01", 0, 1, &v), "");
  EXPECT_EQ(v * 1e9, 0.01 * 1e9);
}

TEST(StrictYaml, NotNumbers) {
  for (const char* text :
       {"ten", "1e", ".", "e5", "0x10", "1_000", ".inf", "-.inf", ".nan", "nan", "inf", "1.2.3", "--1", "1e+"}) {
    EXPECT_EQ(number_error(text, 0, 1e6), std::string("t.yaml:1: value: expected a number, got '") + text + "'")
        << text;
  }
  EXPECT_EQ(number_error("\"0.5\"", 0, 1), "t.yaml:1: value: expected a number, got quoted string '0.5'");
  EXPECT_EQ(number_error("[1]", 0, 1), "t.yaml:1: value: expected a number, got a list");
  EXPECT_EQ(number_error("~", 0, 1), "t.yaml:1: value: expected a number, got null");
}

TEST(StrictYaml, NumberRangeIsInclusiveAndSaysTheBounds) {
  EXPECT_EQ(number_error("0.99", 0, 0.99), "");
  EXPECT_EQ(number_error("0", 0, 0.99), "");
  EXPECT_EQ(number_error("0.991", 0, 0.99), "t.yaml:1: value: out of range: got '0.991', must be 0..0.99");
  EXPECT_EQ(number_error("-1", 0, 1e7), "t.yaml:1: value: out of range: got '-1', must be 0..10000000");
  EXPECT_EQ(number_error("1e400", 0, 1e7), "t.yaml:1: value: out of range: got '1e400', must be 0..10000000");
}

TEST(StrictYaml, ListElementsArePathedAndLined) {
  const Reader r("t.yaml");
  const Map m(r, r.load_document("list:\n  - a\n  - b\n"), "", 1, {"list"}, false);
  const Field list = m.require("list");
  const Field second = element(list, 1);
  EXPECT_EQ(second.path, "list[1]");
  EXPECT_EQ(second.line, 3);
  EXPECT_EQ(r.read_string(second), "b");
}

TEST(StrictYaml, GuardedLetsOnlyTheCallersErrorOut) {
  // A yaml-cpp exception (here a syntax error) becomes a TestError at its line.
  try {
    guarded<TestError>("t.yaml", [] {
      const Reader r("t.yaml");
      return r.load_document("a: 1\nb: [2\n");
    });
    ADD_FAILURE() << "accepted";
  } catch (const TestError& e) {
    EXPECT_EQ(e.source(), "t.yaml");
    EXPECT_EQ(e.field(), "");
    EXPECT_GT(e.line(), 0);
    EXPECT_EQ(e.message().rfind("YAML syntax error: ", 0), 0u) << e.message();
  }
  // A reader's Error keeps its field and line.
  try {
    guarded<TestError>("t.yaml", [] {
      const Reader r("t.yaml");
      const Map m(r, r.load_document("a: 1\n"), "", 1, {"b"}, false);
      return 0;
    });
    ADD_FAILURE() << "accepted";
  } catch (const TestError& e) {
    EXPECT_EQ(e.field(), "a");
    EXPECT_EQ(e.line(), 1);
    EXPECT_EQ(std::string(e.what()), "t.yaml:1: a: unknown field 'a'; known fields: b");
  }
  try {
    guarded<TestError>("t.yaml", []() -> int { throw std::runtime_error("boom"); });
    ADD_FAILURE() << "accepted";
  } catch (const TestError& e) {
    EXPECT_EQ(std::string(e.what()), "t.yaml: cannot parse: boom");
  }
}

}  // namespace
}  // namespace gw::config::strict
