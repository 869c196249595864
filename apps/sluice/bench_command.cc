// `sluice bench`: load against a running Sluice over HTTP, either open loop (Poisson arrivals at
// offered rates: latency vs offered load per class) or closed loop (--concurrency: N streaming
// clients back to back: TTFT, inter-token latency and tokens/s per concurrency level). Results
// as a table, a JSON file and a gnuplot PNG. The engine is apps/loadgen/load_generator.{h,cc};
// this file only parses flags and writes outputs.
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "apps/loadgen/load_generator.h"
#include "apps/sluice/gnuplot_plot.h"
#include "apps/sluice/commands.h"
#include "graph/units.h"

namespace sluice::cli {

namespace {

const char* kBenchUsage = R"(usage: sluice bench [flags]
  --target HOST:PORT     server to load (default 127.0.0.1:8080)
  --path PATH            endpoint (default /v1/chat/completions)
  --rate R | --rates R1,R2,...
                         open loop: offered requests per second, all classes together; a
                         list runs one level after another (default 10)
  --concurrency N1,N2,...
                         closed loop instead: N streaming clients, each sending its next
                         request when its answer ends, one level after another; reports
                         req/s, output tokens/s, TTFT and inter-token latency per level
  --duration D           arrivals per level; closed loop: how long clients keep sending, then
                         the answers in flight finish (default 10s)
  --drain D              wait for answers after the last arrival (default 30s)
  --mix P0=20,P1=30,P2=50
                         class names (sent as X-Priority) and weights (default that mix;
                         P0=1 with --concurrency)
  --slo P0=1s,P1=5s,P2=60s
                         end-to-end time that counts as goodput per class (default none)
  --stream               request SSE streams (TTFT and inter-token latency are measured)
  --max-tokens N         (default 16)    --prompt TEXT    --seed N (default 1)
  --temperature T        sent with every request (default: not sent, the server's default)
  --distinct-prompts     a number unique to the request before each prompt, so no two share a
                         prefix and a prefix cache cannot skip the prefill (default: off)
  --workload FILE        replay a workload instead of --prompt: JSON lines {"group", "kind",
                         "prompt"} (bench/cache/repeat_workload.md), request n asks line n,
                         arrivals stop after the last line; each answer is tallied by the
                         stage that completed it (X-Sluice-Timings), with cache hits and false
                         hits (a hit whose text is none of its group's own answers)
  --cache-stages A,B     with --workload: the stages whose answers are cache hits
                         (default cache,recall: the default pipeline's two answer caches)
  --label TEXT           names the run in the JSON and the plot
  --json FILE            write all levels as JSON
  --plot FILE.png        plot latency per level (gnuplot): open loop p50/p99 end-to-end per
                         class; closed loop TTFT and inter-token p50/p99, tokens/s on y2
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

double number(const std::string& text, const char* flag) {
  char* end = nullptr;
  double v = std::strtod(text.c_str(), &end);
  if (text.empty() || end != text.c_str() + text.size()) {
    throw std::invalid_argument(std::string(flag) + ": expected a number, got '" + text + "'");
  }
  return v;
}

// A list of positive integers, "1,4,8,16".
std::vector<int> counts(const std::string& text, const char* flag) {
  std::vector<int> out;
  std::stringstream ss(text);
  std::string item;
  while (std::getline(ss, item, ',')) {
    double v = number(item, flag);
    if (v < 1 || v > 100000 || v != static_cast<int>(v)) {
      throw std::invalid_argument(std::string(flag) + ": each level must be a whole number from 1 to 100000, got '" + item + "'");
    }
    out.push_back(static_cast<int>(v));
  }
  if (out.empty()) throw std::invalid_argument(std::string(flag) + ": needs at least one level");
  return out;
}

// Open loop: p99 and p50 end-to-end latency per class against offered load.
void plot_open_loop(const std::string& png, const std::string& label, const std::vector<loadgen::LoadResult>& levels) {
  std::vector<double> x;
  std::vector<Series> series;
  for (const auto& c : levels.front().classes) {
    series.push_back({c.name + " p99", {}, false, false});
    series.push_back({c.name + " p50", {}, true, false});
  }
  for (const auto& l : levels) {
    x.push_back(l.offered_rate);
    for (std::size_t i = 0; i < l.classes.size(); ++i) {
      series[2 * i].values.push_back(l.classes[i].e2e.p99);
      series[2 * i + 1].values.push_back(l.classes[i].e2e.p50);
    }
  }
  write_plot(png, {"sluice bench: " + label, "offered load (requests/s)", "end-to-end latency (s)", "", true}, x, series);
}

// Closed loop: TTFT and inter-token latency (p50, p99) and output tokens/s against concurrency,
// all classes together (the first class's figures when there are several).
void plot_closed_loop(const std::string& png, const std::string& label, const std::vector<loadgen::LoadResult>& levels) {
  std::vector<double> x;
  std::vector<Series> series = {{"TTFT p99", {}, false, false},
                                {"TTFT p50", {}, true, false},
                                {"inter-token p99", {}, false, false},
                                {"inter-token p50", {}, true, false},
                                {"output tokens/s (right)", {}, false, true}};
  for (const auto& l : levels) {
    const auto& c = l.classes.front();
    x.push_back(l.concurrency);
    const double values[] = {c.ttft.p99, c.ttft.p50, c.itl.p99, c.itl.p50, c.output_tokens_per_second};
    for (std::size_t i = 0; i < series.size(); ++i) series[i].values.push_back(values[i]);
  }
  write_plot(png, {"sluice bench: " + label, "concurrent streams", "latency (s)", "output tokens/s", true}, x, series);
}

void print_workload(const loadgen::WorkloadResult& w) {
  if (w.answers == 0) return;
  std::printf("  workload: %zu answers; completed by:", w.answers);
  for (const auto& [stage, n] : w.answered_by) std::printf(" %s %zu", stage.c_str(), n);
  if (w.no_timings) std::printf(" (no timings: %zu)", w.no_timings);
  std::printf("\n  cache hits %zu:", w.hits);
  for (const auto& [kind, c] : w.kinds) std::printf(" %s %zu/%zu", kind.c_str(), c.hits, c.answers);
  std::printf("; false hits %zu (%zu on a question not answered before, %zu with another question's text)\n",
              w.false_hits_unasked + w.false_hits_other_text, w.false_hits_unasked, w.false_hits_other_text);
  if (!w.false_hit_lines.empty()) {
    std::printf("  false hits on workload lines:");
    for (std::size_t line : w.false_hit_lines) std::printf(" %zu", line);
    std::printf("\n");
  }
}

void print_open_level(const std::string& label, const loadgen::LoadResult& l) {
  std::printf("%s offered %.1f req/s\n", label.c_str(), l.offered_rate);
  std::printf("  class   sent     ok    429    504   err  thru/s  good/s  good%%   e2e mean/p50/p95/p99 (s)          ttft p99  itl p99\n");
  for (const auto& c : l.classes) {
    double good_pct = c.sent ? 100.0 * static_cast<double>(c.good) / static_cast<double>(c.ok ? c.ok : 1) : 0;
    std::printf("  %-5s %6zu %6zu %6zu %6zu %5zu %7.1f %7.1f %5.1f   %7.3f %7.3f %7.3f %7.3f   %7.3f  %7.4f\n", c.name.c_str(), c.sent, c.ok,
                c.rejected_429, c.timeout_504, c.other_errors + c.failed + c.unfinished + c.dropped, c.throughput, c.goodput,
                good_pct, c.e2e.mean, c.e2e.p50, c.e2e.p95, c.e2e.p99, c.ttft.p99, c.itl.p99);
  }
  print_workload(l.workload);
}

void print_closed_level(const std::string& label, const loadgen::LoadResult& l) {
  std::printf("%s concurrency %d (%.1fs)\n", label.c_str(), l.concurrency, l.elapsed_seconds);
  std::printf("  class     ok   err   req/s  out tok/s  tok/req  prompt/req   ttft p50/p95/p99 (ms)       itl p50/p95/p99 (ms)      e2e mean/p50/p95/p99 (s)\n");
  for (const auto& c : l.classes) {
    double ok = c.ok ? static_cast<double>(c.ok) : 1;
    double per_request = static_cast<double>(c.output_tokens) / ok, prompt = static_cast<double>(c.prompt_tokens) / ok;
    std::printf("  %-5s %6zu %5zu %7.2f %10.1f %8.1f %11.1f   %7.1f %7.1f %7.1f   %7.1f %7.1f %7.1f   %7.3f %7.3f %7.3f %7.3f\n", c.name.c_str(), c.ok,
                c.rejected_429 + c.timeout_504 + c.other_errors + c.failed + c.unfinished + c.dropped, c.throughput,
                c.output_tokens_per_second, per_request, prompt, c.ttft.p50 * 1e3, c.ttft.p95 * 1e3, c.ttft.p99 * 1e3, c.itl.p50 * 1e3,
                c.itl.p95 * 1e3, c.itl.p99 * 1e3, c.e2e.mean, c.e2e.p50, c.e2e.p95, c.e2e.p99);
  }
  print_workload(l.workload);
}

}  // namespace

const char* bench_usage() { return kBenchUsage; }

int bench(const Args& args) {
  loadgen::LoadOptions o;
  std::vector<double> rates{10};
  std::vector<int> concurrency;  // non-empty: closed loop
  bool rates_given = false;
  std::string mix, slo, json, plot, label = "load";
  std::string cache_stages = "cache,recall";
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
      rates_given = true;
      std::stringstream ss(value());
      std::string r;
      while (std::getline(ss, r, ',')) rates.push_back(std::atof(r.c_str()));
    } else if (a == "--concurrency") {
      concurrency = counts(value(), "--concurrency");
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
    } else if (a == "--distinct-prompts") {
      o.distinct_prompts = true;
    } else if (a == "--temperature") {
      double t = number(value(), "--temperature");
      if (t < 0 || t > 2) throw std::invalid_argument("--temperature: must be between 0 and 2, got " + args[i]);
      o.temperature = t;
    } else if (a == "--prompt") {
      o.prompt = value();
    } else if (a == "--seed") {
      o.seed = std::strtoull(value().c_str(), nullptr, 10);
    } else if (a == "--workload") {
      o.workload = loadgen::load_workload(value());
    } else if (a == "--cache-stages") {
      cache_stages = value();
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
  const bool closed_loop = !concurrency.empty();
  if (closed_loop && rates_given) {
    throw std::invalid_argument("--concurrency (closed loop) and --rate/--rates (open loop) exclude each other; choose one");
  }
  if (!o.workload.empty() && o.distinct_prompts) {
    throw std::invalid_argument("--distinct-prompts and --workload exclude each other: a workload's repeats are its point");
  }
  std::stringstream stages(cache_stages);
  for (std::string stage; std::getline(stages, stage, ',');) o.cache_stages.push_back(stage);
  if (closed_loop) o.stream = true;  // TTFT and inter-token latency are what the closed loop is for
  if (mix.empty()) mix = closed_loop ? "P0=1" : "P0=20,P1=30,P2=50";
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
  if (const std::string why = loadgen::probe_target(o); !why.empty()) {
    std::fprintf(stderr, "sluice bench: cannot reach %s:%d: %s\n", o.host.c_str(), o.port, why.c_str());
    return 2;
  }
  std::vector<loadgen::LoadResult> levels;
  const std::size_t level_count = closed_loop ? concurrency.size() : rates.size();
  for (std::size_t i = 0; i < level_count; ++i) {
    if (closed_loop) {
      o.concurrency = concurrency[i];
      std::fprintf(stderr, "sluice bench: %s: %d concurrent streams for %gs ...\n", label.c_str(), o.concurrency, o.duration_seconds);
      levels.push_back(loadgen::run_closed_loop(o));
      print_closed_level(label, levels.back());
    } else {
      o.rate = rates[i];
      std::fprintf(stderr, "sluice bench: %s: %.1f req/s for %gs ...\n", label.c_str(), o.rate, o.duration_seconds);
      levels.push_back(loadgen::run_open_loop(o));
      print_open_level(label, levels.back());
    }
    std::fflush(stdout);
  }
  if (!json.empty()) {
    std::ofstream f(json);
    f << "{\"label\":\"" << label << "\",\"levels\":[";
    for (std::size_t i = 0; i < levels.size(); ++i) f << (i ? "," : "") << loadgen::to_json(levels[i]);
    f << "]}\n";
  }
  if (!plot.empty()) {
    if (closed_loop) plot_closed_loop(plot, label, levels);
    else plot_open_loop(plot, label, levels);
  }
  return 0;
}

}  // namespace sluice::cli
