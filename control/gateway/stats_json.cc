#include "control/gateway/stats_json.h"

#include <cstdio>
#include <fstream>

#include <nlohmann/json.hpp>

namespace gw::cp {
namespace {

using Json = nlohmann::ordered_json;

// Builds the document as the walk describes it.
class JsonWriter final : public CounterVisitor {
 public:
  void open(std::string_view key) override { push(slot(key) = Json::object()); }
  void open_array(std::string_view key) override { push(slot(key) = Json::array()); }
  void close() override { stack_.pop_back(); }
  void text(std::string_view key, std::string_view value) override { slot(key) = std::string(value); }
  void number(std::string_view key, std::uint64_t value) override { slot(key) = value; }
  void counter(std::string_view key, std::uint64_t value, const Series&) override { slot(key) = value; }

  Json& doc() { return doc_; }

 private:
  // Only the innermost open object or array grows, so the pointers to the
  // enclosing ones stay valid.
  Json& slot(std::string_view key) {
    Json& top = *stack_.back();
    if (top.is_array()) {
      top.push_back(nullptr);
      return top.back();
    }
    return top[std::string(key)];
  }
  void push(Json& j) { stack_.push_back(&j); }

  Json doc_ = Json::object();
  std::vector<Json*> stack_{&doc_};
};

}  // namespace

std::string stats_json(const CounterSnapshot& snapshot, bool compact) {
  JsonWriter w;
  walk_counters(snapshot, w);
  return compact ? w.doc().dump() : w.doc().dump(2) + "\n";
}

std::string stats_json(const std::vector<WorkerStats>& workers, unsigned control_lcore,
                       const cp::ControlCounters& control, const dp::TxQueueCounters& tx_queue,
                       const cp::EngineHost* host, bool compact, bool include_members,
                       const std::optional<GatewaySections>& gateway) {
  return stats_json(counter_snapshot(workers, control_lcore, control, tx_queue, host, include_members, gateway),
                    compact);
}

bool write_file_atomically(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) return false;
    out << text;
    out.flush();
    if (!out) return false;
  }
  return std::rename(tmp.c_str(), path.c_str()) == 0;
}

}  // namespace gw::cp
