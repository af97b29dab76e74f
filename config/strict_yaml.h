// Strict YAML reading shared by the gateway's config loader (config/loader.h)
// and gossipsim's scenario loader (perf/gossipsim/scenario.h): one dialect, one
// set of messages. Anything a reader cannot vouch for (unknown or duplicate
// keys, wrong types, out-of-range values, YAML syntax errors, several
// documents) is an Error naming the source, the line and the field path, so a
// typo never silently falls back to a default.
//
// The dialect:
//  - booleans are `true` or `false` (also True/TRUE/False/FALSE), never the
//    YAML 1.1 `yes`/`no`/`on`/`off`;
//  - integers are plain (unquoted) decimal, `0x` hex or `0o` octal scalars;
//  - numbers (read_number) are plain decimal scalars, optionally with a
//    fraction and an exponent (`0.25`, `1e-3`);
//  - quoted scalars are strings whatever they look like, and rejected where
//    a boolean, integer or number is expected.
//
// Needs only yaml-cpp (no DPDK, no Hyperscan), so the simulator links it.
#pragma once

#include <yaml-cpp/yaml.h>

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <limits>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

namespace gw::config::strict {

// what() is one line: `<source>:<line>: <field>: <message>`; `:<line>` is
// left out when the line is unknown and `<field>: ` when the error concerns
// the whole file. Each loader derives its own error type from this one.
class Error : public std::runtime_error {
 public:
  Error(std::string source, std::string field, int line, std::string message);

  // Name of the file (or whatever the caller called the text) at fault.
  const std::string& source() const noexcept { return source_; }
  // Path of the offending field, e.g. `cluster.keys[0].file`; empty when the
  // error concerns the whole file (syntax error, empty document, unreadable).
  const std::string& field() const noexcept { return field_; }
  // 1-based line of the offending key or element; 0 when unknown.
  int line() const noexcept { return line_; }
  // The message without the source/line/field prefix.
  const std::string& message() const noexcept { return message_; }

 private:
  std::string source_;
  std::string field_;
  int line_;
  std::string message_;
};

// Makes user-supplied bytes safe to print inside an error or a field path:
// printable ASCII only (the bytes may be anything) and bounded, so one error
// stays one line.
std::string escape(std::string_view s);
// escape(s) in single quotes.
std::string quote(std::string_view s);

// 1-based line of a node, 0 when yaml-cpp has no position for it.
int line_of(const YAML::Node& node);
// How a node looks to someone reading the file, for "expected X, got Y".
std::string describe(const YAML::Node& node);
// Like describe, but says "quoted string" for a quoted scalar, since
// `port: "7946"` otherwise reads like a correct value.
std::string quoted_or_describe(const YAML::Node& node);
// Quoted scalars carry the non-specific tag "!"; plain ones "?".
bool is_quoted(const YAML::Node& node);

// Optimal string alignment distance (Levenshtein plus adjacent swaps), so
// `prot` suggests `port`.
std::size_t edit_distance(std::string_view a, std::string_view b);

// Field paths: `a.b`, `a[3]`.
std::string join(const std::string& path, std::string_view name);
std::string indexed(const std::string& path, std::size_t i);

enum class UintParse { kOk, kNotInteger, kNegative, kTooLarge };
// YAML 1.2 core-schema integers: [-+]?[0-9]+, 0x[0-9a-fA-F]+, 0o[0-7]+.
UintParse parse_uint(std::string_view s, std::uint64_t& out);

// One `key: value` of a YAML map (or one list element), with the line of its
// key: errors about a value point at the key, which is where the reader looks
// (a null value's own mark is on the following line).
struct Field {
  std::string path;
  int line = 0;
  YAML::Node value;
};

// Element `i` of the list in `list`, its line falling back to the list's.
Field element(const Field& list, std::size_t i);

// Reads one document for one source, throwing Error.
class Reader {
 public:
  explicit Reader(std::string source) : source_(std::move(source)) {}

  const std::string& source() const noexcept { return source_; }

  [[noreturn]] void fail(const std::string& field, int line, std::string message) const;

  // The only document in `text`; an Error for a syntax error, an empty
  // document or a second document (which YAML::Load would silently ignore).
  YAML::Node load_document(std::string_view text) const;

  std::string read_string(const Field& f) const;
  bool read_bool(const Field& f) const;

  // Reads an unsigned integer of type T and checks it against [lo, hi]
  // (which must lie within T).
  template <typename T>
  T read_uint(const Field& f, std::uint64_t lo = 0, std::uint64_t hi = std::numeric_limits<T>::max()) const {
    static_assert(std::is_unsigned_v<T>);
    return static_cast<T>(read_uint64(f, lo, hi));
  }

  // A finite number in [lo, hi].
  double read_number(const Field& f, double lo, double hi) const;

 private:
  std::uint64_t read_uint64(const Field& f, std::uint64_t lo, std::uint64_t hi) const;
  void check_single_document(const std::string& text) const;

  std::string source_;
};

// The fields of one YAML map, checked against the names it may hold: an
// unknown name (with a suggestion when a known one is close) or a name given
// twice is an Error at the key's line.
class Map {
 public:
  // `null_is_empty`: a present but empty value (`limits:` with every line
  // commented out) is a map without fields rather than an error.
  Map(const Reader& reader, const YAML::Node& node, std::string path, int line,
      std::initializer_list<std::string_view> known, bool null_is_empty);
  Map(const Reader& reader, const Field& field, std::initializer_list<std::string_view> known, bool null_is_empty)
      : Map(reader, field.value, field.path, field.line, known, null_is_empty) {}

  std::optional<Field> find(std::string_view name) const;
  // find(name), or an Error "required field missing" at the map's line.
  Field require(std::string_view name) const;

  const std::string& path() const { return path_; }
  int line() const { return line_; }

 private:
  const Reader& reader_;
  std::string path_;
  int line_;
  std::vector<Field> fields_;
};

// The exception in flight as an Error for `source`: an Error as it is, a
// yaml-cpp exception as a syntax error at its mark, anything else as "cannot
// parse". Call only inside a catch block.
Error current_error(const std::string& source);

// Runs `parse` and lets only an E (derived from Error, with its constructor)
// out, whatever the bytes made yaml-cpp or the allocator throw.
template <typename E, typename F>
auto guarded(const std::string& source, F&& parse) -> decltype(parse()) {
  static_assert(std::is_base_of_v<Error, E>);
  try {
    return parse();
  } catch (const E&) {
    throw;
  } catch (...) {
    const Error e = current_error(source);
    throw E(e.source(), e.field(), e.line(), e.message());
  }
}

}  // namespace gw::config::strict
