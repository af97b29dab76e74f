#include "dataplane/classifier.h"

#include <gtest/gtest.h>

#include <chrono>

#include <cstdint>
#include <filesystem>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "dataplane/api/counters.h"
#include "perf/gossipgen/generator.h"
#include "perf/gossipgen/pcap_io.h"

namespace gw::dp {
namespace {

using Bytes = std::vector<std::uint8_t>;

Bytes hex(const std::string& h) {
  Bytes b;
  for (std::size_t i = 0; i + 1 < h.size(); i += 2)
    b.push_back(static_cast<std::uint8_t>(std::stoul(h.substr(i, 2), nullptr, 16)));
  return b;
}

Bytes bytes(const std::string& s) { return {s.begin(), s.end()}; }

std::string name_of(const Classifier& c, std::uint32_t id) {
  return id == c.unmatched() ? std::string(kUnkeyedUnmatchedName) : c.rule_names().at(id);
}

std::string classify(const Classifier& c, const Bytes& b) {
  Classifier::Scratch s = c.make_scratch();
  return name_of(c, c.classify(s, b.data(), b.size()));
}

// The first bytes of real memberlist 0.2.2 packets from
// /work/shared/corpus/memberlist-0.2.2-lan-16.pcap, one per kind seen there.
const std::vector<std::pair<std::string, std::string>> kCorpusSamples = {
    {"memberlist_ping", "0085a44e6f6465a66d2d30303037a55365714e6f01aa536f7572636541646472a47f000001aa536f"},
    {"memberlist_indirect_ping", "0188a44e61636bc3a44e6f6465a66d2d30303038a4506f7274cd8979a55365714e6f0eaa536f7572"},
    {"memberlist_ack", "0282a75061796c6f6164c0a55365714e6f01"},
    {"memberlist_compound", "07020045003e0085a44e6f6465a66d2d30303130a55365714e6f01aa536f7572636541646472a47f"},
    {"memberlist_compressed", "0982a4416c676f00a3427566da00c6000f14002001800f83087d0810740a4a983c6cde842103acd4"},
    {"memberlist_nack", "0b81a55365714e6f0e"},
    // hasCrc-wrapped: the rule names the message inside.
    {"memberlist_compressed", "0c01e4135a0982a4416c676f00a3427566da0108000f2000e083a0c182080f1230442a0819327248"},
    {"memberlist_compound", "0c025172670702004500270085a44e6f6465a66d2d30303038a55365714e6f13aa536f7572636541"},
    {"memberlist_suspect", "0c03615ba00383a446726f6da66d2d30303033ab496e6361726e6174696f6e01a44e6f6465a66d2d"},
    {"memberlist_alive", "0c0bbfc0020486a441646472a47f000001ab496e6361726e6174696f6e01a44d657461c0a44e6f64"},
    {"memberlist_dead", "0c11aa7f560583a446726f6da66d2d30303133ab496e6361726e6174696f6e01a44e6f6465a66d2d"},
};

TEST(Classifier, BuiltinSignaturesNameRealMemberlistPackets) {
  const Classifier c({}, true, 64);
  EXPECT_EQ(c.rule_count(), builtin_classifier_rules().size());
  for (const auto& [want, h] : kCorpusSamples) EXPECT_EQ(classify(c, hex(h)), want) << h;
}

TEST(Classifier, SerfAndWeaveAndNothingElse) {
  const Classifier c({}, true, 64);
  // A memberlist user message carrying Serf's user event (type 3).
  EXPECT_EQ(classify(c, hex("080383a44c54696d65")), "serf");
  EXPECT_EQ(classify(c, hex("080983a44c54696d65")), "serf");       // Serf's highest type (relay)
  EXPECT_EQ(classify(c, hex("080a83a44c54696d65")), "unmatched");  // no such Serf type
  EXPECT_EQ(classify(c, bytes(std::string("weave\x01\x02", 7))), "weave_mesh");
  EXPECT_EQ(classify(c, bytes("weave")), "unmatched");
  EXPECT_EQ(classify(c, bytes("GSGW\x02 a future gossipgw version")), "unmatched");
  EXPECT_EQ(classify(c, {}), "unmatched");
  // The type byte alone is not enough: the msgpack map must follow.
  EXPECT_EQ(classify(c, hex("00")), "unmatched");
  EXPECT_EQ(classify(c, hex("0085a4")), "unmatched");
  EXPECT_EQ(classify(c, hex("0085a46e")), "unmatched");  // key not capitalised
  EXPECT_EQ(classify(c, hex("0c01e413")), "unmatched");  // CRC wrapper cut short
  // Compound: up to 16 parts fit the scan prefix; the first part's map must follow the lengths.
  for (int parts : {1, 2, 15, 16, 17}) {
    Bytes b = {0x07, static_cast<std::uint8_t>(parts)};
    b.resize(2 + 2 * static_cast<std::size_t>(parts), 0x00);
    for (const std::uint8_t x : hex("0085a44e6f6465")) b.push_back(x);
    EXPECT_EQ(classify(c, b), parts <= 16 ? "memberlist_compound" : "unmatched") << parts;
    EXPECT_EQ(perf::unkeyed_labels()[perf::unkeyed_label(b.data(), b.size())], classify(c, b)) << parts;
    b[2 + 2 * static_cast<std::size_t>(parts)] = 0x0c;  // not a message type
    EXPECT_EQ(classify(c, b), "unmatched") << parts;
  }
}

TEST(Classifier, OperatorRulesComeAfterBuiltinsFirstMatchWins) {
  const Classifier c({{"gossipgw_v2", "^GSGW\\x02"}, {"hello", "hello"}, {"hell", "hell"}}, true, 64);
  ASSERT_EQ(c.rule_count(), builtin_classifier_rules().size() + 3);
  EXPECT_EQ(c.rule_names()[builtin_classifier_rules().size()], "gossipgw_v2");
  EXPECT_EQ(classify(c, bytes("GSGW\x02rest")), "gossipgw_v2");
  EXPECT_EQ(classify(c, bytes("GSGW\x01rest")), "unmatched");
  // Both match; the first in list order counts, wherever it ends.
  EXPECT_EQ(classify(c, bytes("xx hello xx")), "hello");
  EXPECT_EQ(classify(c, bytes("xx hell xx")), "hell");
  // The earlier rule wins even when a later rule's match ends first or last.
  const Classifier order({{"never", "^NEVER"}, {"early", "^xx"}, {"late", "yy"}, {"later", "zz"}}, false, 64);
  EXPECT_EQ(classify(order, bytes("xxyyzz")), "early");
  EXPECT_EQ(classify(order, bytes("zzyy")), "late");
  EXPECT_EQ(classify(order, bytes("zz-xx")), "later");
  // A packet that is also a memberlist ping counts as the built-in.
  const Classifier greedy({{"anything", "^."}}, true, 64);
  EXPECT_EQ(classify(greedy, hex(kCorpusSamples[0].second)), "memberlist_ping");
  EXPECT_EQ(classify(greedy, bytes("zzz")), "anything");
}

TEST(Classifier, OnlyOperatorRulesAndNoRulesAtAll) {
  const Classifier ops({{"consul_rpc", "Consul"}}, false, 64);
  EXPECT_EQ(ops.rule_count(), 1u);
  EXPECT_EQ(classify(ops, bytes("..Consul..")), "consul_rpc");
  EXPECT_EQ(classify(ops, hex(kCorpusSamples[0].second)), "unmatched");
  const Classifier none({}, false, 64);
  EXPECT_EQ(none.rule_count(), 0u);
  EXPECT_EQ(classify(none, bytes("anything")), "unmatched");
}

TEST(Classifier, ScansOnlyTheConfiguredPrefix) {
  Bytes b(200, 'x');
  const std::string mark = "MARK";
  std::copy(mark.begin(), mark.end(), b.begin() + 100);
  const Classifier shortscan({{"mark", "MARK"}}, false, 64);
  const Classifier longscan({{"mark", "MARK"}}, false, 128);
  EXPECT_EQ(classify(shortscan, b), "unmatched");
  EXPECT_EQ(classify(longscan, b), "mark");
  // Below the minimum is raised to it: the built-ins need 43 bytes.
  EXPECT_EQ(Classifier({}, true, 1).scan_bytes(), kMinScanBytes);
}

TEST(Classifier, BadRulesAreRejectedWithTheirName) {
  const auto rejects = [](const std::vector<ClassifierRule>& rules, const std::string& rule, const std::string& text) {
    try {
      Classifier c(rules, true, 64);
      ADD_FAILURE() << "accepted rule " << rule;
    } catch (const ClassifierError& e) {
      EXPECT_EQ(e.rule(), rule) << e.what();
      EXPECT_NE(std::string(e.what()).find(text), std::string::npos) << e.what();
      if (!rule.empty()) {
        EXPECT_NE(std::string(e.what()).find("'" + rule + "'"), std::string::npos) << e.what();
      }
    }
  };
  rejects({{"fine", "abc"}, {"broken", "abc("}}, "broken", "Hyperscan rejects the pattern");
  rejects({{"empty_match", "a*"}}, "empty_match", "Hyperscan rejects");
  rejects({{"nothing", ""}}, "nothing", "1..1024 bytes");
  rejects({{"Upper", "x"}}, "Upper", "a-z, 0-9 and _");
  rejects({{"unmatched", "x"}}, "unmatched", "reserved");
  rejects({{"unscanned", "x"}}, "unscanned", "reserved");
  rejects({{"memberlist_ping", "x"}}, "memberlist_ping", "built-in");
  rejects({{"twice", "x"}, {"twice", "y"}}, "twice", "name given twice");
  std::vector<ClassifierRule> many;
  for (int i = 0; i <= static_cast<int>(kMaxOperatorRules); ++i) many.push_back({"r" + std::to_string(i), "x"});
  rejects(many, "", "at most");
  EXPECT_EQ(check_classifier_rule("ok_name", "^GSGW"), "");
  EXPECT_NE(check_classifier_rule("ok_name", "(").find("Hyperscan"), std::string::npos);
  EXPECT_NE(check_classifier_rule("bad name", "x").find("a-z"), std::string::npos);
}

// Issue 17: one in-range rule took 18 s to compile and 32 never finished
// in 20 s. The compile is bounded: past the budget the child compiling it is
// killed and the error names the rule. x.{0,2000}y.{0,2000}z takes seconds
// (1.7 s for bounds of 1000 on the CI machine); the budget here is 200 ms,
// so the test ends in about that whatever the machine. The budget covers the
// child's start and the rules before the costly one too: 20 ms was too little
// for those under ASan on a busy machine ("fine" was named instead).
TEST(Classifier, CompileIsBoundedAndTheCostlyRuleIsNamed) {
  const auto t0 = std::chrono::steady_clock::now();
  try {
    Classifier c({{"fine", "abc"}, {"costly", "x.{0,2000}y.{0,2000}z"}, {"after", "def"}}, false, 64, 200);
    ADD_FAILURE() << "a rule over the compile budget was accepted";
  } catch (const ClassifierError& e) {
    EXPECT_EQ(e.rule(), "costly") << e.what();
    EXPECT_NE(std::string(e.what()).find("did not compile it within 200 ms (classifier.compile_budget_ms)"),
              std::string::npos)
        << e.what();
  }
  EXPECT_LT(std::chrono::steady_clock::now() - t0, std::chrono::seconds(1));
  // Within the budget everything works as before, through the same child.
  const Classifier ok({{"hello", "hello"}}, true, 64, 60000);
  Classifier::Scratch s = ok.make_scratch();
  const Bytes hello = bytes("hello");
  EXPECT_EQ(name_of(ok, ok.classify(s, hello.data(), hello.size())), "hello");
}

TEST(Classifier, ScratchesAreIndependentPerLcore) {
  const Classifier c({{"hello", "hello"}}, true, 64);
  Classifier::Scratch a = c.make_scratch();
  Classifier::Scratch b = c.make_scratch();
  EXPECT_TRUE(a.valid());
  EXPECT_TRUE(b.valid());
  const Bytes hello = bytes("hello"), ping = hex(kCorpusSamples[0].second);
  for (int i = 0; i < 100; ++i) {
    EXPECT_EQ(name_of(c, c.classify(a, hello.data(), hello.size())), "hello");
    EXPECT_EQ(name_of(c, c.classify(b, ping.data(), ping.size())), "memberlist_ping");
  }
  Classifier::Scratch moved = std::move(a);
  EXPECT_TRUE(moved.valid());
  EXPECT_FALSE(a.valid());  // NOLINT(bugprone-use-after-move): checking the moved-from state
  // A scratch that never came from a classifier classifies nothing.
  Classifier::Scratch empty;
  EXPECT_EQ(c.classify(empty, hello.data(), hello.size()), c.unmatched());
}

// gossipgen's ground truth labels unkeyed payloads with an independent,
// hand-written decode of memberlist's framing. The Hyperscan signatures and
// that decode must agree byte for byte: on the whole real corpus, and on
// random and mutated payloads that probe every edge of the patterns.
TEST(Classifier, AgreesWithGossipgensIndependentDecode) {
  const Classifier c({}, true, 64);
  Classifier::Scratch s = c.make_scratch();
  const auto& labels = perf::unkeyed_labels();
  ASSERT_EQ(labels.size(), c.rule_count() + 1);
  for (std::size_t i = 0; i < c.rule_count(); ++i) EXPECT_EQ(labels[i], c.rule_names()[i]);

  std::vector<Bytes> seeds;
  for (const auto& [want, h] : kCorpusSamples) seeds.push_back(hex(h));
  seeds.push_back(hex("080383a44c54696d65"));
  seeds.push_back(bytes(std::string("weave\x01\x02", 7)));
  const std::string corpus = std::string(GW_SOURCE_ROOT) + "/../shared/corpus/memberlist-0.2.2-lan-16.pcap";
  std::size_t corpus_matched = 0;
  if (std::filesystem::exists(corpus)) {
    const auto payloads = perf::read_udp_payloads(corpus);
    EXPECT_EQ(payloads.size(), 1383u);
    for (const auto& p : payloads) {
      const std::uint32_t id = c.classify(s, p.data(), p.size());
      EXPECT_EQ(labels[id], labels[perf::unkeyed_label(p.data(), p.size())]);
      if (id != c.unmatched()) ++corpus_matched;
      seeds.push_back(p);
    }
    // Every real memberlist packet is named, none left unmatched.
    EXPECT_EQ(corpus_matched, payloads.size());
  }

  std::mt19937_64 rng(2026);
  std::map<std::string, int> hits;
  for (int i = 0; i < 200000; ++i) {
    Bytes b;
    if (i % 2 == 0) {
      b = seeds[rng() % seeds.size()];
      // Flip, replace or cut a few of the first bytes, where the signatures look.
      const int edits = 1 + static_cast<int>(rng() % 3);
      for (int e = 0; e < edits && !b.empty(); ++e) {
        const std::size_t at = rng() % std::min<std::size_t>(b.size(), 48);
        switch (rng() % 3) {
          case 0:
            b[at] = static_cast<std::uint8_t>(rng());
            break;
          case 1:
            b[at] ^= static_cast<std::uint8_t>(1u << (rng() % 8));
            break;
          default:
            b.resize(at);
            break;
        }
      }
    } else {
      b.resize(rng() % 80);
      for (auto& x : b) x = static_cast<std::uint8_t>(rng());
      // Give the random ones a plausible start now and then.
      if (!b.empty() && rng() % 2) b[0] = static_cast<std::uint8_t>(rng() % 14);
      if (b.size() > 1 && rng() % 2) b[1] = static_cast<std::uint8_t>(0x81 + rng() % 15);
      if (b.size() > 2 && rng() % 2) b[2] = static_cast<std::uint8_t>(0xa1 + rng() % 31);
      if (b.size() > 3 && rng() % 2) b[3] = static_cast<std::uint8_t>('A' + rng() % 26);
    }
    const std::uint32_t id = c.classify(s, b.data(), b.size());
    const std::size_t want = perf::unkeyed_label(b.data(), b.size());
    ASSERT_EQ(labels[id], labels[want]) << "payload of " << b.size() << " bytes, case " << i;
    ++hits[std::string(labels[id])];
  }
  // The probe really exercised matches and misses of most rules.
  EXPECT_GT(hits["unmatched"], 1000);
  EXPECT_GT(hits["memberlist_ping"], 100);
  EXPECT_GT(hits["memberlist_compound"], 10);
}

}  // namespace
}  // namespace gw::dp
