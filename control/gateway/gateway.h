// The gateway as main starts it, in three steps:
//
//   load_startup()  before EAL: config, keys, ladder, classifier and engine
//                   config read and checked (a bad file never starts EAL);
//   Services        what main owns across EAL (the stop flag, the metrics
//                   publisher, the log ring, the event handler's thread);
//   run_gateway()   after EAL: port, rings, workers, control API, exporters
//                   and the control loop, started in order and released in
//                   reverse, until a stop; then --stats-json.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>

#include "config/config.h"
#include "control/engine/engine.h"
#include "control/gateway/metrics.h"
#include "control/host/events/event_runner.h"
#include "control/host/keyring_state.h"
#include "control/host/log_ring.h"
#include "crypto/keys.h"
#include "dataplane/classifier.h"
#include "dataplane/ladder.h"

namespace gw::cp {

inline constexpr int kExitRuntime = 1;
inline constexpr int kExitUsage = 2;

// A start or stop that cannot go on: `status` is the process's exit status.
class StartError : public std::runtime_error {
 public:
  StartError(int exit_status, const std::string& message) : std::runtime_error(message), status(exit_status) {}
  int status;
};

// What was read and checked before EAL started.
struct Startup {
  config::Config cfg;
  std::string config_path;
  std::string config_sha256;  // of the file as read (gossipctl info)
  std::uint32_t started_unix_s = 0;
  crypto::Keyring keyring;
  KeyMaterial key_material;
  std::string keyring_source = "cluster.keys";  // or the state file it came from
  std::string tags_source;                      // the state file our tags came from (empty: the config)
  dp::LadderConfig ladder;
  std::unique_ptr<dp::Classifier> classifier;  // null: classifier.enabled is false
  engine::EngineConfig engine;                 // membership.enabled only
};

// Throws std::exception with a one-line message (exit status 2).
// `freeze_clock_s`: the test aid's Unix time (0: the real clock).
Startup load_startup(const std::string& config_path, std::uint32_t freeze_clock_s);

// The gateway's own command-line options after "--".
struct RunOptions {
  std::string stats_json;          // written on the way out (empty: not)
  std::uint32_t idle_exit_ms = 0;  // stop once every input was idle this long (0: never)
  bool defer_control = false;      // test aid: drain only after the workers stopped
  std::uint32_t freeze_clock_s = 0;
};

struct Services {
  std::atomic<bool>* stop_requested = nullptr;  // set by signals and the API's stop
  MetricsPublisher* metrics = nullptr;
  LogRing* logs = nullptr;
  events::EventRunner* event_runner = nullptr;  // null: no handler configured
};

// Runs until a stop and returns the exit status. Throws StartError for what
// makes starting impossible (an lcore that is not enabled, a socket in use,
// a port that cannot take the config's queues); whatever was set up by then
// is released.
int run_gateway(Startup& s, const RunOptions& o, const Services& svc);

}  // namespace gw::cp
