// A PNG plot through gnuplot, for the commands that draw one (`sluice bench --plot`, `sluice eval
// --plot`): the data go to PNG.dat and the script to PNG.gp beside it, so a plot can be redrawn
// or restyled by hand; when gnuplot is missing or fails, a line on stderr says where the data are
// and the command carries on (a plot is a convenience, the JSON is the record).
#pragma once

#include <string>
#include <vector>

namespace sluice::cli {

// One line of a plot: a value per x, on the left axis or the right one.
struct Series {
  std::string title;
  std::vector<double> values;
  bool dashed = false;
  bool right_axis = false;
};

struct PlotLabels {
  std::string title, xlabel, ylabel;
  std::string y2label;  // empty: no right axis
  bool log_y = false;
};

void write_plot(const std::string& png, const PlotLabels& labels, const std::vector<double>& x, const std::vector<Series>& series);

}  // namespace sluice::cli
