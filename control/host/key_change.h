// The cluster-wide key-change protocol (`gossipctl keys ... --cluster`): the
// origin applies a change, sends it as a KeyCommand to every live member and
// collects one KeyCommandResult from each, retrying those that have not
// answered until a deadline; a member applies each command at most once (also
// across restarts) and only from the live member that relays it. A change
// (install, use, remove) must carry the operator's Ed25519 signature over
// the change, the cluster id and its issue time (issue 51): every member,
// the origin too, checks it against cluster.operator_public_key, so a member
// holding only the cluster key cannot change any keyring, and who relays a
// command (or claims to) authorises nothing. Signed commands are applied in
// issue order, each once: older than the newest applied, issued before this
// node started or more than kMaxAgeNs ago, they are refused as stale. No
// I/O of its own: the owner (EngineHost) hands it the key commands and
// results it decoded, gives it the time, and seals what it sends.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "control/engine/engine.h"
#include "control/host/key_ops.h"
#include "control/key_command.h"
#include "crypto/keys.h"
#include "dataplane/api/snapshot.h"

namespace gw::cp {

struct KeyCommandCounters {
  std::uint64_t key_commands_sent = 0;      // cluster-wide key commands sent (retries included)
  std::uint64_t key_commands_applied = 0;   // received from another member and applied
  std::uint64_t key_commands_refused = 0;   // received, valid, but the change was refused
  std::uint64_t key_commands_repeated = 0;  // a retry of a command already applied: answered again
  std::uint64_t key_results_received = 0;
  std::uint64_t key_results_unsolicited = 0;  // for no request of ours, or from a non-target
  // Key commands ignored (not applied, not answered) because their sender is
  // not the live member that claims to have issued them.
  std::uint64_t key_commands_not_member = 0;
  // ... because they were issued before this node started, more than
  // kMaxAgeNs ago, or before the newest signed command already applied (a replay).
  std::uint64_t key_commands_stale = 0;
  // Key changes refused because the operator did not sign them (no valid
  // signature under cluster.operator_public_key, or none configured).
  std::uint64_t key_commands_unsigned = 0;
};

class ClusterKeyChange {
 public:
  struct Options {
    // Where key changes are applied and the keyring answered to a list:
    // the published snapshot's keys when `snapshots` is set, else `keys`
    // (changes are then refused).
    dp::SnapshotExchange* snapshots = nullptr;
    const crypto::Keyring* keys = nullptr;
    crypto::Suite suite = crypto::Suite::kChaCha20Poly1305;
    // Unix time this process started, in ns. Command ids are the origin's
    // Unix time in ns when it issued them: a command issued before we
    // started (a replay of one we may have applied in an earlier run) is
    // refused, so each is applied at most once, also across restarts.
    std::uint64_t started_unix_ns = 0;
    // The monotonic clock at that moment (0: unknown). With it, the start
    // instant follows steps of the wall clock (note_time): a gateway started
    // with its clock 300 s ahead does not refuse the operator's commands for
    // 300 s once NTP corrects it (issue 51 item 8).
    std::uint64_t started_mono_ns = 0;
    // cluster.operator_public_key; none: every change is refused.
    std::optional<crypto::OperatorPublicKey> operator_key;
    std::uint64_t cluster_id = 0;  // what the operator's statement names
    // Saves a changed keyring before it takes effect (control.state_dir);
    // empty: nothing is saved.
    KeyringSaver saver;
  };

  // The operator's authorisation of a change (gossipctl signs it).
  struct Authorisation {
    std::uint64_t issued_unix_ns = 0;
    crypto::Signature signature{};
  };
  // Signed commands older than this (by our clock) are refused: a command a
  // member missed cannot be replayed to it much later.
  static constexpr std::uint64_t kMaxAgeNs = 600'000'000'000ULL;

  struct Outcome {
    std::uint64_t request_id = 0;
    std::size_t targets = 0;  // live members other than us when it started
    std::vector<std::string> ok;
    std::vector<std::pair<std::string, std::string>> refused;  // member, why
    std::vector<std::string> no_answer;
    // list: each answering member's key ids and primary.
    std::map<std::string, std::pair<std::vector<std::uint32_t>, std::uint32_t>> keyrings;
  };
  using Done = std::function<void(const Outcome&)>;
  // Seals `plain` (an encoded key command or result) for `to` in the urgent
  // class and queues it; false when it was not queued.
  using Send = std::function<bool(const engine::Address& to, std::span<const std::uint8_t> plain, std::uint64_t now_ns,
                                  std::uint32_t unix_s)>;

  // Retries to members that have not answered, and the overall deadline.
  static constexpr std::uint64_t kRetryNs = 500'000'000ULL;
  static constexpr std::uint64_t kTimeoutNs = 5'000'000'000ULL;
  static constexpr std::size_t kMaxInFlight = 4;

  // `engine` (who is a live member, our name) and `counters` must outlive
  // this; `counters` is the owner's, so they are reported with its own.
  ClusterKeyChange(Options options, const engine::Engine& engine, Send send, KeyCommandCounters& counters);
  ClusterKeyChange(const ClusterKeyChange&) = delete;
  ClusterKeyChange& operator=(const ClusterKeyChange&) = delete;

  // Control lcore only. Applies `change` here, then sends it to every live
  // member and calls `done` once all answered or the deadline passed.
  // Returns an empty string if it started, else why not (nothing changed).
  std::string start(const KeyChange& change, const Authorisation& auth, std::uint64_t now_ns, std::uint32_t unix_s,
                    Done done);
  // Control lcore only. A key command or result that `from` sent us: a
  // command is answered from tick(), a result is recorded.
  void on_key_control(const KeyControl& kc, const engine::Address& from);
  // Control lcore only. Sends the answers due, sends commands due (first
  // sends and retries), and ends the changes that are complete or past
  // their deadline.
  void tick(std::uint64_t now_ns, std::uint32_t unix_s);
  // Control lcore, every pass: the wall clock, for the age of signed commands.
  void note_time(std::uint32_t unix_s, std::uint64_t now_ns) noexcept;
  // Whether tick() has anything to do.
  bool idle() const noexcept { return ops_.empty() && results_out_.empty(); }

 private:
  const crypto::Keyring& keyring() const noexcept {
    return options_.snapshots != nullptr ? options_.snapshots->current().keys : *options_.keys;
  }
  void on_result(const KeyResultMsg& r);
  void on_command(const KeyCommandMsg& c, const engine::Address& from);
  // Empty if the operator signed this change at `issued`, else why not.
  std::string check_signature(const KeyChange& change, const Authorisation& auth) const;
  // Empty if a signed command issued at `issued` may still be applied, else why not.
  std::string check_fresh(std::uint64_t issued) const;

  struct Target {
    engine::Address addr;
    bool answered = false;
  };
  struct Op {
    KeyCommandMsg command;
    std::map<std::string, Target> targets;
    Outcome outcome;
    std::uint64_t next_send_ns = 0;
    std::uint64_t deadline_ns = 0;
    Done done;
  };

  Options options_;
  const engine::Engine& engine_;
  Send send_;
  KeyCommandCounters& counters_;
  std::vector<Op> ops_;
  std::uint64_t next_request_id_ = 0;
  // Results to send (answers to other members' commands), sent from tick().
  std::vector<std::pair<engine::Address, KeyResultMsg>> results_out_;
  // Commands already applied, by (origin, request id): a retry is answered
  // again without applying twice. Bounded, oldest forgotten first.
  struct AppliedCommand {
    std::string origin;
    std::uint64_t request_id = 0;
    bool ok = false;
    std::string error;
  };
  static constexpr std::size_t kRememberedCommands = 64;
  std::deque<AppliedCommand> applied_commands_;
  // The issue time of the newest signed command applied (here or at our
  // request): anything not newer that is not a remembered retry is a replay.
  std::uint64_t newest_signed_ns_ = 0;
  std::uint64_t last_unix_s_ = 0;  // the wall clock at the last tick (for kMaxAgeNs)
  // The start instant on the wall clock as it reads now (started_unix_ns
  // moved by the steps note_time saw).
  std::uint64_t start_unix_ns_ = 0;
};

}  // namespace gw::cp
