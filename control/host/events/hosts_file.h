// Maintains a hosts-style file of the members that carry a tag, e.g. every
// role=control-plane member, for consumers that read /etc/hosts-like files
// (dnsmasq --addn-hosts, CoreDNS hosts plugin, scripts). docs/events.md.
//
// Usage, on the control lcore (the lead wires this into the control loop):
//
//   events::HostsFileWriter hosts(config.events.hosts_file, config.node.name,
//                                 config.events.hosts_min_interval_ms);
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

class HostsFileWriter {
 public:
  // `self` is this node's name (for include_self); min_interval_ms is
  // events.hosts_min_interval_ms.
  HostsFileWriter(config::EventsConfig::HostsFile config, std::string self, std::uint32_t min_interval_ms);

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
  const std::string& path() const { return config_.path; }

  // The file's content for `members`: a header comment, then "ADDRESS NAME"
  // lines for the Alive and Suspect members with the tag, sorted by name.
  // Pure; skipped counts members left out for their name or address.
  static std::string render(std::span<const engine::Member> members, const config::EventsConfig::HostsFile& config,
                            const std::string& self, std::uint64_t* skipped = nullptr);

 private:
  bool write_pending(std::uint64_t now_ns);
  bool write_file(const std::string& content);

  config::EventsConfig::HostsFile config_;
  std::string self_;
  std::uint64_t min_interval_ns_;
  std::optional<std::string> written_;  // what the file holds, once known
  std::optional<std::string> pending_;  // a change not written yet
  std::optional<std::uint64_t> last_attempt_ns_;
  HostsFileCounters counters_;
};

}  // namespace gw::cp::events
