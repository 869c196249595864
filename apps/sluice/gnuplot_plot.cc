#include "apps/sluice/gnuplot_plot.h"

#include <cstdio>
#include <cstdlib>
#include <fstream>

namespace sluice::cli {

void write_plot(const std::string& png, const PlotLabels& labels, const std::vector<double>& x, const std::vector<Series>& series) {
  const std::string dat = png + ".dat";
  {
    std::ofstream d(dat);
    d << "# x";
    for (const auto& s : series) d << " '" << s.title << "'";
    d << "\n";
    for (std::size_t row = 0; row < x.size(); ++row) {
      d << x[row];
      for (const auto& s : series) d << " " << s.values[row];
      d << "\n";
    }
  }
  const std::string gp = png + ".gp";
  {
    std::ofstream g(gp);
    g << "set terminal png size 900,560\nset output '" << png << "'\n";
    g << "set title '" << labels.title << "'\nset xlabel '" << labels.xlabel << "'\n";
    g << "set ylabel '" << labels.ylabel << "'\n" << (labels.log_y ? "set logscale y\n" : "") << "set key top left\nset grid\n";
    if (!labels.y2label.empty()) g << "set y2label '" << labels.y2label << "'\nset y2tics\nset ytics nomirror\n";
    g << "plot ";
    for (std::size_t i = 0; i < series.size(); ++i) {
      g << (i ? ", " : "") << "'" << dat << "' using 1:" << (2 + i) << (series[i].right_axis ? " axes x1y2" : "")
        << " with linespoints" << (series[i].dashed ? " dashtype 2" : "") << " title '" << series[i].title << "'";
    }
    g << "\n";
  }
  const std::string cmd = "gnuplot '" + gp + "'";
  if (std::system(cmd.c_str()) != 0) std::fprintf(stderr, "sluice: gnuplot failed (%s); data in %s\n", cmd.c_str(), dat.c_str());
}

}  // namespace sluice::cli
