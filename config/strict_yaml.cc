#include "config/strict_yaml.h"

#include <yaml-cpp/eventhandler.h>
#include <yaml-cpp/parser.h>

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <new>
#include <sstream>
#include <utility>

namespace gw::config::strict {

namespace {

// Longest user value echoed in an error, so one line stays one line.
constexpr std::size_t kMaxEchoChars = 48;
// Unknown keys within this edit distance of a known one get a suggestion
// (short names need a closer match, see unknown_message).
constexpr std::size_t kMaxSuggestDistance = 2;

std::string format_what(const std::string& source, const std::string& field, int line, const std::string& message) {
  std::string out = source;
  if (line > 0) out += ":" + std::to_string(line);
  out += ": ";
  if (!field.empty()) out += field + ": ";
  out += message;
  return out;
}

// Only where each document starts; the nodes come from YAML::Load.
class DocumentStarts : public YAML::EventHandler {
 public:
  void OnDocumentStart(const YAML::Mark& mark) override { marks.push_back(mark); }
  void OnDocumentEnd() override {}
  void OnNull(const YAML::Mark&, YAML::anchor_t) override {}
  void OnAlias(const YAML::Mark&, YAML::anchor_t) override {}
  void OnScalar(const YAML::Mark&, const std::string&, YAML::anchor_t, const std::string&) override {}
  void OnSequenceStart(const YAML::Mark&, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {}
  void OnSequenceEnd() override {}
  void OnMapStart(const YAML::Mark&, const std::string&, YAML::anchor_t, YAML::EmitterStyle::value) override {}
  void OnMapEnd() override {}

  std::vector<YAML::Mark> marks;
};

// YAML 1.2 core-schema floats without the .inf/.nan spellings (a bound is
// never infinite): [-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?.
bool is_decimal_number(std::string_view s) {
  std::size_t i = 0;
  const auto digits = [&] {
    const std::size_t from = i;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9') ++i;
    return i - from;
  };
  if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
  std::size_t mantissa = digits();
  if (i < s.size() && s[i] == '.') {
    ++i;
    mantissa += digits();
  }
  if (mantissa == 0) return false;
  if (i < s.size() && (s[i] == 'e' || s[i] == 'E')) {
    ++i;
    if (i < s.size() && (s[i] == '+' || s[i] == '-')) ++i;
    if (digits() == 0) return false;
  }
  return i == s.size();
}

// A bound as a reader would write it: whole numbers in full (10000000, not
// 1e+07), fractions with up to six significant digits.
std::string format_bound(double v) {
  if (v == std::floor(v) && std::fabs(v) < 1e15) {
    return std::to_string(static_cast<long long>(v));
  }
  std::array<char, 32> buf{};
  std::snprintf(buf.data(), buf.size(), "%g", v);
  return buf.data();
}

std::string unknown_message(const std::string& name, std::initializer_list<std::string_view> known) {
  std::string message = "unknown field " + quote(name);
  std::string_view best;
  std::size_t best_distance = kMaxSuggestDistance + 1;
  for (std::string_view k : known) {
    const std::size_t gap = k.size() > name.size() ? k.size() - name.size() : name.size() - k.size();
    if (gap > kMaxSuggestDistance) continue;  // also keeps huge keys cheap
    const std::size_t d = edit_distance(name, k);
    // Two edits turn `foo` into `log`; only suggest when most of the
    // known name survives.
    if (d < best_distance && 2 * d <= k.size()) {
      best = k;
      best_distance = d;
    }
  }
  if (!best.empty()) return message + "; did you mean '" + std::string(best) + "'?";
  message += "; known fields:";
  for (std::string_view k : known) message += " " + std::string(k);
  return message;
}

}  // namespace

Error::Error(std::string source, std::string field, int line, std::string message)
    : std::runtime_error(format_what(source, field, line, message)),
      source_(std::move(source)),
      field_(std::move(field)),
      line_(line),
      message_(std::move(message)) {}

std::string escape(std::string_view s) {
  std::string out;
  std::size_t shown = 0;
  for (char c : s) {
    if (shown == kMaxEchoChars) {
      out += "...";
      break;
    }
    const auto u = static_cast<unsigned char>(c);
    if (c == '\\') {
      out += "\\\\";
    } else if (u >= 0x20 && u < 0x7f) {
      out += c;
    } else {
      std::array<char, 5> buf{};
      std::snprintf(buf.data(), buf.size(), "\\x%02x", u);
      out += buf.data();
    }
    ++shown;
  }
  return out;
}

std::string quote(std::string_view s) { return "'" + escape(s) + "'"; }

int line_of(const YAML::Node& node) {
  const YAML::Mark mark = node.Mark();
  return mark.is_null() ? 0 : mark.line + 1;
}

std::string describe(const YAML::Node& node) {
  switch (node.Type()) {
    case YAML::NodeType::Undefined:
    case YAML::NodeType::Null:
      return "null";
    case YAML::NodeType::Sequence:
      return "a list";
    case YAML::NodeType::Map:
      return "a map";
    case YAML::NodeType::Scalar:
      break;
  }
  return quote(node.Scalar());
}

bool is_quoted(const YAML::Node& node) { return node.Tag() == "!"; }

std::string quoted_or_describe(const YAML::Node& node) {
  if (node.IsScalar() && is_quoted(node)) return "quoted string " + quote(node.Scalar());
  return describe(node);
}

std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::vector<std::size_t>> d(a.size() + 1, std::vector<std::size_t>(b.size() + 1));
  for (std::size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (std::size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1]) {
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
      }
    }
  }
  return d[a.size()][b.size()];
}

std::string join(const std::string& path, std::string_view name) {
  return path.empty() ? std::string(name) : path + "." + std::string(name);
}

std::string indexed(const std::string& path, std::size_t i) { return path + "[" + std::to_string(i) + "]"; }

UintParse parse_uint(std::string_view s, std::uint64_t& out) {
  bool negative = false;
  if (!s.empty() && (s[0] == '+' || s[0] == '-')) {
    negative = s[0] == '-';
    s.remove_prefix(1);
  }
  unsigned base = 10;
  if (s.size() > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'o')) {
    if (negative) return UintParse::kNotInteger;
    base = s[1] == 'x' ? 16 : 8;
    s.remove_prefix(2);
  }
  if (s.empty()) return UintParse::kNotInteger;
  std::uint64_t value = 0;
  bool overflow = false;
  for (char c : s) {
    unsigned digit = 0;
    if (c >= '0' && c <= '9') {
      digit = static_cast<unsigned>(c - '0');
    } else if (c >= 'a' && c <= 'f') {
      digit = static_cast<unsigned>(c - 'a') + 10;
    } else if (c >= 'A' && c <= 'F') {
      digit = static_cast<unsigned>(c - 'A') + 10;
    } else {
      return UintParse::kNotInteger;
    }
    if (digit >= base) return UintParse::kNotInteger;
    if (value > (std::numeric_limits<std::uint64_t>::max() - digit) / base) {
      overflow = true;
    } else {
      value = value * base + digit;
    }
  }
  // "-0" is zero, not a negative number.
  if (negative && (overflow || value != 0)) return UintParse::kNegative;
  if (overflow) return UintParse::kTooLarge;
  out = value;
  return UintParse::kOk;
}

Field element(const Field& list, std::size_t i) {
  const YAML::Node item = list.value[i];
  return Field{indexed(list.path, i), line_of(item) > 0 ? line_of(item) : list.line, item};
}

void Reader::fail(const std::string& field, int line, std::string message) const {
  throw Error(source_, field, line, std::move(message));
}

YAML::Node Reader::load_document(std::string_view text) const {
  const std::string owned(text);
  const YAML::Node root = YAML::Load(owned);  // the first document only
  check_single_document(owned);
  if (root.IsNull()) fail("", 0, "empty document");
  return root;
}

// A second document would be silently ignored by YAML::Load, and
// YAML::LoadAll loops forever (allocating) on a stray flow token such as a
// lone `,` (jbeder/yaml-cpp#1040, fixed after 0.8). So documents are walked
// by hand, never more than two.
void Reader::check_single_document(const std::string& text) const {
  std::istringstream in(text);
  YAML::Parser parser(in);
  DocumentStarts starts;
  if (!parser.HandleNextDocument(starts)) return;
  if (!parser.HandleNextDocument(starts)) return;
  // The parser made no progress (same start as the first document, or no
  // start at all): the token it stopped at is one yaml-cpp neither consumes
  // nor rejects.
  if (starts.marks.size() < 2 || starts.marks[1].pos == starts.marks[0].pos) {
    const YAML::Mark at = starts.marks.empty() ? YAML::Mark::null_mark() : starts.marks.back();
    fail("", at.is_null() ? 0 : at.line + 1,
         "YAML syntax error: unexpected token (column " + std::to_string(at.column + 1) + ")");
  }
  const int line = starts.marks[1].is_null() ? 0 : starts.marks[1].line + 1;
  fail("", line, "expected one YAML document, found more");
}

std::string Reader::read_string(const Field& f) const {
  if (!f.value.IsScalar()) fail(f.path, f.line, "expected a string, got " + describe(f.value));
  return f.value.Scalar();
}

bool Reader::read_bool(const Field& f) const {
  const YAML::Node& v = f.value;
  if (v.IsScalar() && !is_quoted(v)) {
    const std::string& s = v.Scalar();
    // YAML 1.2 core schema only: `yes`, `on` and friends are too easy to
    // write by accident (and `no` is also a country code).
    if (s == "true" || s == "True" || s == "TRUE") return true;
    if (s == "false" || s == "False" || s == "FALSE") return false;
  }
  fail(f.path, f.line, "expected a boolean, got " + quoted_or_describe(v));
}

std::uint64_t Reader::read_uint64(const Field& f, std::uint64_t lo, std::uint64_t hi) const {
  const YAML::Node& v = f.value;
  if (!v.IsScalar() || is_quoted(v)) {
    fail(f.path, f.line, "expected an integer, got " + quoted_or_describe(v));
  }
  std::uint64_t value = 0;
  switch (parse_uint(v.Scalar(), value)) {
    case UintParse::kOk:
      break;
    case UintParse::kNotInteger:
      fail(f.path, f.line, "expected an integer, got " + quote(v.Scalar()));
    case UintParse::kNegative:
      fail(f.path, f.line, "expected a non-negative integer, got " + quote(v.Scalar()));
    case UintParse::kTooLarge:
      value = std::numeric_limits<std::uint64_t>::max();
      break;
  }
  if (value < lo || value > hi) {
    fail(f.path, f.line,
         "out of range: got " + quote(v.Scalar()) + ", must be " + std::to_string(lo) + ".." + std::to_string(hi));
  }
  return value;
}

double Reader::read_number(const Field& f, double lo, double hi) const {
  const YAML::Node& v = f.value;
  if (!v.IsScalar() || is_quoted(v)) {
    fail(f.path, f.line, "expected a number, got " + quoted_or_describe(v));
  }
  std::string_view s = v.Scalar();
  if (!is_decimal_number(s)) fail(f.path, f.line, "expected a number, got " + quote(s));
  // from_chars takes no leading '+'; it is correctly rounded, as strtod.
  if (s.front() == '+') s.remove_prefix(1);
  double value = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
  // result_out_of_range: beyond a double either way (1e400, 1e-400).
  const bool representable = ec == std::errc();
  if (ec == std::errc::invalid_argument || end != s.data() + s.size()) {
    fail(f.path, f.line, "expected a number, got " + quote(v.Scalar()));
  }
  if (!representable || !std::isfinite(value) || value < lo || value > hi) {
    fail(f.path, f.line,
         "out of range: got " + quote(v.Scalar()) + ", must be " + format_bound(lo) + ".." + format_bound(hi));
  }
  return value;
}

Map::Map(const Reader& reader, const YAML::Node& node, std::string path, int line,
         std::initializer_list<std::string_view> known, bool null_is_empty)
    : reader_(reader), path_(std::move(path)), line_(line) {
  if (node.IsNull() && null_is_empty) return;
  if (!node.IsMap()) reader_.fail(path_, line_, "expected a map, got " + describe(node));
  for (auto it = node.begin(); it != node.end(); ++it) {
    const YAML::Node key = it->first;
    const int key_line = line_of(key);
    if (!key.IsScalar()) {
      reader_.fail(path_, key_line, "expected a field name, got " + describe(key));
    }
    const std::string& name = key.Scalar();
    const std::string field_path = join(path_, escape(name));
    if (std::find(known.begin(), known.end(), name) == known.end()) {
      reader_.fail(field_path, key_line, unknown_message(name, known));
    }
    for (const Field& seen : fields_) {
      if (seen.path == field_path) {
        reader_.fail(field_path, key_line, "duplicate field (first set on line " + std::to_string(seen.line) + ")");
      }
    }
    fields_.push_back(Field{field_path, key_line, it->second});
  }
}

std::optional<Field> Map::find(std::string_view name) const {
  const std::string field_path = join(path_, name);
  for (const Field& f : fields_) {
    if (f.path == field_path) return f;
  }
  return std::nullopt;
}

Field Map::require(std::string_view name) const {
  std::optional<Field> f = find(name);
  if (!f) reader_.fail(join(path_, name), line_, "required field missing");
  return *f;
}

Error current_error(const std::string& source) {
  try {
    throw;
  } catch (const Error& e) {
    return e;
  } catch (const YAML::Exception& e) {
    const int line = e.mark.is_null() ? 0 : e.mark.line + 1;
    std::string message = "YAML syntax error: " + escape(e.msg);
    if (!e.mark.is_null()) message += " (column " + std::to_string(e.mark.column + 1) + ")";
    return Error(source, "", line, std::move(message));
  } catch (const std::bad_alloc&) {
    return Error(source, "", 0, "out of memory while parsing");
  } catch (const std::exception& e) {
    return Error(source, "", 0, std::string("cannot parse: ") + e.what());
  } catch (...) {
    return Error(source, "", 0, "cannot parse: unknown error");
  }
}

}  // namespace gw::config::strict
