// One exported metric family and its samples: what the exporters
// (metrics.h) serve, whichever mode built it. No dependencies, so filter
// mode (control/filter/) builds families without the native gateway's
// counter table.
#pragma once

#include <string>
#include <vector>

namespace gw::cp {

struct MetricSample {
  std::string labels;  // `a="x",b="y"` (empty: none)
  double value = 0;
  std::string suffix;  // after the family name: _bucket, _sum, _count of a histogram
};

struct MetricFamily {
  std::string name;  // gossipgw_...
  std::string type;  // counter | gauge | histogram
  std::string help;  // includes the unit
  std::vector<MetricSample> samples;
  bool maximum = false;  // a gauge of maxima: the total is the largest, not the sum
};

}  // namespace gw::cp
