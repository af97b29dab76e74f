#include "config/loader.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <array>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <random>
#include <string>
#include <string_view>
#include <vector>

namespace gw::config {
namespace {

constexpr const char* kSource = "test.yaml";
constexpr const char* kBaseDir = "/etc/gossipgw";

// The smallest valid file: lines 1..6. Tests that only care about later
// sections append to it, so their lines start at 7.
constexpr std::string_view kMinimal =
    "cluster:\n"
    "  name: demo\n"
    "  keys:\n"
    "    - file: keys/primary.key\n"
    "node:\n"
    "  address: 10.0.0.1\n";

std::string with_minimal(std::string_view extra) { return std::string(kMinimal) + std::string(extra); }

std::string host_name() {
  std::array<char, 256> buf{};
  EXPECT_EQ(gethostname(buf.data(), buf.size() - 1), 0);
  return std::string(buf.data());
}

struct Rejection {
  std::string field;
  int line = -1;
  std::string message;
  std::string what;
};

// Parses text that must be rejected and returns what the error said.
Rejection reject(std::string_view yaml) {
  try {
    parse_config(yaml, kSource, kBaseDir);
  } catch (const ConfigError& e) {
    return {e.field(), e.line(), e.message(), e.what()};
  }
  ADD_FAILURE() << "accepted:\n" << yaml;
  return {"<accepted>", -1, "", ""};
}

#define EXPECT_REJECTED(yaml, want_field, want_line, want_text)                                                       \
  do {                                                                                                                \
    const Rejection r_ = reject(yaml);                                                                                \
    EXPECT_EQ(r_.field, want_field) << r_.what;                                                                       \
    EXPECT_EQ(r_.line, want_line) << r_.what;                                                                         \
    EXPECT_NE(r_.message.find(want_text), std::string::npos) << "message lacks '" << (want_text) << "': " << r_.what; \
  } while (false)

void expect_defaults_except_required(const Config& c) {
  const Config d;
  EXPECT_EQ(c.cluster.suite, d.cluster.suite);
  EXPECT_EQ(c.node.port, d.node.port);
  EXPECT_EQ(c.lcores.control, d.lcores.control);
  EXPECT_EQ(c.lcores.workers, d.lcores.workers);
  EXPECT_EQ(c.rings.size, d.rings.size);
  EXPECT_EQ(c.dataplane.port_id, d.dataplane.port_id);
  EXPECT_EQ(c.dataplane.mbufs, d.dataplane.mbufs);
  EXPECT_EQ(c.dataplane.burst, d.dataplane.burst);
  EXPECT_EQ(c.dataplane.rx_descriptors, d.dataplane.rx_descriptors);
  EXPECT_EQ(c.dataplane.tx_descriptors, d.dataplane.tx_descriptors);
  EXPECT_EQ(c.dataplane.idle_backoff_us, d.dataplane.idle_backoff_us);
  EXPECT_EQ(c.limits.max_payload_bytes, d.limits.max_payload_bytes);
  EXPECT_EQ(c.log.level, d.log.level);
}

// --- Accepted files -------------------------------------------------------

TEST(ConfigLoader, ExampleFileParses) {
  const std::string dir = std::string(GW_SOURCE_ROOT) + "/config/examples";
  const Config c = load_config(dir + "/gossipgw.yaml");
  EXPECT_EQ(c.cluster.name, "demo");
  ASSERT_EQ(c.cluster.keys.size(), 1u);
  EXPECT_EQ(c.cluster.keys[0].file, "keys/primary.key");
  EXPECT_TRUE(c.cluster.keys[0].primary);
  EXPECT_EQ(c.node.address, "10.0.0.1");
  EXPECT_EQ(c.node.name, host_name());
  expect_defaults_except_required(c);
  EXPECT_EQ(c.base_dir, dir);
  EXPECT_EQ(resolve_path(c, c.cluster.keys[0].file), dir + "/keys/primary.key");
}

TEST(ConfigLoader, MinimalFileGetsDefaults) {
  const Config c = parse_config(kMinimal, kSource, kBaseDir);
  EXPECT_EQ(c.cluster.name, "demo");
  ASSERT_EQ(c.cluster.keys.size(), 1u);
  // One key and no primary flag: it is the primary.
  EXPECT_TRUE(c.cluster.keys[0].primary);
  EXPECT_EQ(c.node.name, host_name());
  EXPECT_EQ(c.base_dir, kBaseDir);
  expect_defaults_except_required(c);
  EXPECT_EQ(c.node.port, 7946);
  EXPECT_EQ(c.node.prefix_len, 0u);
  EXPECT_EQ(c.lcores.workers, std::vector<unsigned>{1});
  EXPECT_EQ(c.rings.size, 4096u);
  EXPECT_EQ(c.log.level, "info");
}

TEST(ConfigLoader, EveryFieldCanBeSet) {
  const Config c = parse_config(R"(cluster:
  name: prod.eu-west_1
  suite: chacha20poly1305
  keys:
    - {file: /etc/gw/old.key}
    - file: new.key
      primary: true
node:
  name: gw-7.example
  address: "2001:db8::7"
  port: 0x1f90
lcores:
  control: 2
  workers: [3, 4, 5]
rings:
  size: 0o200
dataplane:
  port_id: 1
  mbufs: 1048576
  burst: 512
  rx_descriptors: 64
  tx_descriptors: 16384
  idle_backoff_us: 100000
limits:
  max_payload_bytes: 1934
log:
  level: warn
)",
                                kSource, kBaseDir);
  EXPECT_EQ(c.cluster.name, "prod.eu-west_1");
  EXPECT_EQ(c.cluster.suite, SuiteChoice::kChaCha20Poly1305);
  ASSERT_EQ(c.cluster.keys.size(), 2u);
  EXPECT_EQ(c.cluster.keys[0].file, "/etc/gw/old.key");
  EXPECT_FALSE(c.cluster.keys[0].primary);
  EXPECT_EQ(c.cluster.keys[1].file, "new.key");
  EXPECT_TRUE(c.cluster.keys[1].primary);
  EXPECT_EQ(c.node.name, "gw-7.example");
  EXPECT_EQ(c.node.address, "2001:db8::7");
  EXPECT_EQ(c.node.port, 8080);
  EXPECT_EQ(c.lcores.control, 2u);
  EXPECT_EQ(c.lcores.workers, (std::vector<unsigned>{3, 4, 5}));
  EXPECT_EQ(c.rings.size, 128u);
  EXPECT_EQ(c.dataplane.port_id, 1);
  EXPECT_EQ(c.dataplane.mbufs, 1048576u);
  EXPECT_EQ(c.dataplane.burst, 512);
  EXPECT_EQ(c.dataplane.rx_descriptors, 64);
  EXPECT_EQ(c.dataplane.tx_descriptors, 16384);
  EXPECT_EQ(c.dataplane.idle_backoff_us, 100000u);
  EXPECT_EQ(c.limits.max_payload_bytes, 1934u);
  EXPECT_EQ(c.log.level, "warn");
}

// Issue 17: rings.size and limits.max_payload_bytes, each in range, could
// together ask for tens of GiB; the loader computes the memory and refuses
// what the machine cannot hold, saying how much is needed.
TEST(ConfigLoader, MemoryTheConfigNeedsIsComputedAndRefusedWhenItCannotFit) {
  Config c =
      parse_config(with_minimal("rings:\n  size: 1048576\nlimits:\n  max_payload_bytes: 1934\n"), kSource, kBaseDir);
  const MemoryNeed n = memory_needed(c);
  // One worker, 4 classes, 1,048,578 records of 31 lines (48 + 1920 bytes).
  EXPECT_EQ(n.rings, 4ULL * 1048578ULL * 31ULL * 64ULL);
  EXPECT_NO_THROW(check_memory(c, n.total(), kSource));
  try {
    check_memory(c, n.total() - 1, kSource);
    FAIL() << "accepted a config that does not fit";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.field(), "rings.size");
    EXPECT_NE(e.message().find("needs " + std::to_string((n.total() + (1 << 20) - 1) >> 20) + " MiB"),
              std::string::npos)
        << e.message();
  }
  // 64 workers of such rings are more than any machine this runs on has:
  // parse_config itself refuses them.
  std::string many = "lcores:\n  control: 0\n  workers: [";
  for (int i = 1; i <= 64; ++i) many += std::to_string(i) + (i < 64 ? ", " : "]\n");
  const Rejection r = reject(with_minimal(many + "rings:\n  size: 1048576\nlimits:\n  max_payload_bytes: 1934\n"));
  EXPECT_EQ(r.field, "rings.size");
  EXPECT_NE(r.message.find("MiB"), std::string::npos) << r.message;
}

TEST(ConfigLoader, SuiteNames) {
  EXPECT_EQ(parse_config(with_minimal(""), kSource, "").cluster.suite, SuiteChoice::kAuto);
  const std::string aes =
      "cluster:\n  name: a\n  suite: aes256gcm\n  keys: [{file: k}]\n"
      "node: {address: 10.0.0.1}\n";
  EXPECT_EQ(parse_config(aes, kSource, "").cluster.suite, SuiteChoice::kAes256Gcm);
}

TEST(ConfigLoader, EmptySectionMeansDefaults) {
  const Config c = parse_config(with_minimal("limits:\n  # max_payload_bytes: 9000\nlog:\n"), kSource, kBaseDir);
  EXPECT_EQ(c.limits.max_payload_bytes, 1400u);
  EXPECT_EQ(c.log.level, "info");
}

TEST(ConfigLoader, SpdlogLevelSpellingsAccepted) {
  for (const char* level : {"trace", "debug", "info", "warn", "warning", "err", "error", "critical", "off"}) {
    const Config c = parse_config(with_minimal(std::string("log: {level: ") + level + "}\n"), kSource, kBaseDir);
    EXPECT_EQ(c.log.level, level);
  }
}

TEST(ConfigLoader, BooleanSpellings) {
  for (const char* t : {"true", "True", "TRUE"}) {
    const Config c = parse_config(std::string("cluster:\n  name: a\n  keys:\n    - file: a\n"
                                              "      primary: ") +
                                      t + "\nnode: {address: 10.0.0.1}\n",
                                  kSource, "");
    EXPECT_TRUE(c.cluster.keys[0].primary) << t;
  }
}

// --- Whole-file rejections ------------------------------------------------

// Issue 51: the operator signing key's public half, 64 hex digits.
TEST(ConfigLoader, OperatorPublicKeyIsOptionalAndMustBe64HexDigits) {
  const Config none = parse_config(std::string(kMinimal), kSource, kBaseDir);
  EXPECT_TRUE(none.cluster.operator_public_key.empty());
  const std::string hex(64, 'a');
  const Config c = parse_config(
      "cluster:\n  name: demo\n  keys:\n    - file: keys/primary.key\n"
      "  operator_public_key: \"" +
          hex + "\"\nnode:\n  address: 10.0.0.1\n",
      kSource, kBaseDir);
  EXPECT_EQ(c.cluster.operator_public_key, hex);
  EXPECT_REJECTED(
      "cluster:\n  name: demo\n  keys:\n    - file: keys/primary.key\n"
      "  operator_public_key: \"abc\"\nnode:\n  address: 10.0.0.1\n",
      "cluster.operator_public_key", 5, "64 hex digits");
  EXPECT_REJECTED(
      "cluster:\n  name: demo\n  keys:\n    - file: keys/primary.key\n"
      "  operator_public_key: \"" +
          std::string(63, 'a') + "g\"\nnode:\n  address: 10.0.0.1\n",
      "cluster.operator_public_key", 5, "64 hex digits");
}

TEST(ConfigLoaderReject, EmptyDocument) {
  EXPECT_REJECTED("", "", 0, "empty document");
  EXPECT_REJECTED("# nothing but a comment\n\n", "", 0, "empty document");
  EXPECT_REJECTED("---\n...\n", "", 0, "empty document");
}

TEST(ConfigLoaderReject, TopLevelNotAMap) {
  EXPECT_REJECTED("- cluster\n- node\n", "", 1, "top level must be a map");
  EXPECT_REJECTED("\n\njust words\n", "", 3, "got 'just words'");
}

TEST(ConfigLoaderReject, YamlSyntaxErrorHasLine) {
  const Rejection r = reject("cluster:\n  name: demo\n  keys: [a\nnode: 1\n");
  EXPECT_EQ(r.field, "");
  EXPECT_EQ(r.line, 4) << r.what;
  EXPECT_NE(r.message.find("YAML syntax error"), std::string::npos) << r.what;
  EXPECT_EQ(r.what.rfind("test.yaml:4: YAML syntax error", 0), 0u) << r.what;
}

TEST(ConfigLoaderReject, SeveralDocuments) {
  // The second document starts at its `---` marker, line 7.
  EXPECT_REJECTED(with_minimal("---\nlog: {level: info}\n"), "", 7, "expected one YAML document, found more");
}

// yaml-cpp 0.7's LoadAll loops forever, allocating, on a stray flow token
// (jbeder/yaml-cpp#1040); the loader must stop and call it a syntax error.
TEST(ConfigLoaderReject, StrayFlowTokenIsASyntaxError) {
  EXPECT_REJECTED(",", "", 1, "YAML syntax error");
  EXPECT_REJECTED(with_minimal(",\n"), "", 7, "YAML syntax error");
}

// --- Unknown and duplicate keys --------------------------------------------

TEST(ConfigLoaderReject, UnknownTopLevelKeySuggestsClosest) {
  const Rejection r = reject(with_minimal("dataplnae:\n  burst: 32\n"));
  EXPECT_EQ(r.field, "dataplnae");
  EXPECT_EQ(r.line, 7);
  EXPECT_NE(r.message.find("did you mean 'dataplane'?"), std::string::npos) << r.what;
}

TEST(ConfigLoaderReject, UnknownNestedKeySuggestsClosest) {
  const Rejection r = reject(with_minimal("dataplane:\n  burst: 32\n  idle_backof_us: 5\n"));
  EXPECT_EQ(r.field, "dataplane.idle_backof_us");
  EXPECT_EQ(r.line, 9);
  EXPECT_NE(r.message.find("did you mean 'idle_backoff_us'?"), std::string::npos) << r.what;
  EXPECT_EQ(r.what,
            "test.yaml:9: dataplane.idle_backof_us: unknown field 'idle_backof_us'; "
            "did you mean 'idle_backoff_us'?");
}

TEST(ConfigLoaderReject, UnknownKeyFarFromAnyListsKnownFields) {
  const Rejection r = reject(with_minimal("rings:\n  capacity: 4096\n"));
  EXPECT_EQ(r.field, "rings.capacity");
  EXPECT_EQ(r.line, 8);
  EXPECT_EQ(r.message.find("did you mean"), std::string::npos) << r.what;
  EXPECT_NE(r.message.find("known fields: size"), std::string::npos) << r.what;
  // Within two edits of `log`, but nothing alike: no suggestion.
  const Rejection foo = reject(with_minimal("foo: 1\n"));
  EXPECT_EQ(foo.field, "foo");
  EXPECT_EQ(foo.line, 7);
  EXPECT_EQ(foo.message,
            "unknown field 'foo'; known fields: mode cluster node lcores rings dataplane limits classifier "
            "membership control metrics events log memberlist");
}

TEST(ConfigLoaderReject, UnknownKeyInsideKeyEntry) {
  EXPECT_REJECTED(
      "cluster:\n  name: demo\n  keys:\n    - file: a.key\n      primray: true\n"
      "node: {address: 10.0.0.1}\n",
      "cluster.keys[0].primray", 5, "did you mean 'primary'?");
}

TEST(ConfigLoaderReject, UnknownKeyWithUnprintableBytesIsEscaped) {
  const Rejection r = reject(with_minimal("\"lo\\ng\": 1\n"));
  EXPECT_EQ(r.field, "lo\\x0ag");
  EXPECT_EQ(r.line, 7);
  EXPECT_EQ(r.what.find('\n'), std::string::npos) << r.what;
}

TEST(ConfigLoaderReject, DuplicateKey) {
  EXPECT_REJECTED(with_minimal("node:\n  port: 1\n"), "node", 7, "first set on line 5");
  EXPECT_REJECTED(with_minimal("rings:\n  size: 64\n  size: 128\n"), "rings.size", 9, "first set on line 8");
}

TEST(ConfigLoaderReject, NonScalarKey) {
  EXPECT_REJECTED(with_minimal("rings:\n  ? [a, b]\n  : 1\n"), "rings", 8, "expected a field name, got a list");
}

TEST(ConfigLoaderReject, StateDirMustBeAbsolute) {
  EXPECT_REJECTED(with_minimal("control:\n  state_dir: var/lib/gw\n"), "control.state_dir", 8,
                  "must be an absolute directory path");
  EXPECT_EQ(parse_config(with_minimal("control:\n  state_dir: /var/lib/gw\n"), kSource, "").control.state_dir,
            "/var/lib/gw");
  EXPECT_EQ(parse_config(with_minimal(""), kSource, "").control.state_dir, "");
}

// --- Wrong types -----------------------------------------------------------

TEST(ConfigLoaderReject, StringWhereIntegerExpected) {
  EXPECT_REJECTED(with_minimal("dataplane:\n  burst: lots\n"), "dataplane.burst", 8, "expected an integer, got 'lots'");
}

TEST(ConfigLoaderReject, QuotedNumberIsAString) {
  EXPECT_REJECTED(with_minimal("rings:\n  size: \"4096\"\n"), "rings.size", 8,
                  "expected an integer, got quoted string '4096'");
}

TEST(ConfigLoaderReject, FloatWhereIntegerExpected) {
  EXPECT_REJECTED(with_minimal("limits:\n  max_payload_bytes: 1400.5\n"), "limits.max_payload_bytes", 8,
                  "expected an integer, got '1400.5'");
}

TEST(ConfigLoaderReject, NullWhereIntegerExpected) {
  EXPECT_REJECTED(with_minimal("dataplane:\n  mbufs:\n  burst: 32\n"), "dataplane.mbufs", 8,
                  "expected an integer, got null");
}

TEST(ConfigLoaderReject, MapWhereListExpected) {
  EXPECT_REJECTED(with_minimal("lcores:\n  workers:\n    first: 1\n"), "lcores.workers", 8,
                  "expected a list of lcore ids, got a map");
  EXPECT_REJECTED("cluster:\n  name: demo\n  keys:\n    file: a.key\nnode: {address: 10.0.0.1}\n", "cluster.keys", 3,
                  "expected a list of {file, primary} maps, got a map");
}

TEST(ConfigLoaderReject, ListOrScalarWhereMapExpected) {
  EXPECT_REJECTED(with_minimal("dataplane: [1, 2]\n"), "dataplane", 7, "expected a map, got a list");
  EXPECT_REJECTED(with_minimal("log: debug\n"), "log", 7, "expected a map, got 'debug'");
  EXPECT_REJECTED("cluster:\n  name: demo\n  keys:\n    - a.key\nnode: {address: 10.0.0.1}\n", "cluster.keys[0]", 4,
                  "expected a map, got 'a.key'");
}

TEST(ConfigLoaderReject, ListWhereStringExpected) {
  EXPECT_REJECTED("cluster:\n  name: [demo]\n  keys: [{file: k}]\nnode: {address: 10.0.0.1}\n", "cluster.name", 2,
                  "expected a string, got a list");
}

TEST(ConfigLoaderReject, NegativeForUnsigned) {
  EXPECT_REJECTED(with_minimal("lcores:\n  control: -1\n"), "lcores.control", 8,
                  "expected a non-negative integer, got '-1'");
  EXPECT_REJECTED(with_minimal("lcores:\n  control: 0\n  workers: [1, -2]\n"), "lcores.workers[1]", 9,
                  "expected a non-negative integer, got '-2'");
}

TEST(ConfigLoaderReject, OutOfIntegerTypeRange) {
  EXPECT_REJECTED(with_minimal("dataplane:\n  port_id: 65536\n"), "dataplane.port_id", 8,
                  "out of range: got '65536', must be 0..65535");
  EXPECT_REJECTED(with_minimal("lcores:\n  control: 4294967296\n"), "lcores.control", 8, "must be 0..4294967295");
  EXPECT_REJECTED(with_minimal("lcores:\n  control: 99999999999999999999999\n"), "lcores.control", 8,
                  "out of range: got '99999999999999999999999'");
}

TEST(ConfigLoaderReject, NonBoolean) {
  const std::string head = "cluster:\n  name: demo\n  keys:\n    - file: a.key\n      primary: ";
  const std::string tail = "\nnode: {address: 10.0.0.1}\n";
  EXPECT_REJECTED(head + "yes please" + tail, "cluster.keys[0].primary", 5, "expected a boolean, got 'yes please'");
  const Rejection r = reject(head + "yes please" + tail);
  EXPECT_EQ(r.what, "test.yaml:5: cluster.keys[0].primary: expected a boolean, got 'yes please'");
  // YAML 1.1 spellings are not booleans here.
  EXPECT_REJECTED(head + "yes" + tail, "cluster.keys[0].primary", 5, "got 'yes'");
  EXPECT_REJECTED(head + "1" + tail, "cluster.keys[0].primary", 5, "got '1'");
  EXPECT_REJECTED(head + "\"true\"" + tail, "cluster.keys[0].primary", 5, "got quoted string 'true'");
}

// --- Missing required fields -------------------------------------------------

TEST(ConfigLoaderReject, MissingRequired) {
  EXPECT_REJECTED("cluster:\n  keys: [{file: k}]\nnode: {address: 10.0.0.1}\n", "cluster.name", 1,
                  "required field missing");
  EXPECT_REJECTED("cluster:\n  name: demo\nnode: {address: 10.0.0.1}\n", "cluster.keys", 1, "required field missing");
  EXPECT_REJECTED("cluster:\n  name: demo\n  keys: [{file: k}]\nnode:\n  port: 1\n", "node.address", 4,
                  "required field missing");
  // A missing section has no line of its own.
  EXPECT_REJECTED("cluster:\n  name: demo\n  keys: [{file: k}]\n", "node.address", 0, "required field missing");
  EXPECT_REJECTED("node: {address: 10.0.0.1}\n", "cluster.name", 0, "required field missing");
  EXPECT_REJECTED(
      "cluster:\n  name: demo\n  keys:\n    - primary: true\n"
      "node: {address: 10.0.0.1}\n",
      "cluster.keys[0].file", 4, "required field missing");
}

// --- Out-of-range values -------------------------------------------------------

struct RangeCase {
  const char* yaml;  // appended to kMinimal, so line 7 is the section, 8 the field
  const char* field;
  const char* text;
};

TEST(ConfigLoaderReject, NumericRangesFromConfigH) {
  const std::vector<RangeCase> cases = {
      {"node: {address: 10.0.0.2, port: 0}\n", "node.port", "must be 1..65535"},
      {"rings:\n  size: 32\n", "rings.size", "must be 64..1048576"},
      {"rings:\n  size: 2097152\n", "rings.size", "must be 64..1048576"},
      {"dataplane:\n  mbufs: 1023\n", "dataplane.mbufs", "must be 1024..1048576"},
      {"dataplane:\n  mbufs: 1048577\n", "dataplane.mbufs", "must be 1024..1048576"},
      {"dataplane:\n  burst: 0\n", "dataplane.burst", "must be 1..512"},
      {"dataplane:\n  burst: 513\n", "dataplane.burst", "must be 1..512"},
      {"dataplane:\n  rx_descriptors: 63\n", "dataplane.rx_descriptors", "must be 64..16384"},
      {"dataplane:\n  rx_descriptors: 16385\n", "dataplane.rx_descriptors", "must be 64..16384"},
      {"dataplane:\n  tx_descriptors: 0\n", "dataplane.tx_descriptors", "must be 64..16384"},
      {"dataplane:\n  tx_descriptors: 32768\n", "dataplane.tx_descriptors", "must be 64..16384"},
      {"dataplane:\n  idle_backoff_us: 100001\n", "dataplane.idle_backoff_us", "must be 0..100000"},
      {"limits:\n  max_payload_bytes: 63\n", "limits.max_payload_bytes", "must be 64..1934"},
      {"limits:\n  max_payload_bytes: 1935\n", "limits.max_payload_bytes", "must be 64..1934"},
      {"limits:\n  max_payload_bytes: 9000\n", "limits.max_payload_bytes", "must be 64..1934"},
  };
  for (const RangeCase& c : cases) {
    SCOPED_TRACE(c.yaml);
    // node.port sits in a flow map on line 7; the others on line 8. The
    // duplicate `node` key is avoided by replacing the minimal node section.
    if (std::string_view(c.field) == "node.port") {
      EXPECT_REJECTED(std::string("cluster:\n  name: demo\n  keys: [{file: k}]\n") + c.yaml, c.field, 4, c.text);
    } else {
      EXPECT_REJECTED(with_minimal(c.yaml), c.field, 8, c.text);
    }
  }
  EXPECT_REJECTED(
      "cluster:\n  name: demo\n  keys: [{file: k}]\nnode:\n  address: ::1\n"
      "  port: 65536\n",
      "node.port", 6, "must be 1..65535");
}

TEST(ConfigLoaderReject, RingSizeNotPowerOfTwo) {
  EXPECT_REJECTED(with_minimal("rings:\n  size: 1000\n"), "rings.size", 8, "must be a power of two, got 1000");
}

TEST(ConfigLoaderReject, ClusterName) {
  const auto file = [](const std::string& name) {
    return "cluster:\n  keys: [{file: k}]\n  name: " + name + "\nnode: {address: 10.0.0.1}\n";
  };
  EXPECT_REJECTED(file("\"\""), "cluster.name", 3, "must be 1..64 bytes, got 0");
  EXPECT_REJECTED(file(std::string(65, 'a')), "cluster.name", 3, "must be 1..64 bytes, got 65");
  EXPECT_REJECTED(file("\"de mo\""), "cluster.name", 3, "invalid character ' ' at byte 2");
  EXPECT_REJECTED(file("d\xc3\xa9mo"), "cluster.name", 3, "invalid character '\\xc3' at byte 1");
  EXPECT_REJECTED(file("a/b"), "cluster.name", 3, "invalid character '/'");
  EXPECT_EQ(parse_config(file(std::string(64, 'a')), kSource, "").cluster.name, std::string(64, 'a'));
}

TEST(ConfigLoaderReject, NodeName) {
  const auto file = [](const std::string& name) {
    return "cluster: {name: demo, keys: [{file: k}]}\nnode:\n  address: 10.0.0.1\n  name: " + name + "\n";
  };
  EXPECT_REJECTED(file("\"\""), "node.name", 4, "must be 1..128 bytes, got 0");
  EXPECT_REJECTED(file(std::string(129, 'n')), "node.name", 4, "must be 1..128 bytes, got 129");
  EXPECT_REJECTED(file("\"gw 1\""), "node.name", 4, "invalid character ' ' at byte 2");
  EXPECT_REJECTED(file("\"gw\\t1\""), "node.name", 4, "invalid character '\\x09'");
  EXPECT_EQ(parse_config(file("gw-1@rack/3"), kSource, "").node.name, "gw-1@rack/3");
}

TEST(ConfigLoaderReject, NodePrefixLen) {
  const std::string head = "cluster:\n  name: demo\n  keys: [{file: k}]\n";
  EXPECT_REJECTED(head + "node: {address: 10.0.0.2, prefix_len: 33}\n", "node.prefix_len", 4, "must be 0..32");
  EXPECT_REJECTED(head + "node: {address: 'fd00::2', prefix_len: 24}\n", "node.prefix_len", 4,
                  "IPv4 node.address only");
  EXPECT_EQ(parse_config(head + "node: {address: 10.0.0.2, prefix_len: 24}\n", kSource, "").node.prefix_len, 24u);
}

// dataplane.neighbors (issue 17 item 6): pinned transmit MACs, checked up front.
TEST(ConfigLoaderReject, DataplaneNeighbors) {
  const std::string ok = with_minimal(
      "dataplane:\n  arp_hints: true\n  neighbors:\n    - {address: 10.0.0.2, mac: '02:00:00:00:00:02'}\n"
      "    - {address: 'fd00::9', mac: '0A:bb:cc:dd:ee:ff'}\n");
  const Config c = parse_config(ok, kSource, "");
  ASSERT_EQ(c.dataplane.neighbors.size(), 2u);
  EXPECT_EQ(c.dataplane.neighbors[0].address, "10.0.0.2");
  EXPECT_EQ(c.dataplane.neighbors[1].mac, (std::array<std::uint8_t, 6>{0x0A, 0xBB, 0xCC, 0xDD, 0xEE, 0xFF}));
  EXPECT_TRUE(c.dataplane.arp_hints);
  EXPECT_FALSE(parse_config(kMinimal, kSource, "").dataplane.arp_hints);  // off by default
  const auto entry = [](const std::string& e) { return with_minimal("dataplane:\n  neighbors:\n    - " + e + "\n"); };
  EXPECT_REJECTED(entry("{address: 10.0.0.2, mac: '02:00:00:00:00'}"), "dataplane.neighbors[0].mac", 9,
                  "expected a MAC address");
  EXPECT_REJECTED(entry("{address: 10.0.0.2, mac: '02:00:00:00:00:0g'}"), "dataplane.neighbors[0].mac", 9,
                  "expected a MAC address");
  EXPECT_REJECTED(entry("{address: 10.0.0.2, mac: 'ff:ff:ff:ff:ff:ff'}"), "dataplane.neighbors[0].mac", 9, "unicast");
  EXPECT_REJECTED(entry("{address: 10.0.0.2, mac: '01:00:5e:00:00:01'}"), "dataplane.neighbors[0].mac", 9, "unicast");
  EXPECT_REJECTED(entry("{address: host.example, mac: '02:00:00:00:00:02'}"), "dataplane.neighbors[0].address", 9,
                  "expected an IPv4 or IPv6 address");
  EXPECT_REJECTED(
      entry("{address: 10.0.0.2, mac: '02:00:00:00:00:02'}\n    - {address: 10.0.0.2, mac: '02:00:00:00:00:03'}"),
      "dataplane.neighbors[1].address", 10, "listed twice");
  EXPECT_REJECTED(entry("{address: 10.0.0.2}"), "dataplane.neighbors[0].mac", 9, "");
}

TEST(ConfigLoaderReject, NodeAddress) {
  const auto file = [](const std::string& address) {
    return "cluster: {name: demo, keys: [{file: k}]}\nnode:\n  port: 7946\n  address: " + address + "\n";
  };
  EXPECT_REJECTED(file("gw.example.com"), "node.address", 4, "expected an IPv4 or IPv6 address");
  EXPECT_REJECTED(file("10.0.0.256"), "node.address", 4, "got '10.0.0.256'");
  EXPECT_REJECTED(file("\"\""), "node.address", 4, "expected an IPv4 or IPv6 address");
  EXPECT_REJECTED(file("10.0.0.1/24"), "node.address", 4, "expected an IPv4 or IPv6 address");
  // A NUL would cut the string short for inet_pton.
  EXPECT_REJECTED(file("\"10.0.0.1\\0junk\""), "node.address", 4, "got '10.0.0.1\\x00junk'");
  EXPECT_EQ(parse_config(file("\"fe80::1\""), kSource, "").node.address, "fe80::1");
  EXPECT_EQ(parse_config(file("192.168.1.1"), kSource, "").node.address, "192.168.1.1");
}

TEST(ConfigLoaderReject, Workers) {
  EXPECT_REJECTED(with_minimal("lcores:\n  workers: [1, 2, 1]\n"), "lcores.workers[2]", 8,
                  "lcore 1 is also lcores.workers[0]");
  EXPECT_REJECTED(with_minimal("lcores:\n  control: 2\n  workers:\n    - 1\n    - 2\n"), "lcores.workers[1]", 11,
                  "lcore 2 is lcores.control");
  // The default control lcore (0) counts too.
  EXPECT_REJECTED(with_minimal("lcores:\n  workers: [0]\n"), "lcores.workers[0]", 8, "is lcores.control");
  EXPECT_REJECTED(with_minimal("lcores:\n  workers: []\n"), "lcores.workers", 8, "must have 1..64 entries, got 0");
  std::string many = "lcores:\n  workers: [";
  for (unsigned i = 1; i <= 65; ++i) many += std::to_string(i) + (i < 65 ? ", " : "]\n");
  EXPECT_REJECTED(with_minimal(many), "lcores.workers", 8, "must have 1..64 entries, got 65");
}

TEST(ConfigLoaderReject, KeyCountAndPrimary) {
  const auto file = [](const std::string& keys) {
    return "node: {address: 10.0.0.1}\ncluster:\n  name: demo\n  keys:" + keys + "\n";
  };
  EXPECT_REJECTED(file(" []"), "cluster.keys", 4, "must have 1..8 entries, got 0");
  std::string nine;
  for (int i = 0; i < 9; ++i) nine += "\n    - file: k" + std::to_string(i);
  EXPECT_REJECTED(file(nine), "cluster.keys", 4, "must have 1..8 entries, got 9");
  EXPECT_REJECTED(file("\n    - file: a\n      primary: true\n    - file: b\n      primary: true"),
                  "cluster.keys[1].primary", 8, "more than one primary key");
  EXPECT_REJECTED(file("\n    - file: a\n    - file: b"), "cluster.keys", 4, "no key has primary: true");
  // A lone key explicitly marked not primary leaves nothing to seal with.
  EXPECT_REJECTED(file("\n    - file: a\n      primary: false"), "cluster.keys", 4, "no key has primary: true");
  EXPECT_REJECTED(file("\n    - file: \"\""), "cluster.keys[0].file", 5, "must not be empty");
}

TEST(ConfigLoaderReject, DuplicateKeyFiles) {
  const auto file = [](const std::string& keys) {
    return "node: {address: 10.0.0.1}\ncluster:\n  name: demo\n  keys:" + keys + "\n";
  };
  EXPECT_REJECTED(file("\n    - file: a.key\n      primary: true\n    - file: a.key"), "cluster.keys[1].file", 7,
                  "same key file as cluster.keys[0].file");
  // Spelt differently, same file once resolved against base_dir.
  EXPECT_REJECTED(file("\n    - file: keys/a.key\n      primary: true\n    - file: ./keys/a.key"),
                  "cluster.keys[1].file", 7, "same key file as cluster.keys[0].file");
  EXPECT_REJECTED(file("\n    - file: /etc/gossipgw/k\n      primary: true\n    - file: k"), "cluster.keys[1].file", 7,
                  "same key file as cluster.keys[0].file");
}

TEST(ConfigLoaderReject, LogLevel) {
  EXPECT_REJECTED(with_minimal("log:\n  level: verbose\n"), "log.level", 8, "unknown level 'verbose'");
  EXPECT_REJECTED(with_minimal("log:\n  level: INFO\n"), "log.level", 8, "unknown level 'INFO'");
}

TEST(ConfigLoaderReject, Suite) {
  EXPECT_REJECTED(
      "cluster:\n  name: demo\n  suite: aes128gcm\n  keys: [{file: k}]\n"
      "node: {address: 10.0.0.1}\n",
      "cluster.suite", 3, "unknown suite 'aes128gcm'");
}

// --- Files ---------------------------------------------------------------------

class ConfigLoaderFile : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string tmpl = ::testing::TempDir() + "gw_config_XXXXXX";
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override {
    for (const std::string& f : files_) ::unlink(f.c_str());
    ::rmdir(dir_.c_str());
  }
  std::string write(const std::string& name, std::string_view text) {
    const std::string path = dir_ + "/" + name;
    std::ofstream(path, std::ios::binary) << text;
    files_.push_back(path);
    return path;
  }

  std::string dir_;
  std::vector<std::string> files_;
};

TEST_F(ConfigLoaderFile, MissingFileNamesThePath) {
  const std::string path = dir_ + "/absent.yaml";
  try {
    load_config(path);
    FAIL() << "loaded a missing file";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.source(), path);
    EXPECT_EQ(e.field(), "");
    EXPECT_EQ(e.line(), 0);
    EXPECT_EQ(std::string(e.what()), path + ": cannot open config file: No such file or directory");
  }
}

TEST_F(ConfigLoaderFile, DirectoryIsNotAConfig) {
  try {
    load_config(dir_);
    FAIL() << "loaded a directory";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.source(), dir_);
    EXPECT_NE(std::string(e.what()).find("Is a directory"), std::string::npos) << e.what();
  }
}

TEST_F(ConfigLoaderFile, OversizedFileRejected) {
  const std::string path = write("big.yaml", with_minimal("#" + std::string(1 << 20, 'x')));
  try {
    load_config(path);
    FAIL() << "loaded an oversized file";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("larger than 1 MiB"), std::string::npos) << e.what();
  }
}

TEST_F(ConfigLoaderFile, ErrorsNameTheFileAndLine) {
  const std::string path = write("bad.yaml", with_minimal("log:\n  level: loud\n"));
  try {
    load_config(path);
    FAIL() << "accepted a bad level";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.field(), "log.level");
    EXPECT_EQ(e.line(), 8);
    EXPECT_EQ(std::string(e.what()).rfind(path + ":8: log.level: ", 0), 0u) << e.what();
  }
}

TEST_F(ConfigLoaderFile, BaseDirIsTheFilesDirectory) {
  const std::string path = write("gw.yaml", kMinimal);
  const Config c = load_config(path);
  EXPECT_EQ(c.base_dir, dir_);
  EXPECT_EQ(resolve_path(c, "keys/primary.key"), dir_ + "/keys/primary.key");
  EXPECT_EQ(resolve_path(c, "/abs/k.key"), "/abs/k.key");
}

TEST(ConfigLoader, ResolvePath) {
  Config c;
  c.base_dir = "/etc/gossipgw";
  EXPECT_EQ(resolve_path(c, "keys/a.key"), "/etc/gossipgw/keys/a.key");
  EXPECT_EQ(resolve_path(c, "/var/lib/a.key"), "/var/lib/a.key");
  c.base_dir.clear();
  EXPECT_EQ(resolve_path(c, "keys/a.key"), "keys/a.key");
}

// --- Arbitrary bytes -------------------------------------------------------------

// Parses `text`; anything but success or ConfigError fails the test (and a
// crash fails the whole binary). Errors must stay one printable line.
void expect_only_config_error(const std::string& text) {
  try {
    parse_config(text, kSource, kBaseDir);
  } catch (const ConfigError& e) {
    const std::string what = e.what();
    EXPECT_EQ(what.find('\n'), std::string::npos) << what;
    EXPECT_GE(e.line(), 0);
  } catch (const std::exception& e) {
    ADD_FAILURE() << "non-ConfigError exception: " << e.what();
  } catch (...) {
    ADD_FAILURE() << "non-standard exception";
  }
}

TEST(ConfigLoaderRobustness, HostileInputs) {
  const std::vector<std::string> inputs = {
      std::string(100000, '['),
      std::string(100000, '{'),
      [] {
        std::string s;
        for (int i = 0; i < 5000; ++i) s += "{a: ";
        return s;
      }(),
      [] {
        std::string s;
        for (int i = 0; i < 3000; ++i) s += std::string(static_cast<std::size_t>(i), ' ') + "a:\n";
        return s;
      }(),
      [] {
        std::string s;
        for (int i = 0; i < 3000; ++i) s += std::string(static_cast<std::size_t>(i), ' ') + "- ";
        return s;
      }(),
      "cluster: &a [*a]\n",
      "cluster: &a {name: *a}\n",
      with_minimal("lcores: {workers: &w [*w]}\n"),
      "cluster: *undefined\n",
      std::string("cluster:\0\n  name: x\n", 21),
      "\xff\xfe\x00\x00",
      "\xef\xbb\xbf",
      "\xfe\xff\x00c\x00:",
      "!!binary aGVsbG8=",
      "%YAML 9.9\n---\na: 1\n",
      "%TAG ! tag:x,2000:\n--- !foo\nx: 1\n",
      "cluster: !!map\n  name: !!seq x\n",
      "? ? ? ? ? ? ? ?\n",
      "a: |\n  \x01\x02\n",
      "\t\tcluster:\n",
      "cluster:\n  name: \"\\uD800\"\n",
  };
  for (const std::string& in : inputs) expect_only_config_error(in);
}

TEST(ConfigLoaderRobustness, RandomBytesAndMutationsOnlyThrowConfigError) {
  std::mt19937 rng(0x6055);  // fixed seed: failures reproduce
  std::string example;
  if (std::FILE* f = std::fopen(GW_SOURCE_ROOT "/config/examples/gossipgw.yaml", "rb")) {
    std::array<char, 4096> buf{};
    std::size_t n = 0;
    while ((n = std::fread(buf.data(), 1, buf.size(), f)) > 0) example.append(buf.data(), n);
    std::fclose(f);
  }
  ASSERT_FALSE(example.empty());
  const std::string_view alphabet = "[]{}:-,?&*!|>'\"%@`#\n \t0123456789abc\\";
  std::uniform_int_distribution<int> byte(0, 255);
  for (int round = 0; round < 2000; ++round) {
    std::string text;
    if (round % 2 == 0) {
      const std::size_t n = static_cast<std::size_t>(rng() % 256);
      for (std::size_t i = 0; i < n; ++i) {
        text += rng() % 2 == 0 ? static_cast<char>(byte(rng)) : alphabet[rng() % alphabet.size()];
      }
    } else {
      text = example;
      const int edits = 1 + static_cast<int>(rng() % 8);
      for (int e = 0; e < edits; ++e) {
        const std::size_t at = rng() % text.size();
        switch (rng() % 3) {
          case 0:
            text[at] = alphabet[rng() % alphabet.size()];
            break;
          case 1:
            text.insert(at, 1, static_cast<char>(byte(rng)));
            break;
          default:
            text.erase(at, 1 + rng() % 16);
            break;
        }
        if (text.empty()) text.push_back('x');
      }
    }
    expect_only_config_error(text);
  }
}

}  // namespace
}  // namespace gw::config

// --- membership -------------------------------------------------------------

namespace gw::config {
namespace {

TEST(ConfigLoaderMembership, DefaultsAndEveryField) {
  const Config d = parse_config(with_minimal(""), kSource, kBaseDir);
  EXPECT_TRUE(d.membership.enabled);
  EXPECT_EQ(d.membership.preset, "lan");
  EXPECT_TRUE(d.membership.seeds.empty());
  EXPECT_EQ(d.membership.leave_timeout_ms, 3000u);
  EXPECT_EQ(d.membership.reconnect_timeout_s, 86400u);

  const Config c = parse_config(with_minimal("membership:\n"
                                             "  enabled: false\n"
                                             "  preset: local\n"
                                             "  seeds: [\"10.0.0.2:7946\", \"[fd00::2]:8000\"]\n"
                                             "  tags: {role: control-plane, zone: a}\n"
                                             "  leave_timeout_ms: 500\n"
                                             "  reconnect_timeout_s: 3600\n"),
                                kSource, kBaseDir);
  EXPECT_FALSE(c.membership.enabled);
  EXPECT_EQ(c.membership.preset, "local");
  ASSERT_EQ(c.membership.seeds.size(), 2u);
  EXPECT_EQ(c.membership.seeds[0], (base::Address{{10, 0, 0, 2}, 7946}));
  EXPECT_EQ(c.membership.seeds[1], (base::Address{*base::parse_ip("fd00::2"), 8000}));
  EXPECT_EQ(c.membership.seeds[1].ip.size(), 16u);
  ASSERT_EQ(c.membership.tags.size(), 2u);
  EXPECT_EQ(c.membership.tags[0], (std::pair<std::string, std::string>{"role", "control-plane"}));
  EXPECT_EQ(c.membership.leave_timeout_ms, 500u);
  EXPECT_EQ(c.membership.reconnect_timeout_s, 3600u);
}

// Every seed is asked every join round (the engine asks 16 addresses, 4 kept
// for `gossipctl join`): more than that is refused at load, naming the
// limit, where it was accepted and then silently left out.
TEST(ConfigLoaderMembership, SeedsAboveWhatAJoinRoundAsksAreRefusedNamingTheLimit) {
  auto seeds = [](std::size_t n) {
    std::string list;
    for (std::size_t i = 1; i <= n; ++i) list += (i > 1 ? ", " : "") + std::string("\"10.0.1.") + std::to_string(i) + ":7946\"";
    return with_minimal("membership:\n  seeds: [" + list + "]\n");
  };
  const Config c = parse_config(seeds(MembershipConfig::kMaxSeeds), kSource, kBaseDir);
  EXPECT_EQ(c.membership.seeds.size(), 12u);
  EXPECT_REJECTED(seeds(13), "membership.seeds", 8, "at most 12 seeds, got 13");
  EXPECT_REJECTED(seeds(64), "membership.seeds", 8, "at most 12 seeds, got 64");
}

TEST(ConfigLoaderMembership, BadValuesNameTheField) {
  EXPECT_REJECTED(with_minimal("membership:\n  preset: fast\n"), "membership.preset", 8, "unknown preset");
  EXPECT_REJECTED(with_minimal("membership:\n  seeds: [\"10.0.0.2\"]\n"), "membership.seeds[0]", 8, "IP:PORT");
  EXPECT_REJECTED(with_minimal("membership:\n  seeds: [\"host:7946\"]\n"), "membership.seeds[0]", 8,
                  "not an IPv4 or IPv6 address");
  EXPECT_REJECTED(with_minimal("membership:\n  seeds: [\"10.0.0.2:0\"]\n"), "membership.seeds[0]", 8,
                  "port must be 1..65535");
  EXPECT_REJECTED(with_minimal("membership:\n  seeds: [\"fd00::2:7946\"]\n"), "membership.seeds[0]", 8,
                  "IPv6 in brackets");
  EXPECT_REJECTED(with_minimal("membership:\n  seeds: 10.0.0.2:7946\n"), "membership.seeds", 8, "expected a list");
  EXPECT_REJECTED(with_minimal("membership:\n  tags: [a, b]\n"), "membership.tags", 8, "expected a map");
  EXPECT_REJECTED(with_minimal("membership:\n  tags: {role: " + std::string(300, 'x') + "}\n"), "membership.tags.role",
                  8, "at most 256 bytes");
  EXPECT_REJECTED(with_minimal("membership:\n  leave_timeout_ms: 70000\n"), "membership.leave_timeout_ms", 8, "");
  EXPECT_REJECTED(with_minimal("membership:\n  reconnect_timeout_s: 59\n"), "membership.reconnect_timeout_s", 8, "");
  EXPECT_REJECTED(with_minimal("membership:\n  enabled: yes\n"), "membership.enabled", 8, "boolean");
  EXPECT_REJECTED(with_minimal("membership:\n  allowed_name_prefixes: gw-\n"), "membership.allowed_name_prefixes", 8,
                  "expected a list");
  EXPECT_REJECTED(with_minimal("membership:\n  allowed_name_prefixes: [\"\"]\n"), "membership.allowed_name_prefixes[0]",
                  8, "1..128 bytes");
  EXPECT_REJECTED(with_minimal("membership:\n  admit_rate: 0\n"), "membership.admit_rate", 8, "");
  EXPECT_REJECTED(with_minimal("membership:\n  required_tags: [x]\n"), "membership.required_tags", 8, "expected a map");
}

TEST(ConfigLoaderMembership, AdmissionPolicy) {
  const Config c = parse_config(with_minimal("membership:\n"
                                             "  allowed_name_prefixes: [gw-, edge-]\n"
                                             "  required_tags: {cluster-role: member}\n"
                                             "  admit_rate: 50\n"
                                             "  admit_burst: 75\n"),
                                kSource, kBaseDir);
  EXPECT_EQ(c.membership.allowed_name_prefixes, (std::vector<std::string>{"gw-", "edge-"}));
  ASSERT_EQ(c.membership.required_tags.size(), 1u);
  EXPECT_EQ(c.membership.required_tags[0].first, "cluster-role");
  EXPECT_EQ(c.membership.admit_rate, 50u);
  EXPECT_EQ(c.membership.admit_burst, 75u);
}

TEST(ConfigLoaderMembership, EgressBudget) {
  const Config d = parse_config(with_minimal(""), kSource, kBaseDir);
  EXPECT_EQ(d.membership.egress_bytes_per_sec, 1u << 20);
  const Config c = parse_config(with_minimal("membership:\n  egress_bytes_per_sec: 0\n  egress_burst_bytes: 2048\n"),
                                kSource, kBaseDir);
  EXPECT_EQ(c.membership.egress_bytes_per_sec, 0u);
  EXPECT_EQ(c.membership.egress_burst_bytes, 2048u);
  EXPECT_REJECTED(with_minimal("membership:\n  egress_burst_bytes: 10\n"), "membership.egress_burst_bytes", 8, "");
  EXPECT_REJECTED(with_minimal("membership:\n  egress_queue_bytes: -1\n"), "membership.egress_queue_bytes", 8, "");
  EXPECT_EQ(d.membership.egress_max_age_ms, 5000u);
  EXPECT_EQ(parse_config(with_minimal("membership:\n  egress_max_age_ms: 250\n"), kSource, kBaseDir)
                .membership.egress_max_age_ms,
            250u);
  EXPECT_REJECTED(with_minimal("membership:\n  egress_max_age_ms: 5\n"), "membership.egress_max_age_ms", 8, "");
}

// --- limits (replay, rate limits) and classifier --------------------------

TEST(ConfigLoaderGuard, DefaultsAndTheExampleAgree) {
  const Config d = parse_config(with_minimal(""), kSource, kBaseDir);
  EXPECT_EQ(d.limits.replay_window_s, 30u);
  EXPECT_EQ(d.limits.replay_senders, 4096u);
  EXPECT_EQ(d.limits.known_rate_pps, 2000u);
  EXPECT_EQ(d.limits.known_burst, 4000u);
  EXPECT_EQ(d.limits.unknown_rate_pps, 100u);
  EXPECT_EQ(d.limits.unknown_burst, 200u);
  EXPECT_EQ(d.limits.sources, 65536u);
  EXPECT_TRUE(d.classifier.enabled);
  EXPECT_TRUE(d.classifier.builtins);
  EXPECT_EQ(d.classifier.scan_bytes, 64u);
  EXPECT_EQ(d.classifier.max_scans_per_burst, 4u);
  EXPECT_EQ(d.classifier.max_scans_per_sec, 100000u);
  EXPECT_TRUE(d.classifier.rules.empty());
  // The example file spells every default out.
  const Config e = load_config(std::string(GW_SOURCE_ROOT) + "/config/examples/gossipgw.yaml");
  EXPECT_EQ(e.limits.replay_window_s, d.limits.replay_window_s);
  EXPECT_EQ(e.limits.replay_senders, d.limits.replay_senders);
  EXPECT_EQ(e.limits.replay_senders_per_source, d.limits.replay_senders_per_source);
  EXPECT_EQ(d.limits.replay_senders_per_source, 16u);
  EXPECT_EQ(e.limits.known_rate_pps, d.limits.known_rate_pps);
  EXPECT_EQ(e.limits.known_burst, d.limits.known_burst);
  EXPECT_EQ(e.limits.unknown_rate_pps, d.limits.unknown_rate_pps);
  EXPECT_EQ(e.limits.unknown_burst, d.limits.unknown_burst);
  EXPECT_EQ(e.limits.sources, d.limits.sources);
  EXPECT_EQ(e.classifier.enabled, d.classifier.enabled);
  EXPECT_EQ(e.classifier.builtins, d.classifier.builtins);
  EXPECT_EQ(e.classifier.scan_bytes, d.classifier.scan_bytes);
  EXPECT_EQ(e.classifier.max_scans_per_burst, d.classifier.max_scans_per_burst);
  EXPECT_EQ(e.classifier.max_scans_per_sec, d.classifier.max_scans_per_sec);
  EXPECT_TRUE(e.classifier.rules.empty());
}

TEST(ConfigLoaderGuard, EveryFieldCanBeSet) {
  const Config c = parse_config(with_minimal("limits:\n"
                                             "  replay_window_s: 5\n"
                                             "  replay_senders: 64\n"
                                             "  known_rate_pps: 7\n"
                                             "  known_burst: 8\n"
                                             "  unknown_rate_pps: 1\n"
                                             "  unknown_burst: 2\n"
                                             "  sources: 1048576\n"
                                             "classifier:\n"
                                             "  enabled: false\n"
                                             "  builtins: false\n"
                                             "  scan_bytes: 1500\n"
                                             "  max_scans_per_burst: 0\n"
                                             "  max_scans_per_sec: 0\n"
                                             "  rules:\n"
                                             "    - name: v2\n"
                                             "      pattern: '^GSGW\\x02'\n"
                                             "    - {name: consul_rpc, pattern: 'Consul'}\n"),
                                kSource, kBaseDir);
  EXPECT_EQ(c.limits.replay_window_s, 5u);
  EXPECT_EQ(c.limits.replay_senders, 64u);
  EXPECT_EQ(c.limits.known_rate_pps, 7u);
  EXPECT_EQ(c.limits.known_burst, 8u);
  EXPECT_EQ(c.limits.unknown_rate_pps, 1u);
  EXPECT_EQ(c.limits.unknown_burst, 2u);
  EXPECT_EQ(c.limits.sources, 1048576u);
  EXPECT_FALSE(c.classifier.enabled);
  EXPECT_FALSE(c.classifier.builtins);
  EXPECT_EQ(c.classifier.scan_bytes, 1500u);
  EXPECT_EQ(c.classifier.max_scans_per_burst, 0u);
  EXPECT_EQ(c.classifier.max_scans_per_sec, 0u);
  ASSERT_EQ(c.classifier.rules.size(), 2u);
  EXPECT_EQ(c.classifier.rules[0].name, "v2");
  EXPECT_EQ(c.classifier.rules[0].pattern, "^GSGW\\x02");
  EXPECT_EQ(c.classifier.rules[1].name, "consul_rpc");
}

TEST(ConfigLoaderGuard, OutOfRangeLimitsAreRejected) {
  EXPECT_REJECTED(with_minimal("limits:\n  replay_window_s: 0\n"), "limits.replay_window_s", 8, "out of range");
  EXPECT_REJECTED(with_minimal("limits:\n  replay_window_s: 3601\n"), "limits.replay_window_s", 8, "1..3600");
  EXPECT_REJECTED(with_minimal("limits:\n  replay_senders: 63\n"), "limits.replay_senders", 8, "64..1048576");
  EXPECT_REJECTED(with_minimal("limits:\n  replay_senders_per_source: 0\n"), "limits.replay_senders_per_source", 8,
                  "1..4096");
  EXPECT_REJECTED(with_minimal("limits:\n  replay_senders: 64\n  replay_senders_per_source: 65\n"),
                  "limits.replay_senders_per_source", 9, "1..64");
  EXPECT_REJECTED(with_minimal("limits:\n  unknown_burst: 0\n"), "limits.unknown_burst", 8, "out of range");
  EXPECT_REJECTED(with_minimal("limits:\n  known_rate_pps: 10000001\n"), "limits.known_rate_pps", 8, "");
  EXPECT_REJECTED(with_minimal("limits:\n  sources: lots\n"), "limits.sources", 8, "expected an integer");
  EXPECT_REJECTED(with_minimal("classifier:\n  scan_bytes: 63\n"), "classifier.scan_bytes", 8, "64..1500");
  EXPECT_REJECTED(with_minimal("classifier:\n  max_scans_per_burst: 513\n"), "classifier.max_scans_per_burst", 8, "");
  EXPECT_REJECTED(with_minimal("classifier:\n  max_scans_per_sec: 10000001\n"), "classifier.max_scans_per_sec", 8,
                  "0..10000000");
  EXPECT_REJECTED(with_minimal("classifier:\n  enabled: yes\n"), "classifier.enabled", 8, "expected a boolean");
}

// Issue 17: an in-range rule could take 18 s to compile, 32 of them never
// finished. Counted repeats (what Hyperscan's compile time grows with) are
// bounded per rule and over all rules, before anything is compiled.
TEST(ConfigLoaderGuard, RulesTooCostlyToCompileAreRejected) {
  const auto rule = [](const std::string& pattern) {
    return with_minimal("classifier:\n  rules:\n    - {name: heavy, pattern: '" + pattern + "'}\n");
  };
  for (const char* heavy : {"x.{0,1000}y", "(a.{0,100}){10}", "[{]{999}", "((ab){20}c){20}", "a{300,}"}) {
    const Rejection r = reject(rule(heavy));
    EXPECT_EQ(r.field, "classifier.rules[0].pattern") << heavy << ": " << r.what;
    EXPECT_NE(r.message.find("too large to compile quickly"), std::string::npos) << heavy << ": " << r.what;
    EXPECT_NE(r.message.find("'heavy'"), std::string::npos) << r.what;
  }
  // At the bound, and escaped braces (no repeat at all), are fine.
  for (const char* ok : {"x.{0,128}y.{0,128}z", "GSGW\\{1000\\}", "(a{2}){50}"}) {
    EXPECT_NO_THROW(parse_config(rule(ok), kSource, kBaseDir)) << ok;
  }
  // Each rule in bound, together too much.
  std::string many = "classifier:\n  rules:\n";
  for (int i = 0; i < 9; ++i) many += "    - {name: r" + std::to_string(i) + ", pattern: 'x.{0,250}y'}\n";
  const Rejection r = reject(with_minimal(many));
  EXPECT_EQ(r.field, "classifier.rules[8].pattern") << r.what;
  EXPECT_NE(r.message.find("together"), std::string::npos) << r.what;
}

TEST(ConfigLoaderGuard, BadRulesAreRejectedNamingTheRule) {
  // Hyperscan's own complaint, with the rule's name and where it is.
  Rejection r = reject(with_minimal("classifier:\n  rules:\n    - name: broken_one\n      pattern: 'abc('\n"));
  EXPECT_EQ(r.field, "classifier.rules[0].pattern") << r.what;
  EXPECT_EQ(r.line, 10) << r.what;
  EXPECT_NE(r.message.find("'broken_one'"), std::string::npos) << r.what;
  EXPECT_NE(r.message.find("Hyperscan rejects"), std::string::npos) << r.what;
  // A pattern that matches the empty buffer would count every packet.
  r = reject(with_minimal(
      "classifier:\n  rules:\n    - {name: ok, pattern: 'x'}\n    - {name: empty_match, pattern: 'a*'}\n"));
  EXPECT_EQ(r.field, "classifier.rules[1].pattern") << r.what;
  EXPECT_NE(r.message.find("'empty_match'"), std::string::npos) << r.what;
  EXPECT_REJECTED(with_minimal("classifier:\n  rules:\n    - {name: x, pattern: ''}\n"), "classifier.rules[0].pattern",
                  9, "1..1024 bytes");
  EXPECT_REJECTED(with_minimal("classifier:\n  rules:\n    - {name: Bad-Name, pattern: x}\n"),
                  "classifier.rules[0].name", 9, "a-z, 0-9 and _");
  EXPECT_REJECTED(with_minimal("classifier:\n  rules:\n    - {name: unmatched, pattern: x}\n"),
                  "classifier.rules[0].name", 9, "reserved");
  EXPECT_REJECTED(with_minimal("classifier:\n  rules:\n    - {name: a, pattern: x}\n    - {name: a, pattern: y}\n"),
                  "classifier.rules[1].name", 10, "also classifier.rules[0].name");
  EXPECT_REJECTED(with_minimal("classifier:\n  rules:\n    - {name: a}\n"), "classifier.rules[0].pattern", 9,
                  "required field missing");
  EXPECT_REJECTED(with_minimal("classifier:\n  rules:\n    - {name: a, pattern: x, flags: i}\n"),
                  "classifier.rules[0].flags", 9, "unknown field");
  EXPECT_REJECTED(with_minimal("classifier:\n  rules: {a: x}\n"), "classifier.rules", 8, "expected a list");
  std::string many = "classifier:\n  rules:\n";
  for (int i = 0; i < 33; ++i) many += "    - {name: r" + std::to_string(i) + ", pattern: x}\n";
  EXPECT_REJECTED(with_minimal(many), "classifier.rules", 8, "at most 32");
}

}  // namespace
}  // namespace gw::config

// --- events -----------------------------------------------------------------

namespace gw::config {
namespace {

TEST(ConfigLoaderEvents, DefaultsAndEveryField) {
  const Config d = parse_config(with_minimal(""), kSource, kBaseDir);
  EXPECT_EQ(d.events.handler, "");
  EXPECT_TRUE(d.events.handler_args.empty());
  EXPECT_EQ(d.events.max_concurrent, 2u);
  EXPECT_EQ(d.events.queue, 1024u);
  EXPECT_EQ(d.events.timeout_ms, 5000u);
  EXPECT_EQ(d.events.coalesce_ms, 0u);
  EXPECT_EQ(d.events.hosts_file.path, "");
  EXPECT_EQ(d.events.hosts_file.tag, "");
  EXPECT_TRUE(d.events.hosts_file.include_self);
  EXPECT_EQ(d.events.hosts_min_interval_ms, 1000u);

  // The example documents the defaults and keeps both features off.
  const Config example = load_config(std::string(GW_SOURCE_ROOT) + "/config/examples/gossipgw.yaml");
  EXPECT_EQ(example.events.handler, "");
  EXPECT_EQ(example.events.max_concurrent, 2u);
  EXPECT_EQ(example.events.queue, 1024u);
  EXPECT_EQ(example.events.timeout_ms, 5000u);
  EXPECT_EQ(example.events.hosts_file.path, "");
  EXPECT_EQ(example.events.hosts_min_interval_ms, 1000u);

  const Config c = parse_config(with_minimal("events:\n"
                                             "  handler: /bin/sh\n"
                                             "  handler_args: [\"-c\", \"logger $GOSSIPGW_EVENT\"]\n"
                                             "  max_concurrent: 64\n"
                                             "  queue: 1\n"
                                             "  timeout_ms: 10\n"
                                             "  coalesce_ms: 250\n"
                                             "  hosts_file:\n"
                                             "    path: /run/gossipgw/control-plane.hosts\n"
                                             "    tag: role=control-plane\n"
                                             "    include_self: false\n"
                                             "  hosts_min_interval_ms: 0\n"),
                                kSource, kBaseDir);
  EXPECT_EQ(c.events.handler, "/bin/sh");
  EXPECT_EQ(c.events.handler_args, (std::vector<std::string>{"-c", "logger $GOSSIPGW_EVENT"}));
  EXPECT_EQ(c.events.max_concurrent, 64u);
  EXPECT_EQ(c.events.queue, 1u);
  EXPECT_EQ(c.events.timeout_ms, 10u);
  EXPECT_EQ(c.events.coalesce_ms, 250u);
  EXPECT_EQ(c.events.hosts_file.path, "/run/gossipgw/control-plane.hosts");
  EXPECT_EQ(c.events.hosts_file.tag, "role=control-plane");
  EXPECT_FALSE(c.events.hosts_file.include_self);
  EXPECT_EQ(c.events.hosts_min_interval_ms, 0u);

  // A tag value may be empty or hold '='; the key is up to the first '='.
  const Config t = parse_config(with_minimal("events:\n  hosts_file: {path: /h, tag: \"k=\"}\n"), kSource, kBaseDir);
  EXPECT_EQ(t.events.hosts_file.tag, "k=");
  EXPECT_TRUE(t.events.hosts_file.include_self);
}

TEST(ConfigLoaderEvents, HandlerMustBeAnAbsoluteExecutableFile) {
  EXPECT_REJECTED(with_minimal("events:\n  handler: bin/handler\n"), "events.handler", 8, "absolute path");
  EXPECT_REJECTED(with_minimal("events:\n  handler: /nonexistent/gossipgw-handler\n"), "events.handler", 8,
                  "cannot stat");
  EXPECT_REJECTED(with_minimal("events:\n  handler: /\n"), "events.handler", 8, "not a regular file");
  std::array<char, 64> tmpl{};
  std::snprintf(tmpl.data(), tmpl.size(), "/tmp/gw-handler-XXXXXX");
  const int fd = ::mkstemp(tmpl.data());  // mode 0600: no execute bit, even for root
  ASSERT_GE(fd, 0);
  ::close(fd);
  EXPECT_REJECTED(with_minimal(std::string("events:\n  handler: ") + tmpl.data() + "\n"), "events.handler", 8,
                  "not executable");
  ::unlink(tmpl.data());
  EXPECT_REJECTED(with_minimal("events:\n  handler_args: -c\n"), "events.handler_args", 8, "expected a list");
  EXPECT_REJECTED(with_minimal("events:\n  handler_args: [a, [b]]\n"), "events.handler_args[1]", 8,
                  "expected a string");
}

TEST(ConfigLoaderEvents, RangesAndHostsFile) {
  EXPECT_REJECTED(with_minimal("events:\n  max_concurrent: 0\n"), "events.max_concurrent", 8, "1..64");
  EXPECT_REJECTED(with_minimal("events:\n  max_concurrent: 65\n"), "events.max_concurrent", 8, "1..64");
  EXPECT_REJECTED(with_minimal("events:\n  queue: 0\n"), "events.queue", 8, "1..1048576");
  EXPECT_REJECTED(with_minimal("events:\n  timeout_ms: 9\n"), "events.timeout_ms", 8, "10..3600000");
  EXPECT_REJECTED(with_minimal("events:\n  coalesce_ms: 60001\n"), "events.coalesce_ms", 8, "0..60000");
  EXPECT_REJECTED(with_minimal("events:\n  hosts_min_interval_ms: -1\n"), "events.hosts_min_interval_ms", 8,
                  "non-negative");
  EXPECT_REJECTED(with_minimal("events:\n  hosts_fil: {path: /h}\n"), "events.hosts_fil", 8,
                  "did you mean 'hosts_file'");
  EXPECT_REJECTED(with_minimal("events:\n  hosts_file:\n    tag: a=b\n"), "events.hosts_file.path", 8,
                  "required field missing");
  EXPECT_REJECTED(with_minimal("events:\n  hosts_file:\n    path: run/cp.hosts\n"), "events.hosts_file.path", 9,
                  "absolute file path");
  EXPECT_REJECTED(with_minimal("events:\n  hosts_file:\n    path: /run/gossipgw/\n"), "events.hosts_file.path", 9,
                  "absolute file path");
  EXPECT_REJECTED(with_minimal("events:\n  hosts_file:\n    path: /h\n    tag: control-plane\n"),
                  "events.hosts_file.tag", 10, "key=value");
  EXPECT_REJECTED(with_minimal("events:\n  hosts_file:\n    path: /h\n    tag: =x\n"), "events.hosts_file.tag", 10,
                  "key=value");
  EXPECT_REJECTED(with_minimal("events:\n  hosts_file:\n    path: /h\n    include_self: yes\n"),
                  "events.hosts_file.include_self", 10, "boolean");
  EXPECT_REJECTED(with_minimal("events:\n  hosts_file:\n    path: /h\n    owner: root\n"), "events.hosts_file.owner",
                  10, "unknown field");
}

// Issue 52 item 4: stable names from tags, and a managed block in an existing
// file. kMinimal's cluster is "demo".
TEST(ConfigLoaderEvents, HostsAliasesAndManagedBlock) {
  const Config d = parse_config(with_minimal("events:\n  hosts_file: {path: /h}\n"), kSource, kBaseDir);
  EXPECT_FALSE(d.events.hosts_file.managed_block);
  EXPECT_TRUE(d.events.hosts_file.aliases.empty());

  const Config c = parse_config(with_minimal("events:\n"
                                             "  hosts_file:\n"
                                             "    path: /etc/hosts\n"
                                             "    managed_block: true\n"
                                             "    aliases:\n"
                                             "      - {tag: role=master, name: \"api.internal.{cluster}\"}\n"
                                             "      - {tag: role, name: \"{value}.Role.{cluster}\"}\n"
                                             "      - {tag: zone, name: \"{value}\"}\n"),
                                kSource, kBaseDir);
  EXPECT_TRUE(c.events.hosts_file.managed_block);
  ASSERT_EQ(c.events.hosts_file.aliases.size(), 3u);
  EXPECT_EQ(c.events.hosts_file.aliases[0].tag, "role=master");
  EXPECT_EQ(c.events.hosts_file.aliases[0].name, "api.internal.demo");
  EXPECT_EQ(c.events.hosts_file.aliases[1].tag, "role");
  EXPECT_EQ(c.events.hosts_file.aliases[1].name, "{value}.role.demo");  // lower case
  EXPECT_EQ(c.events.hosts_file.aliases[2].name, "{value}");

  const std::string h = "events:\n  hosts_file:\n    path: /h\n    aliases:\n";  // items from line 11
  EXPECT_REJECTED(with_minimal(h + "      - {tag: role=master}\n"), "events.hosts_file.aliases[0].name", 11,
                  "required field missing");
  EXPECT_REJECTED(with_minimal(h + "      - {tag: role=master, name: api, ttl: 5}\n"),
                  "events.hosts_file.aliases[0].ttl", 11, "unknown field");
  EXPECT_REJECTED(with_minimal("events:\n  hosts_file:\n    path: /h\n    aliases: api.internal\n"),
                  "events.hosts_file.aliases", 10, "expected a list of {tag, name}");
  EXPECT_REJECTED(with_minimal(h + "      - {tag: \"=master\", name: api}\n"), "events.hosts_file.aliases[0].tag", 11,
                  "key=value");
  EXPECT_REJECTED(with_minimal(h + "      - {tag: \"role=\", name: api}\n"), "events.hosts_file.aliases[0].tag", 11,
                  "value 1..256");
  EXPECT_REJECTED(with_minimal(h + "      - {tag: role=master, name: api_internal}\n"),
                  "events.hosts_file.aliases[0].name", 11, "is not a DNS name: '_' at byte 3");
  EXPECT_REJECTED(with_minimal(h + "      - {tag: role=master, name: api.internal.}\n"),
                  "events.hosts_file.aliases[0].name", 11, "an empty label");
  EXPECT_REJECTED(with_minimal(h + "      - {tag: role=master, name: -api.internal}\n"),
                  "events.hosts_file.aliases[0].name", 11, "starts or ends with '-'");
  EXPECT_REJECTED(with_minimal(h + "      - {tag: role=master, name: " + std::string(64, 'a') + ".x}\n"),
                  "events.hosts_file.aliases[0].name", 11, "at most 63");
  EXPECT_REJECTED(with_minimal(h + "      - {tag: role, name: api.internal}\n"),
                  "events.hosts_file.aliases[0].name", 11, "{value} exactly once");
  EXPECT_REJECTED(with_minimal(h + "      - {tag: role, name: \"{value}.{value}\"}\n"),
                  "events.hosts_file.aliases[0].name", 11, "{value} exactly once");
  EXPECT_REJECTED(with_minimal(h + "      - {tag: role, name: \"x{value}.internal\"}\n"),
                  "events.hosts_file.aliases[0].name", 11, "whole label");
  EXPECT_REJECTED(with_minimal(h + "      - {tag: role=master, name: \"{value}.internal\"}\n"),
                  "events.hosts_file.aliases[0].name", 11, "{value} needs a tag without a value (\"role\")");
  // {cluster} is substituted first, so a cluster name that is not a DNS
  // label is named in the error.
  EXPECT_REJECTED("cluster:\n  name: my_cluster\n  keys:\n    - file: keys/primary.key\nnode:\n  address: 10.0.0.1\n" +
                      h + "      - {tag: role=master, name: \"api.{cluster}\"}\n",
                  "events.hosts_file.aliases[0].name", 11, "'api.my_cluster' (from 'api.{cluster}') is not a DNS name");
  std::string many = h;
  for (int i = 0; i < 65; ++i) many += "      - {tag: a=b, name: x}\n";
  EXPECT_REJECTED(with_minimal(many), "events.hosts_file.aliases", 10, "at most 64 aliases");

  // A managed block goes into a file that exists.
  EXPECT_REJECTED(with_minimal("events:\n  hosts_file:\n    path: /nonexistent/hosts\n    managed_block: true\n"),
                  "events.hosts_file.path", 9, "managed_block: true edits an existing file");
  EXPECT_REJECTED(with_minimal("events:\n  hosts_file:\n    path: /tmp\n    managed_block: true\n"),
                  "events.hosts_file.path", 9, "needs a regular file");
  EXPECT_REJECTED(with_minimal("events:\n  hosts_file:\n    path: /h\n    managed_block: 1\n"),
                  "events.hosts_file.managed_block", 10, "boolean");
}

}  // namespace
}  // namespace gw::config

// --- mode: memberlist (issue 54, docs/filter-mode.md) ----------------------

namespace gw::config {
namespace {

TEST(ConfigLoaderMemberlist, ModeDefaultsToNativeAndIsSpeltOut) {
  EXPECT_EQ(parse_config(kMinimal, kSource, kBaseDir).mode, Mode::kNative);
  EXPECT_EQ(parse_config("mode: native\n" + std::string(kMinimal), kSource, kBaseDir).mode, Mode::kNative);
  EXPECT_EQ(parse_config("mode: memberlist\n", kSource, kBaseDir).mode, Mode::kMemberlist);
  EXPECT_REJECTED("mode: serf\n", "mode", 1, "expected native or memberlist");
  EXPECT_REJECTED("mode: 1\n", "mode", 1, "expected native or memberlist");
}

TEST(ConfigLoaderMemberlist, NativeModeRefusesAMemberlistSection) {
  EXPECT_REJECTED(with_minimal("memberlist:\n  ports: [7946]\n"), "memberlist", 7, "only read in mode: memberlist");
  EXPECT_REJECTED(with_minimal("memberlist:\n"), "memberlist", 7, "only read in mode: memberlist");
}

TEST(ConfigLoaderMemberlist, ExampleFileParsesWithEveryDefault) {
  const std::string dir = std::string(GW_SOURCE_ROOT) + "/config/examples";
  const Config c = load_config(dir + "/filter-memberlist.yaml");
  ASSERT_EQ(c.mode, Mode::kMemberlist);
  const MemberlistConfig d;
  EXPECT_EQ(c.memberlist.ports, d.ports);
  EXPECT_EQ(c.memberlist.ports, std::vector<std::uint16_t>{7946});
  EXPECT_EQ(c.memberlist.agent_port_id, 1u);
  EXPECT_TRUE(c.memberlist.allow_cidrs.empty());
  EXPECT_TRUE(c.memberlist.allow_plaintext_cidrs.empty());
  EXPECT_EQ(c.memberlist.keyring_file, "");
  EXPECT_EQ(c.memberlist.label, "");
  EXPECT_EQ(c.memberlist.per_source_pps, 200u);
  EXPECT_EQ(c.memberlist.per_source_burst, 400u);
  EXPECT_EQ(c.memberlist.sources, 65536u);
  EXPECT_EQ(c.memberlist.tcp_connections_per_sec, 4u);
  EXPECT_EQ(c.memberlist.tcp_connections_burst, 16u);
  EXPECT_EQ(c.memberlist.egress_bytes_per_sec, 0u);
  EXPECT_EQ(c.memberlist.egress_burst_bytes, 65536u);
  EXPECT_EQ(c.memberlist.max_inflated, 65536u);
  EXPECT_EQ(c.memberlist.max_name, 128u);
  EXPECT_EQ(c.memberlist.max_probe_messages, 1u);
  EXPECT_EQ(c.memberlist.agent_udp_port, 7946u);
  EXPECT_EQ(c.dataplane.port_id, 0u);
  EXPECT_EQ(c.lcores.workers, std::vector<unsigned>{1});
  EXPECT_EQ(c.base_dir, dir);
  // Native-only requirements are not asked for.
  EXPECT_TRUE(c.cluster.name.empty());
  EXPECT_TRUE(c.cluster.keys.empty());
  EXPECT_TRUE(c.node.address.empty());
}

TEST(ConfigLoaderMemberlist, EveryFieldCanBeSet) {
  const Config c = parse_config(
      "mode: memberlist\n"
      "dataplane:\n"
      "  port_id: 3\n"
      "memberlist:\n"
      "  ports: [7946, 8301]\n"
      "  agent_port_id: 0\n"
      "  allow_cidrs: [10.0.0.0/8, 'fd00::/8', 192.0.2.7, 0.0.0.0/0]\n"
      "  allow_plaintext_cidrs: [10.1.0.0/16]\n"
      "  keyring_file: serf/local.keyring\n"
      "  label: consul-segment-a\n"
      "  per_source_pps: 50\n"
      "  per_source_burst: 60\n"
      "  sources: 1024\n"
      "  tcp_connections_per_sec: 2\n"
      "  tcp_connections_burst: 3\n"
      "  egress_bytes_per_sec: 1000000\n"
      "  egress_burst_bytes: 20000\n"
      "  max_inflated: 4096\n"
      "  max_name: 64\n"
      "  max_probe_messages: 2\n"
      "  agent_udp_port: 8301\n",
      kSource, kBaseDir);
  const MemberlistConfig& m = c.memberlist;
  EXPECT_EQ(m.ports, (std::vector<std::uint16_t>{7946, 8301}));
  EXPECT_EQ(m.agent_port_id, 0u);
  EXPECT_EQ(m.allow_cidrs, (std::vector<std::string>{"10.0.0.0/8", "fd00::/8", "192.0.2.7", "0.0.0.0/0"}));
  EXPECT_EQ(m.allow_plaintext_cidrs, std::vector<std::string>{"10.1.0.0/16"});
  EXPECT_EQ(m.keyring_file, "serf/local.keyring");
  EXPECT_EQ(resolve_path(c, m.keyring_file), std::string(kBaseDir) + "/serf/local.keyring");
  EXPECT_EQ(m.label, "consul-segment-a");
  EXPECT_EQ(m.per_source_pps, 50u);
  EXPECT_EQ(m.per_source_burst, 60u);
  EXPECT_EQ(m.sources, 1024u);
  EXPECT_EQ(m.tcp_connections_per_sec, 2u);
  EXPECT_EQ(m.tcp_connections_burst, 3u);
  EXPECT_EQ(m.egress_bytes_per_sec, 1000000u);
  EXPECT_EQ(m.egress_burst_bytes, 20000u);
  EXPECT_EQ(m.max_inflated, 4096u);
  EXPECT_EQ(m.max_name, 64u);
  EXPECT_EQ(m.max_probe_messages, 2u);
  EXPECT_EQ(m.agent_udp_port, 8301u);
}

TEST(ConfigLoaderMemberlist, NativeSectionsAndFieldsAreRefusedByName) {
  for (const char* section : {"cluster", "node", "rings", "limits", "classifier", "membership", "events"}) {
    EXPECT_REJECTED("mode: memberlist\n" + std::string(section) + ":\n", section, 2, "native mode only");
  }
  EXPECT_REJECTED("mode: memberlist\ndataplane:\n  arp_hints: true\n", "dataplane.arp_hints", 3, "native mode only");
  EXPECT_REJECTED("mode: memberlist\ndataplane:\n  neighbors: []\n", "dataplane.neighbors", 3, "native mode only");
  EXPECT_REJECTED("mode: memberlist\ncontrol:\n  state_dir: /var/lib/gw\n", "control.state_dir", 3, "native mode only");
  // No control API in this mode yet: a socket would be accepted and not served.
  EXPECT_REJECTED("mode: memberlist\ncontrol:\n  socket: /run/gw.sock\n", "control.socket", 3, "no control API");
  // The sections both modes share still work, and are still strict.
  const Config c = parse_config(
      "mode: memberlist\nlcores:\n  control: 2\n  workers: [3, 4]\n"
      "metrics:\n  prometheus_port: 9100\nlog:\n  level: debug\n",
      kSource, kBaseDir);
  EXPECT_EQ(c.lcores.workers, (std::vector<unsigned>{3, 4}));
  EXPECT_EQ(c.metrics.prometheus_port, 9100u);
  EXPECT_EQ(c.log.level, "debug");
  EXPECT_REJECTED("mode: memberlist\nmemberlist:\n  prots: [1]\n", "memberlist.prots", 3, "ports");
}

TEST(ConfigLoaderMemberlist, PortsAndPortIds) {
  const std::string head = "mode: memberlist\nmemberlist:\n";
  EXPECT_REJECTED(head + "  ports: []\n", "memberlist.ports", 3, "1..4 entries");
  EXPECT_REJECTED(head + "  ports: [1, 2, 3, 4, 5]\n", "memberlist.ports", 3, "1..4 entries");
  EXPECT_REJECTED(head + "  ports: [7946, 7946]\n", "memberlist.ports[1]", 3, "is also memberlist.ports[0]");
  EXPECT_REJECTED(head + "  ports: [0]\n", "memberlist.ports[0]", 3, "");
  EXPECT_REJECTED(head + "  ports: [65536]\n", "memberlist.ports[0]", 3, "");
  EXPECT_REJECTED(head + "  ports: 7946\n", "memberlist.ports", 3, "expected a list");
  EXPECT_REJECTED(head + "  agent_port_id: 0\n", "memberlist.agent_port_id", 3, "must differ from dataplane.port_id");
  // The default agent port id (1) against a NIC on port 1.
  EXPECT_REJECTED("mode: memberlist\ndataplane:\n  port_id: 1\nmemberlist:\n  label: x\n", "memberlist.agent_port_id",
                  4, "equals dataplane.port_id");
  EXPECT_REJECTED(head + "  agent_udp_port: 0\n", "memberlist.agent_udp_port", 3, "");
}

TEST(ConfigLoaderMemberlist, CidrEntriesAreCheckedWithTheirPath) {
  const std::string head = "mode: memberlist\nmemberlist:\n";
  for (const char* ok :
       {"10.0.0.0/8", "0.0.0.0/0", "10.1.2.3/32", "10.1.2.3", "::/0", "fd00::/8", "::1/128", "::ffff:10.0.0.0/104"}) {
    EXPECT_NO_THROW(parse_config(head + "  allow_cidrs: ['" + ok + "']\n", kSource, kBaseDir)) << ok;
  }
  EXPECT_REJECTED(head + "  allow_cidrs: [10.0.0.0/33]\n", "memberlist.allow_cidrs[0]", 3, "0..32");
  EXPECT_REJECTED(head + "  allow_cidrs: ['fd00::/129']\n", "memberlist.allow_cidrs[0]", 3, "0..128");
  EXPECT_REJECTED(head + "  allow_cidrs: [10.0.0.0/]\n", "memberlist.allow_cidrs[0]", 3, "prefix length");
  EXPECT_REJECTED(head + "  allow_cidrs: [10.0.0.0/-1]\n", "memberlist.allow_cidrs[0]", 3, "prefix length");
  EXPECT_REJECTED(head + "  allow_cidrs: [10.0.0.0/0x8]\n", "memberlist.allow_cidrs[0]", 3, "prefix length");
  EXPECT_REJECTED(head + "  allow_cidrs: [10.1.2.3/8]\n", "memberlist.allow_cidrs[0]", 3, "host bits");
  EXPECT_REJECTED(head + "  allow_cidrs: [example.com/8]\n", "memberlist.allow_cidrs[0]", 3, "IPv4 or IPv6 prefix");
  EXPECT_REJECTED(head + "  allow_cidrs: 10.0.0.0/8\n", "memberlist.allow_cidrs", 3, "expected a list");
  EXPECT_REJECTED(head + "  allow_plaintext_cidrs: [10.0.0.0/8, bad]\n", "memberlist.allow_plaintext_cidrs[1]", 3,
                  "IPv4 or IPv6 prefix");
  std::string many = head + "  allow_cidrs: [";
  for (int i = 0; i < 1025; ++i) many += std::string(i == 0 ? "" : ", ") + "10.0.0.1";
  EXPECT_REJECTED(many + "]\n", "memberlist.allow_cidrs", 3, "at most 1024");
}

TEST(ConfigLoaderMemberlist, RangesFromConfigH) {
  const std::string head = "mode: memberlist\nmemberlist:\n";
  struct Case {
    const char* field;
    const char* bad;
  };
  for (const Case& k : std::initializer_list<Case>{{"per_source_pps", "0"},
                                                   {"per_source_pps", "10000001"},
                                                   {"per_source_burst", "0"},
                                                   {"sources", "63"},
                                                   {"sources", "1048577"},
                                                   {"tcp_connections_per_sec", "0"},
                                                   {"tcp_connections_burst", "1000001"},
                                                   {"egress_bytes_per_sec", "4294967296"},
                                                   {"egress_burst_bytes", "9215"},
                                                   {"max_inflated", "1023"},
                                                   {"max_inflated", "16777217"},
                                                   {"max_name", "0"},
                                                   {"max_probe_messages", "0"},
                                                   {"max_probe_messages", "256"},
                                                   {"agent_port_id", "65536"}}) {
    SCOPED_TRACE(std::string(k.field) + " = " + k.bad);
    EXPECT_REJECTED(head + "  " + k.field + ": " + k.bad + "\n", std::string("memberlist.") + k.field, 3, "");
  }
  EXPECT_REJECTED(head + "  label: " + std::string(256, 'a') + "\n", "memberlist.label", 3, "0..255 bytes");
  EXPECT_EQ(parse_config(head + "  label: " + std::string(255, 'a') + "\n", kSource, kBaseDir).memberlist.label.size(),
            255u);
  EXPECT_REJECTED(head + "  keyring_file: \"a\\0b\"\n", "memberlist.keyring_file", 3, "NUL");
}

TEST(ConfigLoaderMemberlist, MemoryNeedIsTheFiltersTables) {
  Config c = parse_config("mode: memberlist\nlcores:\n  workers: [1, 2]\n", kSource, kBaseDir);
  const MemoryNeed n = memory_needed(c);
  EXPECT_EQ(n.rings, 0u);
  EXPECT_EQ(n.tables, 2u * (2u * 65536u * 48u + 65507u + 65536u + 4096u * 6u));
  try {
    check_memory(c, n.total() - 1, kSource);
    FAIL() << "fits in less than it needs";
  } catch (const ConfigError& e) {
    EXPECT_EQ(e.field(), "memberlist.sources");
  }
  EXPECT_NO_THROW(check_memory(c, n.total(), kSource));
}

}  // namespace
}  // namespace gw::config
