#include "dataplane/stats_json.h"

#include <cstdio>
#include <fstream>

#include <nlohmann/json.hpp>

namespace gw::dp {
namespace {

using Json = nlohmann::ordered_json;

Json worker_counters(const WorkerCounters& c) {
  Json j;
  j["rx_total"] = c.rx_total;
  for (std::size_t v = 0; v < kVerdictCount; ++v) j[std::string(kVerdictNames[v])] = c.verdicts[v];
  return j;
}

Json class_counts(const std::array<std::uint64_t, 4>& by_class) {
  Json j;
  for (std::size_t c = 0; c < kClassNames.size(); ++c) j[std::string(kClassNames[c])] = by_class[c];
  return j;
}

Json control_counters(const cp::ControlCounters& c) {
  Json j;
  for (std::size_t t = 0; t < cp::kMsgTypeCount; ++t) j[std::string(cp::kMsgCounterNames[t])] = c.msgs[t];
  j["msg_decode_error"] = c.msg_decode_error;
  j["msg_unknown"] = c.msg_unknown;
  return j;
}

}  // namespace

std::string stats_json(const std::vector<WorkerStats>& workers, unsigned control_lcore,
                       const cp::ControlCounters& control) {
  WorkerCounters sum;
  for (const WorkerStats& w : workers) {
    sum.rx_total += w.counters.rx_total;
    for (std::size_t v = 0; v < kVerdictCount; ++v) sum.verdicts[v] += w.counters.verdicts[v];
    for (std::size_t c = 0; c < 4; ++c) sum.accepted_by_class[c] += w.counters.accepted_by_class[c];
  }

  Json totals = worker_counters(sum);
  const Json control_json = control_counters(control);
  for (const std::string_view name : cp::kMsgCounterNames) totals[std::string(name)] = control_json[std::string(name)];
  totals["msg_decode_error"] = control.msg_decode_error;
  totals["msg_unknown"] = control.msg_unknown;

  Json lcores = Json::array();
  for (const WorkerStats& w : workers) {
    Json l;
    l["lcore"] = w.lcore;
    l["role"] = "worker";
    l["queue"] = w.queue;
    l["counters"] = worker_counters(w.counters);
    l["accepted_by_class"] = class_counts(w.counters.accepted_by_class);
    l["rx_bursts"] = w.counters.rx_bursts;
    l["idle_polls"] = w.counters.idle_polls;
    lcores.push_back(std::move(l));
  }
  Json ctl;
  ctl["lcore"] = control_lcore;
  ctl["role"] = "control";
  ctl["counters"] = control_counters(control);
  ctl["handoffs_by_class"] = class_counts(control.handoffs_by_class);
  lcores.push_back(std::move(ctl));

  Json doc;
  doc["totals"] = std::move(totals);
  doc["classes"] = class_counts(sum.accepted_by_class);
  doc["lcores"] = std::move(lcores);
  return doc.dump(2) + "\n";
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

}  // namespace gw::dp
