// What the control API's requests do, on the control lcore: list members,
// report counters, change keys (through a new dataplane snapshot, so workers
// switch between bursts and never see a half-updated keyring), join, leave,
// change our tags, change the log level. Requests are parsed and validated by
// control/api/request.h first; this only acts on valid ones.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "control/api/request.h"
#include "control/host/control_loop.h"
#include "control/host/engine_host.h"
#include "control/host/log_ring.h"
#include "crypto/wire_header.h"
#include "dataplane/api/snapshot.h"

namespace gw::cp {

struct ControlApiCounters {
  std::uint64_t requests = 0;
  std::uint64_t bad_requests = 0;         // did not parse or validate
  std::uint64_t failed = 0;               // valid, but refused (e.g. removing the primary key)
  std::uint64_t key_changes = 0;          // snapshots published for a key change (node scope)
  std::uint64_t cluster_key_changes = 0;  // cluster-wide key changes started
};

class ControlApi {
 public:
  struct Context {
    cp::EngineHost* host = nullptr;  // null when membership is disabled
    dp::SnapshotExchange* snapshots = nullptr;
    crypto::Suite suite = crypto::Suite::kChaCha20Poly1305;
    // The full counter document (compact JSON), as --stats-json writes it.
    std::function<std::string()> stats_json;
    // Starts a graceful stop (leave first), like SIGTERM.
    std::function<void()> request_stop;
    // The `info` reply's fields (a JSON object's text): version, node, keys,
    // config digest, uptime, queue depths. Null: info answers what it knows.
    std::function<std::string()> info_json;
    // Recent log lines for `monitor`; null: monitor is refused.
    cp::LogRing* logs = nullptr;
    // Where a stop stands: `leave` is answered once the leave went out (or
    // timed out). Null: `leave` is answered as soon as the stop is asked.
    std::function<cp::StopPhase()> stop_phase;
    // membership.leave_timeout_ms, for what `leave` says when it timed out.
    std::uint32_t leave_timeout_ms = 0;
    // control.state_dir: a key change is saved before it takes effect, and
    // refused if it cannot be (empty: nothing is saved).
    cp::KeyringSaver keyring_saver;
    // The same for our tags: returns an empty string, or why they could not
    // be saved (the change is then refused). Empty: nothing is saved.
    std::function<std::string(const std::vector<cp::engine::Tag>&)> save_tags;
  };

  explicit ControlApi(Context ctx) : ctx_(std::move(ctx)) {}

  using Reply = std::function<void(std::string)>;
  // One request line in, one reply line out (no newline) through `reply`:
  // at once, or for cluster-wide key changes once the other members answered
  // (on a later pass of the control lcore). Never throws for bad input:
  // every error is a {"ok":false,"error":...} reply.
  void handle(std::string_view line, std::uint64_t now_ns, std::uint32_t unix_s, const Reply& reply);
  // Control lcore, every pass: answers the joins that got their answer or
  // ran out of time, and the leaves once the leave is done.
  void poll(std::uint64_t now_ns);
  const ControlApiCounters& counters() const noexcept { return counters_; }

  // How long `join` waits for a member at the address to answer. The engine
  // keeps retrying in the background after that (with backoff, for ever).
  static constexpr std::uint64_t kJoinTimeoutNs = 5'000'000'000ULL;
  // The longest `leave` waits before it answers that the leave is still
  // going out (the socket server gives up on an answer after 10 s).
  static constexpr std::uint64_t kLeaveAnswerNs = 8'000'000'000ULL;

 private:
  // A join waiting for its answer.
  struct PendingJoin {
    cp::engine::Address addr;
    std::string shown;  // IP:PORT or [IPv6]:PORT
    std::uint64_t deadline_ns = 0;
    Reply reply;
  };
  std::vector<PendingJoin> joins_;
  void start_join(const cp::api::JoinRequest& req, std::uint64_t now_ns, const Reply& reply);
  // A leave waiting for the leave broadcast to go out.
  struct PendingLeave {
    std::uint64_t asked_ns = 0;
    Reply reply;
  };
  std::vector<PendingLeave> leaves_;
  void poll_leaves(std::uint64_t now_ns);

  // Requests that are answered at once (everything but cluster-wide keys).
  std::string handle_now(std::string_view line, std::uint64_t now_ns);

  Context ctx_;
  ControlApiCounters counters_;
};

// The snapshot to publish after membership changed: same keys, the live
// members' addresses as known sources.
std::unique_ptr<dp::DataplaneSnapshot> snapshot_with_members(const dp::DataplaneSnapshot& current,
                                                             const cp::engine::Engine& engine);

}  // namespace gw::cp
