// gen_bench: prompt-processing and generation speed of the model engine, measured the way
// llama-bench measures (pp: one batch of P random tokens from an empty context; tg: N tokens
// decoded one at a time from an empty context; R repetitions after one warm-up; tokens/s).
// Prints one Markdown row per (model, threads) with the median and min..max.
//
//   gen_bench [-p 512] [-n 128] [-r 5] [-t 1,2] MODEL.gguf...
//   gen_bench --synth 110m:q8_0 --dir /tmp/sluice-synth ...   (writes the synth file if absent)
//   --cpu-time: rates from process CPU time instead of wall time (kernel tuning on a busy box)
#include <sys/resource.h>

#include <time.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "kernels/cpu/cpu_features.h"
#include "nodes/generation/generator.h"
#include "nodes/generation/llama_model.h"
#include "nodes/generation/model_tools.h"

using namespace sluice::generation;

namespace {

// Wall-clock seconds; with --cpu-time, this process's CPU seconds instead (for comparing kernel
// variants on a busy machine: time spent descheduled does not count; 1 thread only).
bool g_cpu_time = false;
double now() {
  if (g_cpu_time) {
    timespec ts{};
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return double(ts.tv_sec) + 1e-9 * double(ts.tv_nsec);
  }
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

std::vector<int> parse_list(const char* s) {
  std::vector<int> out;
  for (const char* p = s; *p;) {
    out.push_back(std::atoi(p));
    while (*p && *p != ',') ++p;
    if (*p == ',') ++p;
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  int p = 512, n = 128, reps = 5;
  std::vector<int> threads = {1, 2};
  std::vector<std::string> models;
  std::string dir = "/tmp/sluice-synth";
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> const char* {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "%s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "-p") p = std::atoi(next());
    else if (a == "-n") n = std::atoi(next());
    else if (a == "-r") reps = std::max(1, std::atoi(next()));
    else if (a == "-t") threads = parse_list(next());
    else if (a == "--dir") dir = next();
    else if (a == "--cpu-time") g_cpu_time = true;
    else if (a == "--synth") {
      const std::string spec = next();
      const auto colon = spec.find(':');
      const std::string preset = spec.substr(0, colon), type = colon == std::string::npos ? "f32" : spec.substr(colon + 1);
      std::filesystem::create_directories(dir);
      const std::string path = dir + "/synth-" + preset + "-" + type + ".gguf";
      if (!std::filesystem::exists(path)) {
        std::fprintf(stderr, "writing %s\n", path.c_str());
        synth_model(synth_preset(preset), parse_weight_type(type), path);
      }
      models.push_back(path);
    } else models.push_back(a);
  }
  if (models.empty()) {
    std::fprintf(stderr, "usage: gen_bench [-p 512] [-n 128] [-r 5] [-t 1,2] [--synth 110m:q8_0] MODEL.gguf...\n");
    return 2;
  }
  std::printf("isa: %s\n\n", sluice::kernels::isa_name(sluice::kernels::default_isa()));
  std::printf("| model | threads | pp%d tok/s (median, min-max) | tg%d tok/s (median, min-max) |\n", p, n);
  std::printf("| --- | --- | --- | --- |\n");
  for (const auto& path : models) {
    try {
      const auto model = LlamaModel::load(path);
      std::mt19937 rng(42);
      std::vector<int32_t> prompt(static_cast<size_t>(p));
      for (auto& t : prompt) t = int32_t(rng() % uint32_t(model->config().vocab_size));
      for (int th : threads) {
        GeneratorOptions opts;
        opts.threads = th;
        opts.context = std::max(p, n) + 1;
        Generator gen(*model, opts);
        std::vector<double> pp, tg;
        for (int r = 0; r <= reps; ++r) {  // r == 0 is the warm-up
          if (p > 0) {
            gen.reset();
            const double t0 = now();
            gen.forward(prompt, 0);
            if (r > 0) pp.push_back(p / (now() - t0));
          }
          if (n > 0) {
            gen.reset();
            int32_t tok = 1;
            const double t0 = now();
            for (int k = 0; k < n; ++k) {
              const auto& logits = gen.forward({tok}, k);
              tok = int32_t(std::max_element(logits.begin(), logits.end()) - logits.begin());
            }
            if (r > 0) tg.push_back(n / (now() - t0));
          }
        }
        auto cell = [](const std::vector<double>& v) {
          char b[96];
          if (v.empty()) return std::string("-");
          std::snprintf(b, sizeof b, "%.0f (%.0f-%.0f)", median(v), *std::min_element(v.begin(), v.end()),
                        *std::max_element(v.begin(), v.end()));
          return std::string(b);
        };
        std::printf("| %s | %d | %s | %s |\n", std::filesystem::path(path).filename().c_str(), th, cell(pp).c_str(),
                    cell(tg).c_str());
        std::fflush(stdout);
      }
    } catch (const std::exception& e) {
      std::fprintf(stderr, "%s\n", e.what());
      return 1;
    }
  }
  struct rusage ru {};
  getrusage(RUSAGE_SELF, &ru);
  std::printf("\npeak RSS: %.1f MiB\n", double(ru.ru_maxrss) / 1024.0);
  return 0;
}
