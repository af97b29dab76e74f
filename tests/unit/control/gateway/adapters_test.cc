// The composition root's adapters: config -> engine, engine host, control loop.
#include "control/gateway/adapters.h"

#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

namespace gw::cp {
namespace {

config::Config base_config() {
  config::Config cfg;
  cfg.node.name = "gw-a";
  cfg.node.address = "10.0.0.1";
  cfg.node.port = 7946;
  cfg.membership.enabled = true;
  return cfg;
}

dp::LocalEndpoint local_of(const config::Config& cfg) {
  dp::LocalEndpoint ep;
  EXPECT_TRUE(dp::parse_endpoint(cfg.node.address.c_str(), cfg.node.port, &ep));
  return ep;
}

TEST(Adapters, TheEngineTakesThePresetThenTheConfigsFields) {
  config::Config cfg = base_config();
  cfg.membership.preset = "wan";
  cfg.membership.admit_rate = 7;
  cfg.membership.tags = {{"role", "db"}};
  cfg.membership.egress_bytes_per_sec = 3000;
  const engine::EngineConfig e = engine_config(cfg, local_of(cfg));
  EXPECT_EQ(e.egress_bytes_per_sec, 3000u);  // the shaper's budget: the engine sizes what it sends to it
  EXPECT_EQ(e.probe_interval_ns, engine::EngineConfig::wan().probe_interval_ns);
  EXPECT_EQ(e.name, "gw-a");
  EXPECT_EQ(e.addr.port, 7946);
  EXPECT_EQ(e.admit_rate, 7u);
  ASSERT_EQ(e.tags.size(), 1u);
  EXPECT_EQ(e.tags[0].key, "role");
  EXPECT_GT(e.initial_incarnation, 0u);  // Unix seconds: a restart comes back higher
}

TEST(Adapters, AnEngineConfigItsOwnCheckRefusesIsAnErrorNamingTheField) {
  config::Config cfg = base_config();
  cfg.node.name.clear();  // the loader refuses it too; the engine's own check is the last guard
  try {
    (void)engine_config(cfg, local_of(cfg));
    FAIL() << "an empty name was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_EQ(std::string(e.what()), "membership: name: must not be empty");
  }
  cfg = base_config();
  cfg.membership.preset = "moon";
  EXPECT_THROW((void)engine_config(cfg, local_of(cfg)), std::invalid_argument);
}

TEST(Adapters, EveryPresetNameTheLoaderAcceptsIsOne) {
  for (const char* name : {"lan", "wan", "local"}) EXPECT_TRUE(engine::EngineConfig::preset(name).has_value()) << name;
  EXPECT_FALSE(engine::EngineConfig::preset("LAN").has_value());
  EXPECT_FALSE(engine::EngineConfig::preset("").has_value());
}

TEST(Adapters, TheLoopAndTheShaperTakeTheConfigsValuesAndDefaultToThem) {
  config::Config cfg = base_config();
  // Defaults are written once, beside the config's fields.
  EXPECT_EQ(loop_plan(cfg, false).leave_timeout_ns, ControlLoopOptions{}.leave_timeout_ns);
  EXPECT_EQ(ShaperConfig{}.bytes_per_sec, cfg.membership.egress_bytes_per_sec);
  cfg.membership.leave_timeout_ms = 1500;
  cfg.dataplane.idle_backoff_us = 40;
  const ControlLoopOptions o = loop_plan(cfg, true);
  EXPECT_EQ(o.leave_timeout_ns, 1'500'000'000ULL);
  EXPECT_EQ(o.idle_backoff_us, 40u);
  EXPECT_TRUE(o.defer_until_inputs_idle);
}

}  // namespace
}  // namespace gw::cp
