#include "perf/gossipsim/report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <sstream>

namespace gw::sim {
namespace {

nlohmann::json summary(const Summary& s) { return {{"mean", s.mean}, {"p99", s.p99}, {"max", s.max}}; }

std::string xml_escape(const std::string& in) {
  std::string out;
  for (char c : in) {
    switch (c) {
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '&': out += "&amp;"; break;
      case '\'': out += "&apos;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string fmt(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

}  // namespace

nlohmann::json to_json(const Results& r, bool with_perf) {
  nlohmann::json j;
  j["scenario"] = r.scenario;
  j["seed"] = r.seed;
  j["members"] = r.members;
  j["phantoms"] = r.phantoms;
  j["duration_s"] = r.duration_s;
  nlohmann::json by_type = nlohmann::json::object();
  for (std::size_t t = 0; t < r.egress_by_type.size(); ++t)
    by_type[cp::engine::message_type_name(t)] = {
        {"packets_per_member_s", r.egress_by_type[t].packets_per_s},
        {"bytes_per_member_s", r.egress_by_type[t].bytes_per_s},
        {"payload_bytes_per_member_s", r.egress_by_type[t].payload_bytes_per_s}};
  j["egress"] = {{"bytes_per_member_s", summary(r.egress_bytes_per_s)},
                 {"payload_bytes_per_member_s", summary(r.egress_payload_bytes_per_s)},
                 {"packets_per_member_s", summary(r.egress_packets_per_s)},
                 {"by_type", by_type},
                 {"budget_bytes_per_s", r.egress_budget_bytes_per_s},
                 {"peak_interval_bytes_per_s", r.egress_peak_interval_bytes_per_s},
                 {"budget_violations", r.budget_violations},
                 {"queue_drops_by_class", r.egress_drops},
                 {"deferred_by_class", r.egress_deferred},
                 {"link_fraction_mean", r.link_fraction_mean},
                 {"link_fraction_max", r.link_fraction_max}};
  nlohmann::json det = nlohmann::json::array();
  for (const Detection& d : r.detections)
    det.push_back({{"node", d.node}, {"failed_at_s", d.failed_at_s}, {"first_s", d.first_s},
                   {"p99_s", d.p99_s}, {"all_s", d.all_s}, {"observers", d.observers},
                   {"detected", d.detected}, {"unaware", d.unaware}});
  j["detection"] = {{"failures", det},
                    {"first_s", summary(r.detection_first_s)},
                    {"p99_s", summary(r.detection_p99_s)},
                    {"all_s", summary(r.detection_all_s)},
                    {"undetected", r.undetected}};
  j["false_positives"] = {{"total", r.false_positives},
                          {"healthy_subjects", r.false_positives_healthy},
                          {"across_partition", r.false_positives_partition},
                          {"per_member_hour", r.false_positives_per_member_hour},
                          {"suspicions", r.suspicions},
                          {"refutations", r.refutations}};
  j["resurrections"] = r.resurrections;
  j["zombies_at_end"] = r.zombies_at_end;
  nlohmann::json zombies = nlohmann::json::array();
  for (const Zombie& z : r.zombies)
    zombies.push_back({{"observer", z.observer}, {"node", z.node}, {"suspect", z.suspect},
                       {"incarnation", z.incarnation}, {"since_s", z.since_s},
                       {"departed_s", z.departed_s}});
  j["zombies"] = zombies;
  j["joins_after_departure"] = r.joins_after_departure;
  j["drops"] = {{"broadcast_by_class", r.broadcast_drops},
                {"urgent", r.urgent_drops},
                {"outbox_full", r.outbox_drops}};
  j["convergence"] = {{"converged_at_end", r.converged_at_end},
                      {"final_view_min", r.final_view_min},
                      {"final_view_max", r.final_view_max},
                      {"final_expected_view", r.final_expected_view},
                      {"first_converged_s", r.first_converged_s},
                      {"converged_after_heal_s", r.converged_after_heal_s},
                      {"after_last_join_s", r.converged_after_last_join_s}};
  j["storm"] = {{"view_excess_max", r.view_excess_max},
                {"view_excess_max_fraction", r.view_excess_max_fraction},
                {"last_phantom_death_s", r.last_phantom_death_s},
                {"recovered_after_last_phantom_s", r.recovered_after_last_phantom_s}};
  nlohmann::json batches = nlohmann::json::array();
  for (const RestartBatch& b : r.restarts)
    batches.push_back({{"at_s", b.at_s}, {"members", b.members}, {"all_alive_after_s", b.all_alive_after_s}});
  j["restarts"] = {{"batches", batches}, {"all_alive_after_s", r.restarts_all_alive_after_s}};
  j["joins"] = {{"requests", r.join_requests}, {"requests_at_seeds", r.join_requests_at_seeds}};
  j["memory"] = {{"table_entries_max", r.table_entries_max},
                 {"table_bytes_per_member_est", r.table_bytes_per_member_est}};
  j["traffic"] = {{"datagrams_sent", r.datagrams_sent},
                  {"datagrams_delivered", r.datagrams_delivered},
                  {"datagrams_lost", r.datagrams_lost},
                  {"datagrams_on_wire", r.datagrams_on_wire},
                  {"bytes_sent", r.bytes_sent},
                  {"payload_bytes_sent", r.payload_bytes_sent},
                  {"max_datagram_bytes", r.max_datagram_bytes},
                  {"decode_failures", r.decode_failures}};
  j["sim_events"] = r.sim_events;
  j["member_events"] = r.member_events;
  if (with_perf)
    j["perf"] = {{"wall_s", r.perf.wall_s},
                 {"sim_events_per_s", r.perf.sim_events_per_s},
                 {"member_events_per_s", r.perf.member_events_per_s},
                 {"simulated_s_per_wall_s", r.perf.simulated_s_per_wall_s},
                 {"heap_peak_bytes", r.perf.heap_peak_bytes},
                 {"heap_bytes_per_member", r.perf.heap_bytes_per_member}};
  return j;
}

std::string to_csv(const Results& r) {
  std::ostringstream o;
  o << "t_s,up,phantoms_up,expected_view,view_mean,view_min,view_median,view_max,table_mean,"
       "egress_bytes_per_member_s,egress_payload_bytes_per_member_s,egress_packets_per_member_s,"
       "link_fraction_max,member_events,suspicions,refutations,converged\n";
  for (const Sample& s : r.series)
    o << fmt(s.t_s) << ',' << s.up << ',' << s.phantoms_up << ',' << s.expected_view << ','
      << fmt(s.view_mean) << ',' << s.view_min << ',' << fmt(s.view_median) << ',' << s.view_max
      << ',' << fmt(s.table_mean) << ',' << fmt(s.egress_bytes_per_member_s) << ','
      << fmt(s.egress_payload_bytes_per_member_s) << ',' << fmt(s.egress_packets_per_member_s)
      << ',' << fmt(s.link_fraction_max) << ',' << s.member_events << ',' << s.suspicions << ','
      << s.refutations << ',' << (s.converged ? 1 : 0) << '\n';
  return o.str();
}

namespace {

struct Line {
  std::string label;
  std::string color;
  std::function<double(const Sample&)> y;
};

void panel(std::ostringstream& o, const Results& r, double top, const std::string& title,
           const std::vector<Line>& lines) {
  constexpr double kLeft = 80, kWidth = 820, kHeight = 220;
  double tmax = 1, ymax = 1;
  for (const Sample& s : r.series) {
    tmax = std::max(tmax, s.t_s);
    for (const Line& l : lines) ymax = std::max(ymax, l.y(s));
  }
  ymax *= 1.1;
  o << "<text x='" << kLeft << "' y='" << top - 8 << "' font-size='14' font-weight='bold'>"
    << title << "</text>\n";
  o << "<rect x='" << kLeft << "' y='" << top << "' width='" << kWidth << "' height='" << kHeight
    << "' fill='none' stroke='#888'/>\n";
  for (int k = 0; k <= 4; ++k) {
    const double yv = ymax * k / 4;
    const double py = top + kHeight - kHeight * k / 4;
    o << "<text x='" << kLeft - 6 << "' y='" << py + 4 << "' font-size='11' text-anchor='end'>"
      << fmt(std::round(yv * 10) / 10) << "</text>\n";
    const double tv = tmax * k / 4;
    const double px = kLeft + kWidth * k / 4;
    o << "<text x='" << px << "' y='" << top + kHeight + 14
      << "' font-size='11' text-anchor='middle'>" << fmt(std::round(tv)) << " s</text>\n";
  }
  double lx = kLeft + 10;
  for (const Line& l : lines) {
    o << "<polyline fill='none' stroke='" << l.color << "' stroke-width='1.5' points='";
    for (const Sample& s : r.series)
      o << fmt(kLeft + kWidth * s.t_s / tmax) << ',' << fmt(top + kHeight - kHeight * l.y(s) / ymax)
        << ' ';
    o << "'/>\n";
    o << "<text x='" << lx << "' y='" << top + 14 << "' font-size='11' fill='" << l.color << "'>"
      << l.label << "</text>\n";
    lx += 10 + 7.0 * static_cast<double>(l.label.size());
  }
}

}  // namespace

std::string to_svg(const Results& r) {
  std::ostringstream o;
  o << "<svg xmlns='http://www.w3.org/2000/svg' width='940' height='600' "
       "font-family='sans-serif'>\n<rect width='100%' height='100%' fill='white'/>\n";
  o << "<text x='80' y='22' font-size='16'>gossipsim: " << xml_escape(r.scenario) << " (seed " << r.seed
    << ", " << r.members << " members, " << r.phantoms << " phantoms)</text>\n";
  panel(o, r, 60, "view size (live members seen by steady members)",
        {{"expected", "#2a2", [](const Sample& s) { return static_cast<double>(s.expected_view); }},
         {"min", "#c33", [](const Sample& s) { return static_cast<double>(s.view_min); }},
         {"mean", "#36c", [](const Sample& s) { return s.view_mean; }},
         {"max", "#c8c", [](const Sample& s) { return static_cast<double>(s.view_max); }}});
  panel(o, r, 340, "egress per member",
        {{"bytes/s", "#36c", [](const Sample& s) { return s.egress_bytes_per_member_s; }},
         {"packets/s x100", "#c60",
          [](const Sample& s) { return 100 * s.egress_packets_per_member_s; }}});
  o << "</svg>\n";
  return o.str();
}

}  // namespace gw::sim
