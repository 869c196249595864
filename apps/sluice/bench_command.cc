// `sluice bench`: open-loop Poisson load against a running Sluice over HTTP, per-class results
// as a table, a JSON file and a gnuplot PNG (latency vs offered load per class). The engine is
// bench/admission/load_generator.{h,cc}; this file only parses flags and writes outputs.
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "apps/sluice/commands.h"
#include "bench/admission/load_generator.h"
#include "graph/units.h"

namespace sluice::cli {

namespace {

const char* kBenchUsage = R"(usage: sluice bench [flags]
  --target HOST:PORT     server to load (default 127.0.0.1:8080)
  --path PATH            endpoint (default /v1/chat/completions)
  --rate R | --rates R1,R2,...
                         offered requests per second, all classes together; a list runs
                         one level after another (default 10)
  --duration D           arrivals per level (default 10s)
  --drain D              wait for answers after the last arrival (default 30s)
  --mix P0=20,P1=30,P2=50
                         class names (sent as X-Priority) and weights (default that mix)
  --slo P0=1s,P1=5s,P2=60s
                         end-to-end time that counts as goodput per class (default none)
  --stream               request SSE streams (TTFT and inter-token latency are measured)
  --max-tokens N         (default 16)    --prompt TEXT    --seed N (default 1)
  --label TEXT           names the run in the JSON and the plot
  --json FILE            write all levels as JSON
  --plot FILE.png        plot p99 end-to-end latency vs offered load per class (gnuplot)
)";

std::vector<std::pair<std::string, std::string>> pairs(const std::string& text, const char* flag) {
  std::vector<std::pair<std::string, std::string>> out;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    auto eq = item.find('=');
    if (eq == std::string::npos) throw std::invalid_argument(std::string(flag) + ": expected NAME=VALUE, got '" + item + "'");
    out.emplace_back(item.substr(0, eq), item.substr(eq + 1));
  }
  return out;
}

double seconds(const std::string& text, const char* flag) {
  std::string error;
  auto n = parse_duration(text, &error);
  if (!n) throw std::invalid_argument(std::string(flag) + ": " + error);
  return static_cast<double>(*n) / 1e9;
}

void write_plot(const std::string& png, const std::string& label, const std::vector<bench::LoadResult>& levels) {
  std::string dat = png + ".dat";
  {
    std::ofstream d(dat);
    d << "# offered_rate";
    for (const auto& c : levels.front().classes) d << " " << c.name << "_p99_e2e " << c.name << "_p50_e2e";
    d << "\n";
    for (const auto& l : levels) {
      d << l.offered_rate;
      for (const auto& c : l.classes) d << " " << c.e2e.p99 << " " << c.e2e.p50;
      d << "\n";
    }
  }
  std::string gp = png + ".gp";
  {
    std::ofstream g(gp);
    g << "set terminal png size 900,560\nset output '" << png << "'\n";
    g << "set title 'sluice bench: " << label << "'\nset xlabel 'offered load (requests/s)'\n";
    g << "set ylabel 'end-to-end latency (s)'\nset logscale y\nset key top left\nset grid\n";
    g << "plot ";
    for (std::size_t i = 0; i < levels.front().classes.size(); ++i) {
      if (i) g << ", ";
      g << "'" << dat << "' using 1:" << (2 + 2 * i) << " with linespoints title '" << levels.front().classes[i].name << " p99'";
      g << ", '" << dat << "' using 1:" << (3 + 2 * i) << " with linespoints dashtype 2 title '" << levels.front().classes[i].name
        << " p50'";
    }
    g << "\n";
  }
  std::string cmd = "gnuplot '" + gp + "'";
  if (std::system(cmd.c_str()) != 0) std::fprintf(stderr, "sluice bench: gnuplot failed (%s); data in %s\n", cmd.c_str(), dat.c_str());
}

}  // namespace

int bench(const Args& args) {
  bench::LoadOptions o;
  std::vector<double> rates{10};
  std::string mix = "P0=20,P1=30,P2=50", slo, json, plot, label = "load";
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto value = [&]() -> const std::string& {
      if (i + 1 >= args.size()) throw std::invalid_argument(a + " needs a value");
      return args[++i];
    };
    if (a == "-h" || a == "--help") {
      std::fputs(kBenchUsage, stdout);
      return 0;
    } else if (a == "--target") {
      std::string t = value();
      auto colon = t.rfind(':');
      if (colon == std::string::npos) throw std::invalid_argument("--target: expected HOST:PORT, got '" + t + "'");
      o.host = t.substr(0, colon);
      o.port = std::atoi(t.c_str() + colon + 1);
    } else if (a == "--path") {
      o.path = value();
    } else if (a == "--rate" || a == "--rates") {
      rates.clear();
      std::stringstream ss(value());
      std::string r;
      while (std::getline(ss, r, ',')) rates.push_back(std::atof(r.c_str()));
    } else if (a == "--duration") {
      o.duration_seconds = seconds(value(), "--duration");
    } else if (a == "--drain") {
      o.drain_seconds = seconds(value(), "--drain");
    } else if (a == "--mix") {
      mix = value();
    } else if (a == "--slo") {
      slo = value();
    } else if (a == "--stream") {
      o.stream = true;
    } else if (a == "--max-tokens") {
      o.max_tokens = std::atoi(value().c_str());
    } else if (a == "--prompt") {
      o.prompt = value();
    } else if (a == "--seed") {
      o.seed = std::strtoull(value().c_str(), nullptr, 10);
    } else if (a == "--label") {
      label = value();
    } else if (a == "--json") {
      json = value();
    } else if (a == "--plot") {
      plot = value();
    } else {
      std::fprintf(stderr, "sluice bench: unknown flag '%s'\n%s", a.c_str(), kBenchUsage);
      return 2;
    }
  }
  for (const auto& [name, weight] : pairs(mix, "--mix")) o.classes.push_back({name, std::atof(weight.c_str()), 0});
  if (!slo.empty()) {
    for (const auto& [name, d] : pairs(slo, "--slo")) {
      bool found = false;
      for (auto& c : o.classes) {
        if (c.name == name) {
          c.slo_seconds = seconds(d, "--slo");
          found = true;
        }
      }
      if (!found) throw std::invalid_argument("--slo: class '" + name + "' is not in --mix");
    }
  }
  std::vector<bench::LoadResult> levels;
  for (double rate : rates) {
    o.rate = rate;
    std::fprintf(stderr, "sluice bench: %s: %.1f req/s for %.0fs ...\n", label.c_str(), rate, o.duration_seconds);
    levels.push_back(bench::run_open_loop(o));
    const auto& l = levels.back();
    std::printf("%s offered %.1f req/s\n", label.c_str(), l.offered_rate);
    std::printf("  class   sent     ok    429    504   err  thru/s  good/s  good%%   e2e p50/p95/p99 (s)        ttft p99  itl p99\n");
    for (const auto& c : l.classes) {
      double good_pct = c.sent ? 100.0 * static_cast<double>(c.good) / static_cast<double>(c.ok ? c.ok : 1) : 0;
      std::printf("  %-5s %6zu %6zu %6zu %6zu %5zu %7.1f %7.1f %5.1f   %7.3f %7.3f %7.3f   %7.3f  %7.4f\n", c.name.c_str(), c.sent,
                  c.ok, c.rejected_429, c.timeout_504, c.other_errors + c.failed + c.unfinished + c.dropped, c.throughput,
                  c.goodput, good_pct, c.e2e.p50, c.e2e.p95, c.e2e.p99, c.ttft.p99, c.itl.p99);
    }
    std::fflush(stdout);
  }
  if (!json.empty()) {
    std::ofstream f(json);
    f << "{\"label\":\"" << label << "\",\"levels\":[";
    for (std::size_t i = 0; i < levels.size(); ++i) f << (i ? "," : "") << bench::to_json(levels[i]);
    f << "]}\n";
  }
  if (!plot.empty()) write_plot(plot, label, levels);
  return 0;
}

}  // namespace sluice::cli
