// Maintains a hosts-style file of the members that carry a tag, e.g. every
// role=control-plane member, plus stable alias names from tags (every
// role=master member as api.internal.<cluster>), for consumers that read
// /etc/hosts-like files (dnsmasq --addn-hosts, CoreDNS hosts plugin, glibc,
// scripts). Either a file of its own, or a managed block between BEGIN/END
// marker lines inside an existing file such as /etc/hosts. docs/events.md.
//
// Usage, on the control lcore (the gateway wires this into the control loop):
//
//   events::HostsFileWriter hosts(config.events.hosts_file, config.node.name,
//                                 config.events.hosts_min_interval_ms, config.cluster.name);
//   if (!events_this_loop.empty()) hosts.update(engine.members(), now_ns);  // after member events
//   hosts.poll(now_ns);          // every loop; writes a deferred change once due
//
// Single-threaded and clock-injected: `now_ns` is any monotonic clock. A write
// is open + write + fsync + rename + fsync(dir): microseconds on tmpfs (/run),
// possibly milliseconds on a disk.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "config/config.h"
#include "control/engine/member_table.h"

namespace gw::cp::events {

struct HostsFileCounters {
  std::uint64_t writes = 0;           // files renamed into place
  std::uint64_t unchanged = 0;        // updates whose content equalled the file: not rewritten
  std::uint64_t deferred = 0;         // changes held back by hosts_min_interval_ms
  std::uint64_t write_errors = 0;     // a write that failed (retried once the interval passes)
  std::uint64_t skipped_members = 0;  // matching members left out: no address, or a name a
                                      // hosts file cannot hold (whitespace, '#', non-ASCII)
};

// What one render left out (HostsFileWriter::render).
struct HostsRenderStats {
  std::uint64_t skipped_members = 0;
  std::uint64_t skipped_aliases = 0;
  // The first few names refused for an alias, escaped (append_escaped), with
  // the reason: for the log.
  std::vector<std::string> refused;
};

class HostsFileWriter {
 public:
  // Most refused alias names kept in HostsRenderStats::refused.
  static constexpr std::size_t kMaxRefusedShown = 4;
  // Largest existing file read back (first look, and the file a managed block
  // goes into); a larger file with a managed block is refused, not cut.
  static constexpr std::size_t kMaxExistingBytes = 16u << 20;

  // `self` is this node's name (for include_self); min_interval_ms is
  // events.hosts_min_interval_ms; `cluster` names the managed block's markers.
  HostsFileWriter(config::EventsConfig::HostsFile config, std::string self, std::uint32_t min_interval_ms,
                  std::string cluster = "gossipgw");

  // Control lcore. The full member list (tombstones included or not) at
  // `now_ns`. Writes now when the content changed and the last write was at
  // least min_interval ago; otherwise remembers it for poll(). True if written.
  bool update(std::span<const engine::Member> members, std::uint64_t now_ns);
  // Control lcore. Writes the remembered change once due (and retries a failed
  // write). True if written. Cheap when nothing is pending.
  bool poll(std::uint64_t now_ns);
  // When poll() next has work; UINT64_MAX when nothing is pending.
  std::uint64_t next_due_ns() const;
  bool pending() const { return pending_.has_value(); }

  const HostsFileCounters& counters() const { return counters_; }
  // Alias lines left out over all updates: the member has no address, or its
  // tag value does not make a DNS name (each refusal is also logged). Not in
  // HostsFileCounters: every field of that is exported as a metric, and this
  // one is not yet.
  std::uint64_t skipped_aliases() const { return skipped_aliases_; }
  const std::string& path() const { return config_.path; }

  // The file's content for `members`: a header comment, then "ADDRESS NAME"
  // lines for the Alive and Suspect members with the tag, sorted by name;
  // then, with aliases, "ADDRESS ALIAS" lines, sorted by alias and member.
  // Pure; skipped counts members left out for their name or address.
  static std::string render(std::span<const engine::Member> members, const config::EventsConfig::HostsFile& config,
                            const std::string& self, std::uint64_t* skipped = nullptr);
  static std::string render(std::span<const engine::Member> members, const config::EventsConfig::HostsFile& config,
                            const std::string& self, HostsRenderStats& stats);

  // The marker lines of the managed block for `cluster` (no newline).
  static std::string begin_marker(const std::string& cluster);
  static std::string end_marker(const std::string& cluster);
  // `existing` with its managed block (the lines from `begin` to `end`,
  // markers included; a marker line matches with trailing blanks and CR
  // ignored) replaced by begin + `body` + end, or with that appended when it
  // has none. Every other byte is kept. nullopt, and `error` set, when the
  // markers are not one BEGIN line followed by one END line. Pure.
  static std::optional<std::string> splice_block(std::string_view existing, const std::string& begin,
                                                 const std::string& end, std::string_view body, std::string* error);
  // The lines between the markers of the one well-formed block in
  // `existing`; nullopt when there is none. Pure.
  static std::optional<std::string> extract_block(std::string_view existing, const std::string& begin,
                                                  const std::string& end);

 private:
  bool write_pending(std::uint64_t now_ns);
  bool write_file(const std::string& content);
  bool write_block(const std::string& body);
  // What the file (or its block) holds now; nullopt when it cannot be read.
  std::optional<std::string> current() const;

  config::EventsConfig::HostsFile config_;
  std::string self_;
  std::string begin_;  // managed-block markers
  std::string end_;
  std::string last_refused_;  // what was last logged about refused aliases
  std::uint64_t min_interval_ns_;
  std::optional<std::string> written_;  // what the file holds, once known
  std::optional<std::string> pending_;  // a change not written yet
  std::optional<std::uint64_t> last_attempt_ns_;
  HostsFileCounters counters_;
  std::uint64_t skipped_aliases_ = 0;
};

}  // namespace gw::cp::events
