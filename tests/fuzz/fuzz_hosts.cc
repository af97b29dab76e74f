// Fuzz target: the hosts file (control/host/events/hosts_file.h). Tag values
// arrive from the network and become alias names; an existing hosts file
// (e.g. /etc/hosts) is parsed for gossipgw's managed block. Input:
//   VALUES \0 EXISTING
// where VALUES are tag values separated by '\n' (one member each). Whatever
// they hold: every line rendered is a comment or "ADDRESS NAME", every alias
// a DNS name, every value listed or counted; the block splice keeps the
// file's other bytes, holds the new block once and is idempotent.
#include <cstdint>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "config/dns_name.h"
#include "control/host/events/hosts_file.h"

namespace {

using gw::cp::events::HostsFileWriter;

gw::cp::engine::Member member(std::size_t i, std::string value) {
  gw::cp::engine::Address a;
  a.ip = {10, 0, static_cast<std::uint8_t>(i >> 8), static_cast<std::uint8_t>(i)};
  a.port = 7946;
  gw::cp::engine::Member m;
  m.name = "m-" + std::to_string(i);
  m.status = gw::cp::engine::MemberStatus::kAlive;
  m.set_profile(a, {{"role", std::move(value)}}, 0);
  return m;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string_view in(reinterpret_cast<const char*>(data), size);
  const std::size_t nul = in.find('\0');
  const std::string_view values = in.substr(0, nul);
  const std::string_view existing = nul == std::string_view::npos ? std::string_view() : in.substr(nul + 1);

  std::vector<gw::cp::engine::Member> members;
  for (std::size_t at = 0; at <= values.size() && members.size() < 256;) {
    const std::size_t nl = values.find('\n', at);
    const std::size_t end = nl == std::string_view::npos ? values.size() : nl;
    members.push_back(member(members.size(), std::string(values.substr(at, end - at))));
    at = end + 1;
  }
  gw::config::EventsConfig::HostsFile config;
  config.path = "/x";
  config.aliases = {{"role", "{value}.r.test"}, {"role=master", "api.internal.test"}};
  gw::cp::events::HostsRenderStats stats;
  const std::string body = HostsFileWriter::render(members, config, "m-0", stats);

  std::size_t per_value = 0;
  bool in_aliases = false;
  for (std::size_t at = 0; at < body.size();) {
    const std::size_t nl = body.find('\n', at);
    if (nl == std::string::npos) std::abort();  // every line ends
    const std::string_view line(body.data() + at, nl - at);
    at = nl + 1;
    if (line.empty()) std::abort();
    if (line.front() == '#') {
      in_aliases = in_aliases || line.starts_with("# Aliases");
      continue;
    }
    const std::size_t sp = line.find(' ');
    if (sp == std::string_view::npos || line.find(' ', sp + 1) != std::string_view::npos) std::abort();
    if (!in_aliases) continue;
    const std::string_view name = line.substr(sp + 1);
    if (!gw::config::dns_name_problem(name).empty()) std::abort();
    if (name != "api.internal.test") ++per_value;
  }
  if (per_value + stats.skipped_aliases != members.size()) std::abort();

  const std::string begin = HostsFileWriter::begin_marker("test");
  const std::string end = HostsFileWriter::end_marker("test");
  std::string error;
  const std::optional<std::string> spliced = HostsFileWriter::splice_block(existing, begin, end, body, &error);
  if (!spliced) {
    if (error.empty()) std::abort();  // a refusal says why
    if (HostsFileWriter::extract_block(existing, begin, end)) std::abort();
    return 0;
  }
  const std::string block = begin + "\n" + body + end + "\n";
  const std::size_t at = spliced->find(block);
  if (at == std::string::npos || spliced->find(block, at + 1) != std::string::npos) std::abort();
  if (HostsFileWriter::extract_block(*spliced, begin, end) != body) std::abort();
  // The bytes outside the block are the file's own, in order.
  const std::string outside = spliced->substr(0, at) + spliced->substr(at + block.size());
  const std::optional<std::string> old = HostsFileWriter::extract_block(existing, begin, end);
  if (!old) {
    std::string want(existing);
    if (!want.empty() && want.back() != '\n') want += '\n';
    if (outside != want) std::abort();
  } else if (outside.size() > existing.size()) {
    std::abort();
  }
  // Splicing the same block again changes nothing.
  if (HostsFileWriter::splice_block(*spliced, begin, end, body, &error) != *spliced) std::abort();
  return 0;
}
