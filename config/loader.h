// Loads and validates gossipgw's YAML config before EAL starts.
//
// The YAML layout mirrors config.h: top-level sections `cluster`, `node`,
// `lcores`, `rings`, `dataplane`, `limits`, `log`, whose keys are exactly the
// struct member names. Only `cluster.name`, `cluster.keys` and `node.address`
// are required. Anything the loader cannot vouch for (unknown or duplicate
// keys, wrong types, out-of-range values, YAML syntax errors, several
// documents) is a ConfigError naming the field and the line, so a bad file
// stops the process with one readable line instead of reaching the dataplane.
//
// Deliberately strict typing (config/strict_yaml.h, the dialect gossipsim's
// scenario files share), so a typo cannot silently change meaning:
//  - booleans are `true` or `false` (also True/TRUE/False/FALSE), never the
//    YAML 1.1 `yes`/`no`/`on`/`off`;
//  - integers are plain (unquoted) decimal, `0x` hex or `0o` octal scalars;
//    quoted numbers are strings and rejected where an integer is expected;
//  - a section that is present but empty (`limits:` with every line commented
//    out) means "all defaults".
#pragma once

#include <string>
#include <string_view>

#include "config/config.h"
#include "config/strict_yaml.h"

namespace gw::config {

// The only exception parse_config and load_config let escape. what() is one
// line: `<source>:<line>: <field>: <message>`; `:<line>` is left out when the
// line is unknown and `<field>: ` when the error concerns the whole file.
// source(), field(), line() and message() as strict::Error documents them.
class ConfigError : public strict::Error {
 public:
  using strict::Error::Error;
};

// Parses and validates `yaml_text`. `source_name` only labels errors;
// `base_dir` is copied into Config::base_dir for resolve_path. Throws only
// ConfigError, whatever the bytes (including invalid UTF-8 and NULs).
Config parse_config(std::string_view yaml_text, std::string_view source_name, std::string_view base_dir);

// Reads `path` and parses it with parse_config. Config::base_dir becomes the
// absolute directory holding the file, so relative key paths keep working if
// the process later changes directory. A missing, unreadable or oversized
// (over 1 MiB) file is a ConfigError whose source is `path`.
Config load_config(const std::string& path);

// The memory the dataplane reserves for `config` at start, in bytes: the
// hand-off rings (workers x 4 classes x rings.size records of up to
// limits.max_payload_bytes, as dataplane/payload_ring.h lays them out) and
// the guard tables (replay windows, token buckets, failed headers per
// worker, and the control lcore's once-only table). A unit test checks it
// against the dataplane's own sizes.
struct MemoryNeed {
  std::uint64_t rings = 0;
  std::uint64_t tables = 0;
  std::uint64_t total() const noexcept { return rings + tables; }
};
MemoryNeed memory_needed(const Config& config) noexcept;

// Throws ConfigError (field rings.size, saying how much is needed) when
// memory_needed(config) exceeds `available_bytes`. parse_config calls it with
// this machine's physical memory (issue 17: rings.size and
// limits.max_payload_bytes, each in range, could ask for ~36 GiB).
void check_memory(const Config& config, std::uint64_t available_bytes, std::string_view source);

// `p` if it is absolute or `config.base_dir` is empty, else base_dir/p.
// Not normalised: `..` is left for the kernel to resolve through symlinks.
std::string resolve_path(const Config& config, const std::string& p);

}  // namespace gw::config
