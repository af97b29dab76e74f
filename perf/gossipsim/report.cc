#include "perf/gossipsim/report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <initializer_list>
#include <iomanip>
#include <numeric>
#include <sstream>
#include <stdexcept>

namespace gw::sim {
namespace {

nlohmann::json summary(const Summary& s) { return {{"mean", s.mean}, {"p99", s.p99}, {"max", s.max}}; }

std::string xml_escape(const std::string& in) {
  std::string out;
  for (char c : in) {
    switch (c) {
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '&':
        out += "&amp;";
        break;
      case '\'':
        out += "&apos;";
        break;
      default:
        out += c;
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
                 {"expired_by_class", r.egress_expired},
                 {"queue_bytes_max", r.egress_queue_bytes_max},
                 {"link_fraction_mean", r.link_fraction_mean},
                 {"link_fraction_max", r.link_fraction_max}};
  nlohmann::json det = nlohmann::json::array();
  for (const Detection& d : r.detections)
    det.push_back({{"node", d.node},
                   {"failed_at_s", d.failed_at_s},
                   {"first_s", d.first_s},
                   {"p99_s", d.p99_s},
                   {"all_s", d.all_s},
                   {"observers", d.observers},
                   {"detected", d.detected},
                   {"unaware", d.unaware}});
  j["detection"] = {{"failures", det},
                    {"observers", r.detection_observers},
                    {"times_detected", r.detection_times_s.size()},
                    {"first_s", summary(r.detection_first_s)},
                    {"p99_s", summary(r.detection_p99_s)},
                    {"all_s", summary(r.detection_all_s)},
                    {"undetected", r.undetected}};
  j["false_positives"] = {{"total", r.false_positives},
                          {"healthy_subjects", r.false_positives_healthy},
                          {"live_phantoms", r.false_positives_phantom},
                          {"across_partition", r.false_positives_partition},
                          {"after_heal", r.false_positives_after_heal},
                          {"restarted_subjects", r.false_positives_restarted},
                          {"per_member_hour", r.false_positives_per_member_hour},
                          {"suspicions", r.suspicions},
                          {"refutations", r.refutations}};
  j["resurrections"] = r.resurrections;
  j["zombies_at_end"] = r.zombies_at_end;
  nlohmann::json zombies = nlohmann::json::array();
  for (const Zombie& z : r.zombies)
    zombies.push_back({{"observer", z.observer},
                       {"node", z.node},
                       {"suspect", z.suspect},
                       {"incarnation", z.incarnation},
                       {"since_s", z.since_s},
                       {"departed_s", z.departed_s},
                       {"observer_health", z.observer_health},
                       {"observer_in_storm", z.observer_in_storm}});
  j["zombies"] = zombies;
  j["joins_after_departure"] = r.joins_after_departure;
  j["builds_at_end"] = {{"pairs", r.build_pairs_at_end}, {"unknown", r.builds_unknown_at_end}};
  j["drops"] = {{"broadcast_by_class", r.broadcast_drops}, {"urgent", r.urgent_drops}, {"outbox_full", r.outbox_drops}};
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
  const auto totals = [](const EngineTotals& t) {
    nlohmann::json o = nlohmann::json::object();
    for (std::size_t i = 0; i < EngineTotals::kCount; ++i) o[std::string(cp::engine::kCounterInfo[i].name)] = t.values[i];
    return o;
  };
  j["engine_counters"] = {{"whole_run", totals(r.engine)}, {"measured", totals(r.engine_measured)}};
  j["joins"] = {{"requests", r.join_requests}, {"requests_at_seeds", r.join_requests_at_seeds}};
  j["memory"] = {{"table_entries_max", r.table_entries_max},
                 {"table_bytes_per_member_est", r.table_bytes_per_member_est}};
  j["traffic"] = {{"datagrams_sent", r.datagrams_sent},
                  {"datagrams_delivered", r.datagrams_delivered},
                  {"datagrams_lost", r.datagrams_lost},
                  {"datagrams_partitioned", r.datagrams_partitioned},
                  {"datagrams_on_wire", r.datagrams_on_wire},
                  {"bytes_sent", r.bytes_sent},
                  {"payload_bytes_sent", r.payload_bytes_sent},
                  {"max_datagram_bytes", r.max_datagram_bytes},
                  {"decode_failures", r.decode_failures}};
  {
    // The clocks drawn: their range (the list itself is Results::clocks).
    std::uint64_t offset_max = 0;
    std::int64_t drift_min = 0;
    std::int64_t drift_max = 0;
    for (const Results::Clock& c : r.clocks) {
      offset_max = std::max(offset_max, c.offset_ns);
      drift_min = std::min(drift_min, c.drift_ppb);
      drift_max = std::max(drift_max, c.drift_ppb);
    }
    j["clocks"] = {{"regressions", r.clock_regressions},
                   {"ring_spread_max_ms", r.ring_clock_spread_max_ms},
                   {"ring_spread_end_ms", r.ring_clock_spread_end_ms},
                   {"offset_max_s", static_cast<double>(offset_max) / 1e9},
                   {"drift_min_ppm", static_cast<double>(drift_min) / 1e3},
                   {"drift_max_ppm", static_cast<double>(drift_max) / 1e3}};
  }
  j["sim_events"] = r.sim_events;
  j["member_events"] = r.member_events;
  if (with_perf)
    j["perf"] = {{"wall_s", r.perf.wall_s},
                 {"sim_events_per_s", r.perf.sim_events_per_s},
                 {"member_events_per_s", r.perf.member_events_per_s},
                 {"simulated_s_per_wall_s", r.perf.simulated_s_per_wall_s},
                 {"heap_peak_bytes", r.perf.heap_peak_bytes},
                 {"heap_bytes_per_member", r.perf.heap_bytes_per_member},
                 {"table_entries_at_peak", r.perf.table_entries_at_peak},
                 {"table_bytes_per_entry", r.perf.table_bytes_per_entry},
                 {"identity_pool_bytes", r.perf.identity_pool_bytes},
                 {"heap_bytes_per_entry", r.perf.heap_bytes_per_entry}};
  return j;
}

std::string to_csv(const Results& r) {
  std::ostringstream o;
  o << "t_s,up,phantoms_up,expected_view,view_mean,view_min,view_median,view_max,table_mean,"
       "egress_bytes_per_member_s,egress_payload_bytes_per_member_s,egress_packets_per_member_s,"
       "link_fraction_max,member_events,suspicions,refutations,converged\n";
  for (const Sample& s : r.series)
    o << fmt(s.t_s) << ',' << s.up << ',' << s.phantoms_up << ',' << s.expected_view << ',' << fmt(s.view_mean) << ','
      << s.view_min << ',' << fmt(s.view_median) << ',' << s.view_max << ',' << fmt(s.table_mean) << ','
      << fmt(s.egress_bytes_per_member_s) << ',' << fmt(s.egress_payload_bytes_per_member_s) << ','
      << fmt(s.egress_packets_per_member_s) << ',' << fmt(s.link_fraction_max) << ',' << s.member_events << ','
      << s.suspicions << ',' << s.refutations << ',' << (s.converged ? 1 : 0) << '\n';
  return o.str();
}

namespace {

// A 1, 2 or 5 times 10^k step giving about `target` intervals over [0, hi].
double nice_step(double hi, int target) {
  if (!(hi > 0)) return 1;
  const double raw = hi / target;
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  const double norm = raw / mag;
  const double f = norm <= 1 ? 1 : norm <= 2 ? 2 : norm <= 5 ? 5 : 10;
  return f * mag;
}

// Tick labels: 1500 -> "1.5k", 2000000 -> "2M", 0.25 -> "0.25".
std::string tick_label(double v) {
  const double a = std::fabs(v);
  char buf[32];
  if (a >= 1e6)
    std::snprintf(buf, sizeof buf, "%gM", v / 1e6);
  else if (a >= 1e4)
    std::snprintf(buf, sizeof buf, "%gk", v / 1e3);
  else
    std::snprintf(buf, sizeof buf, "%g", std::round(v * 1e6) / 1e6);
  return buf;
}

struct Series {
  std::string label;
  std::string color;
  std::vector<std::pair<double, double>> points;
  bool dashed = false;
};

struct Chart {
  std::string title;
  std::string x_title;
  std::string y_title;
  std::vector<Series> series;
  std::vector<Marker> markers;  // bands and vertical lines along x
  double h_line = -1;           // a horizontal reference line (e.g. the budget), -1: none
  double y_max = -1;            // fixed top of the y axis, -1: from the data
  std::string h_label;
  std::string empty_note;  // shown when there is nothing to draw
};

constexpr double kLeft = 90, kWidth = 800, kHeight = 200, kPanelHeight = 300;

// One chart with its frame, rounded ticks on both axes, axis titles, legend
// and markers, its top-left corner at (0, top).
void draw(std::ostringstream& o, const Chart& c, double top) {
  double xmax = 0, ymax = 0;
  for (const Series& s : c.series)
    for (const auto& [x, y] : s.points) {
      xmax = std::max(xmax, x);
      ymax = std::max(ymax, y);
    }
  for (const Marker& m : c.markers) xmax = std::max(xmax, m.end_s);
  ymax = std::max(ymax, c.h_line);
  if (c.y_max > 0) ymax = c.y_max / 1.05;
  const double xstep = nice_step(xmax, 8);
  const double ystep = nice_step(ymax * 1.05, 5);
  xmax = std::max(xstep, std::ceil(xmax / xstep - 1e-9) * xstep);
  ymax = std::max(ystep, std::ceil(ymax * 1.05 / ystep - 1e-9) * ystep);
  const double y0 = top + 30;
  const auto px = [&](double x) { return kLeft + kWidth * x / xmax; };
  const auto py = [&](double y) { return y0 + kHeight - kHeight * y / ymax; };

  o << "<text x='" << kLeft << "' y='" << top + 16 << "' font-size='14' font-weight='bold'>" << xml_escape(c.title)
    << "</text>\n";
  // Markers under the data: bands shaded, moments as dashed lines, labelled.
  for (const Marker& m : c.markers) {
    const bool band = m.end_s > m.start_s;
    const std::string color = m.label.rfind("partition", 0) == 0  ? "#fc9"
                              : m.label.rfind("phantoms", 0) == 0 ? "#ccf"
                                                                  : "#999";
    if (band)
      o << "<rect x='" << fmt(px(m.start_s)) << "' y='" << y0 << "' width='" << fmt(px(m.end_s) - px(m.start_s))
        << "' height='" << kHeight << "' fill='" << color << "' fill-opacity='0.45'/>\n";
    else
      o << "<line x1='" << fmt(px(m.start_s)) << "' x2='" << fmt(px(m.start_s)) << "' y1='" << y0 << "' y2='"
        << y0 + kHeight << "' stroke='#555' stroke-dasharray='4,3'/>\n";
    o << "<text x='" << fmt(px(m.start_s) + 3) << "' y='" << y0 + kHeight - 4 << "' font-size='10' fill='#444'>"
      << xml_escape(m.label) << "</text>\n";
  }
  o << "<rect x='" << kLeft << "' y='" << y0 << "' width='" << kWidth << "' height='" << kHeight
    << "' fill='none' stroke='#888'/>\n";
  for (double v = 0; v <= ymax + ystep / 2; v += ystep) {
    o << "<line x1='" << kLeft - 4 << "' x2='" << kLeft + kWidth << "' y1='" << fmt(py(v)) << "' y2='" << fmt(py(v))
      << "' stroke='#eee'/>\n";
    o << "<text x='" << kLeft - 6 << "' y='" << fmt(py(v) + 4) << "' font-size='11' text-anchor='end'>" << tick_label(v)
      << "</text>\n";
  }
  for (double v = 0; v <= xmax + xstep / 2; v += xstep)
    o << "<text x='" << fmt(px(v)) << "' y='" << y0 + kHeight + 14 << "' font-size='11' text-anchor='middle'>"
      << tick_label(v) << "</text>\n";
  o << "<text x='" << kLeft + kWidth / 2 << "' y='" << y0 + kHeight + 32 << "' font-size='12' text-anchor='middle'>"
    << xml_escape(c.x_title) << "</text>\n";
  o << "<text transform='translate(" << kLeft - 58 << "," << y0 + kHeight / 2
    << ") rotate(-90)' font-size='12' text-anchor='middle'>" << xml_escape(c.y_title) << "</text>\n";
  if (c.h_line >= 0) {
    o << "<line x1='" << kLeft << "' x2='" << kLeft + kWidth << "' y1='" << fmt(py(c.h_line)) << "' y2='"
      << fmt(py(c.h_line)) << "' stroke='#c00' stroke-dasharray='6,3'/>\n";
    o << "<text x='" << kLeft + kWidth - 4 << "' y='" << fmt(py(c.h_line) - 4)
      << "' font-size='11' fill='#c00' text-anchor='end'>" << xml_escape(c.h_label) << "</text>\n";
  }
  bool any = false;
  double lx = kLeft + 10;
  for (const Series& s : c.series) {
    if (s.points.empty()) continue;
    any = true;
    o << "<polyline fill='none' stroke='" << s.color << "' stroke-width='1.5'"
      << (s.dashed ? " stroke-dasharray='5,3'" : "") << " points='";
    for (const auto& [x, y] : s.points) o << fmt(px(x)) << ',' << fmt(py(y)) << ' ';
    o << "'/>\n";
    o << "<text x='" << lx << "' y='" << y0 + 14 << "' font-size='11' fill='" << s.color << "'>" << xml_escape(s.label)
      << "</text>\n";
    lx += 12 + 6.5 * static_cast<double>(s.label.size());
  }
  if (!any && !c.empty_note.empty())
    o << "<text x='" << kLeft + kWidth / 2 << "' y='" << y0 + kHeight / 2
      << "' font-size='13' fill='#777' text-anchor='middle'>" << xml_escape(c.empty_note) << "</text>\n";
}

Chart chart(std::string title, std::string x_title, std::string y_title, std::vector<Marker> markers) {
  Chart c;
  c.title = std::move(title);
  c.x_title = std::move(x_title);
  c.y_title = std::move(y_title);
  c.markers = std::move(markers);
  return c;
}

Series over_time(const Results& r, const std::string& label, const std::string& color,
                 const std::function<double(const Sample&)>& y, bool dashed = false) {
  Series s{label, color, {}, dashed};
  for (const Sample& x : r.series) s.points.emplace_back(x.t_s, y(x));
  return s;
}

std::vector<Chart> charts(const Results& r) {
  std::vector<Chart> out;
  Chart views = chart("view size: live members in steady members' views", "time (s)", "members", r.markers);
  views.series = {over_time(r, "truly alive (expected view)", "#2a2",
                            [](const Sample& s) { return static_cast<double>(s.expected_view); }),
                  over_time(r, "min", "#c33", [](const Sample& s) { return static_cast<double>(s.view_min); }),
                  over_time(r, "median", "#36c", [](const Sample& s) { return s.view_median; }),
                  over_time(r, "max", "#c8c", [](const Sample& s) { return static_cast<double>(s.view_max); })};
  out.push_back(views);

  Chart egress = chart("egress per member (mean over members up)", "time (s)", "bytes/s per member", r.markers);
  egress.series = {
      over_time(r, "wire (header + tag incl.)", "#36c", [](const Sample& s) { return s.egress_bytes_per_member_s; }),
      over_time(
          r, "codec payload", "#999", [](const Sample& s) { return s.egress_payload_bytes_per_member_s; }, true)};
  if (r.egress_budget_bytes_per_s > 0) {
    egress.h_line = r.egress_budget_bytes_per_s;
    egress.h_label = "budget " + tick_label(r.egress_budget_bytes_per_s) + " B/s";
  }
  out.push_back(egress);

  const double interval = r.series.size() > 1 ? r.series[1].t_s - r.series[0].t_s : 1;
  Chart susp = chart("suspicions and refutations (all engines)", "time (s)",
                     "count per " + tick_label(interval) + " s interval", r.markers);
  susp.series = {
      over_time(r, "suspicions", "#c60", [](const Sample& s) { return static_cast<double>(s.suspicions); }),
      over_time(r, "refutations", "#396", [](const Sample& s) { return static_cast<double>(s.refutations); })};
  out.push_back(susp);

  Chart det = chart("failure detection: CDF over observers (all tracked failures)",
                    "time from failure to detection (s)", "observers detected (%)", {});
  det.empty_note = r.detections.empty() ? "no failures in this scenario" : "no observer detected a failure";
  det.y_max = 100;
  std::vector<double> t = r.detection_times_s;
  std::sort(t.begin(), t.end());
  // Over every observer that should detect: short of 100% if some never did.
  const double all = static_cast<double>(std::max<std::uint64_t>(r.detection_observers, t.size()));
  if (!t.empty()) {
    Series cdf{
        "detected (of " + std::to_string(r.detection_observers) + " observer-failures)", "#36c", {{0.0, 0.0}}, false};
    for (std::size_t k = 0; k < t.size(); ++k) {
      cdf.points.emplace_back(t[k], 100.0 * static_cast<double>(k) / all);
      cdf.points.emplace_back(t[k], 100.0 * static_cast<double>(k + 1) / all);
    }
    det.series.push_back(cdf);
  }
  out.push_back(det);
  return out;
}

// The charts stacked under a title, as one SVG document.
std::string svg_document(const std::string& title, const std::vector<Chart>& cs) {
  std::ostringstream o;
  o << "<svg xmlns='http://www.w3.org/2000/svg' width='940' height='"
    << 40 + kPanelHeight * static_cast<double>(cs.size()) << "' font-family='sans-serif'>\n"
    << "<rect width='100%' height='100%' fill='white'/>\n";
  o << "<text x='" << kLeft << "' y='22' font-size='16'>" << xml_escape(title) << "</text>\n";
  double top = 40;
  for (const Chart& c : cs) {
    draw(o, c, top);
    top += kPanelHeight;
  }
  o << "</svg>\n";
  return o.str();
}

std::string run_title(const Results& r) {
  return "gossipsim: " + r.scenario + " (seed " + std::to_string(r.seed) + ", " + std::to_string(r.members) +
         " members, " + std::to_string(r.phantoms) + " phantoms)";
}

}  // namespace

std::string to_svg(const Results& r) { return svg_document(run_title(r), charts(r)); }

std::vector<std::pair<std::string, std::string>> to_svgs(const Results& r) {
  static constexpr const char* kNames[] = {"views.svg", "egress.svg", "suspicions.svg", "detection.svg"};
  std::vector<std::pair<std::string, std::string>> out;
  const std::vector<Chart> cs = charts(r);
  for (std::size_t k = 0; k < cs.size(); ++k) out.emplace_back(kNames[k], svg_document(run_title(r), {cs[k]}));
  return out;
}

namespace {

// One scale-N run's figures, read from its result.json.
struct ScalePoint {
  double n = 0;
  double egress_mean = 0, egress_p99 = 0, egress_max = 0;
  double egress_without_failures = 0;  // every message type but suspect and dead
  double packets_mean = 0, packets_p99 = 0, packets_max = 0;
  double detect_first = 0, detect_p99 = 0, detect_all = 0, detect_all_max = 0;
  double fp_per_member_hour = 0;
  double table_bytes_per_entry = 0, heap_bytes_per_entry = 0, heap_peak_gb = 0;
};

double field(const nlohmann::json& j, const std::string& label, std::initializer_list<const char*> path) {
  const nlohmann::json* at = &j;
  std::string where;
  for (const char* key : path) {
    where += where.empty() ? key : std::string(".") + key;
    if (!at->is_object() || !at->contains(key)) throw std::runtime_error(label + ": no field " + where);
    at = &(*at)[key];
  }
  if (!at->is_number()) throw std::runtime_error(label + ": " + where + " is not a number");
  return at->get<double>();
}

ScalePoint scale_point(const std::string& label, const nlohmann::json& j) {
  ScalePoint p;
  p.n = field(j, label, {"members"});
  p.egress_mean = field(j, label, {"egress", "bytes_per_member_s", "mean"});
  p.egress_p99 = field(j, label, {"egress", "bytes_per_member_s", "p99"});
  p.egress_max = field(j, label, {"egress", "bytes_per_member_s", "max"});
  p.egress_without_failures = p.egress_mean - field(j, label, {"egress", "by_type", "suspect", "bytes_per_member_s"}) -
                              field(j, label, {"egress", "by_type", "dead", "bytes_per_member_s"});
  p.packets_mean = field(j, label, {"egress", "packets_per_member_s", "mean"});
  p.packets_p99 = field(j, label, {"egress", "packets_per_member_s", "p99"});
  p.packets_max = field(j, label, {"egress", "packets_per_member_s", "max"});
  const nlohmann::json& failures =
      j.contains("detection") ? j["detection"].value("failures", nlohmann::json::array()) : nlohmann::json::array();
  if (failures.empty()) throw std::runtime_error(label + ": no tracked failures (detection.failures)");
  for (const nlohmann::json& f : failures) {
    p.detect_first += field(f, label, {"first_s"});
    p.detect_p99 += field(f, label, {"p99_s"});
  }
  p.detect_first /= static_cast<double>(failures.size());
  p.detect_p99 /= static_cast<double>(failures.size());
  p.detect_all = field(j, label, {"detection", "all_s", "mean"});
  p.detect_all_max = field(j, label, {"detection", "all_s", "max"});
  p.fp_per_member_hour = field(j, label, {"false_positives", "per_member_hour"});
  p.table_bytes_per_entry = field(j, label, {"perf", "table_bytes_per_entry"});
  p.heap_bytes_per_entry = field(j, label, {"perf", "heap_bytes_per_entry"});
  p.heap_peak_gb = field(j, label, {"perf", "heap_peak_bytes"}) / 1e9;
  return p;
}

std::vector<ScalePoint> scale_points(const std::vector<std::pair<std::string, nlohmann::json>>& results) {
  std::vector<ScalePoint> ps;
  for (const auto& [label, j] : results) ps.push_back(scale_point(label, j));
  std::sort(ps.begin(), ps.end(), [](const ScalePoint& a, const ScalePoint& b) { return a.n < b.n; });
  return ps;
}

Series against_n(const std::vector<ScalePoint>& ps, const std::string& label, const std::string& color,
                 double ScalePoint::*y, bool dashed = false) {
  Series s{label, color, {}, dashed};
  for (const ScalePoint& p : ps) s.points.emplace_back(p.n, p.*y);
  return s;
}

}  // namespace

std::string scaling_svg(const std::vector<std::pair<std::string, nlohmann::json>>& results) {
  const std::vector<ScalePoint> ps = scale_points(results);
  std::vector<Chart> cs;
  const std::string n_title = "members (N)";
  Chart egress = chart("egress per member (measured window)", n_title, "bytes/s per member", {});
  egress.series = {against_n(ps, "mean", "#36c", &ScalePoint::egress_mean),
                   against_n(ps, "p99", "#c8c", &ScalePoint::egress_p99),
                   against_n(ps, "max", "#c33", &ScalePoint::egress_max),
                   against_n(ps, "mean without suspect and dead", "#2a2", &ScalePoint::egress_without_failures, true)};
  if (!ps.empty()) {
    egress.h_line = 1.5 * ps.front().egress_mean;
    egress.h_label = "1.5 x the mean at N = " + tick_label(ps.front().n);
  }
  cs.push_back(egress);
  Chart packets = chart("packets per member", n_title, "datagrams/s per member", {});
  packets.series = {against_n(ps, "mean", "#36c", &ScalePoint::packets_mean),
                    against_n(ps, "p99", "#c8c", &ScalePoint::packets_p99),
                    against_n(ps, "max", "#c33", &ScalePoint::packets_max)};
  cs.push_back(packets);
  Chart detect = chart("failure detection (mean over crashes)", n_title, "seconds after the crash", {});
  detect.series = {against_n(ps, "first observer", "#2a2", &ScalePoint::detect_first),
                   against_n(ps, "99 % of observers", "#36c", &ScalePoint::detect_p99),
                   against_n(ps, "all observers", "#c8c", &ScalePoint::detect_all),
                   against_n(ps, "all observers, slowest crash", "#c33", &ScalePoint::detect_all_max, true)};
  cs.push_back(detect);
  Chart fp = chart("false positives", n_title, "per member-hour", {});
  fp.series = {against_n(ps, "false positives", "#c33", &ScalePoint::fp_per_member_hour)};
  fp.y_max = std::max(1.0, std::max_element(ps.begin(), ps.end(), [](const auto& a, const auto& b) {
                             return a.fp_per_member_hour < b.fp_per_member_hour;
                           })->fp_per_member_hour);
  cs.push_back(fp);
  Chart bytes = chart("engine memory per member-table entry (at the peak)", n_title, "bytes per entry", {});
  bytes.series = {against_n(ps, "table", "#36c", &ScalePoint::table_bytes_per_entry),
                  against_n(ps, "whole heap", "#c8c", &ScalePoint::heap_bytes_per_entry)};
  bytes.h_line = 64;
  bytes.h_label = "64 B";
  cs.push_back(bytes);
  Chart heap = chart("heap peak (all members' engines)", n_title, "GB", {});
  heap.series = {against_n(ps, "heap peak", "#36c", &ScalePoint::heap_peak_gb)};
  cs.push_back(heap);

  return svg_document("gossipsim: scale-N, " + std::to_string(ps.size()) + " runs against N", cs);
}

std::string memory_law(const std::vector<std::pair<std::string, nlohmann::json>>& results, double budget_bytes,
                       double target_n) {
  const std::vector<ScalePoint> ps = scale_points(results);
  std::ostringstream o;
  o << std::setprecision(4);
  const auto law = [&](const std::string& name, double coef, double exponent) {
    o << name << '\n';
    for (const ScalePoint& p : ps) {
      const double fitted = coef * std::pow(p.n, exponent);
      const double measured = p.heap_peak_gb * 1e9;
      char residual[32];
      const double r = 100 * (measured - fitted) / fitted;
      std::snprintf(residual, sizeof residual, "%+.1f", std::fabs(r) < 0.05 ? 0.0 : r);  // no "-0.0".
      o << "  N = " << static_cast<long long>(p.n) << ": heap peak " << measured / 1e9 << " GB, law " << fitted / 1e9
        << " GB, residual " << residual << " %\n";
    }
    o << "  largest N within " << budget_bytes / (1ULL << 30)
      << " GiB: " << static_cast<long long>(std::floor(std::pow(budget_bytes / coef, 1 / exponent)))
      << "\n  heap at N = " << static_cast<long long>(target_n) << ": " << coef * std::pow(target_n, exponent) / 1e9
      << " GB\n";
  };
  std::vector<double> x, y;
  for (const ScalePoint& p : ps) {
    if (p.n <= 0 || p.heap_peak_gb <= 0) throw std::runtime_error("memory law: a run with no members or no heap peak");
    x.push_back(std::log(p.n));
    y.push_back(std::log(p.heap_peak_gb * 1e9));
  }
  const double k = static_cast<double>(x.size());
  if (k == 0) throw std::runtime_error("memory law: no runs");
  const double mx = std::accumulate(x.begin(), x.end(), 0.0) / k;
  const double my = std::accumulate(y.begin(), y.end(), 0.0) / k;
  double sxx = 0, sxy = 0;
  for (std::size_t i = 0; i < x.size(); ++i) {
    sxx += (x[i] - mx) * (x[i] - mx);
    sxy += (x[i] - mx) * (y[i] - my);
  }
  if (sxx > 0) {
    const double b = sxy / sxx;
    const double a = std::exp(my - b * mx);
    std::ostringstream name;
    name << std::setprecision(4) << "heap = " << a << " B x N^" << b << " (log-log least squares, " << ps.size()
         << " runs)";
    law(name.str(), a, b);
  }
  // Exponent 2: ln c is the mean of ln heap - 2 ln N.
  const double c = std::exp(my - 2 * mx);
  std::ostringstream name;
  name << std::setprecision(4) << "heap = " << c << " B x N^2 (exponent fixed)";
  law(name.str(), c, 2);
  return o.str();
}

std::string scaling_csv(const std::vector<std::pair<std::string, nlohmann::json>>& results) {
  std::ostringstream o;
  o << "members,egress_mean,egress_p99,egress_max,egress_without_suspect_dead,packets_mean,packets_p99,"
       "packets_max,detect_first_s,detect_p99_s,detect_all_s,detect_all_max_s,false_positives_per_member_hour,"
       "table_bytes_per_entry,heap_bytes_per_entry,heap_peak_gb\n";
  for (const ScalePoint& p : scale_points(results)) {
    for (double v : {p.n, p.egress_mean, p.egress_p99, p.egress_max, p.egress_without_failures, p.packets_mean,
                     p.packets_p99, p.packets_max, p.detect_first, p.detect_p99, p.detect_all, p.detect_all_max,
                     p.fp_per_member_hour, p.table_bytes_per_entry, p.heap_bytes_per_entry})
      o << fmt(v) << ',';
    o << fmt(p.heap_peak_gb) << '\n';
  }
  return o.str();
}

}  // namespace gw::sim
