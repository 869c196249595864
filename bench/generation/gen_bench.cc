// gen_bench: prompt-processing and generation speed of the model engine, measured the way
// llama-bench measures (pp: one batch of P random tokens from an empty context; tg: N tokens
// decoded one at a time from an empty context; R repetitions after one warm-up; tokens/s).
// Prints one Markdown row per (model, threads) with the median and min..max.
// -d D (llama-bench's depth): both run after a D-token context (prefilled once, untimed), so pp
// and tg include attention over D earlier positions (long-context prefill and decode).
//
//   gen_bench [-p 512] [-n 128] [-r 5] [-t 1,2] [-d 0] [--kv f32|f16] MODEL.gguf...
//   gen_bench --synth 110m:q8_0 --dir /tmp/sluice-synth ...   (writes the synth file if absent)
//   --cpu-time: rates from process CPU time instead of wall time (kernel tuning on a busy box)
//   --device cpu|cuda: the kernels (default cpu); cuda loads the model into GPU memory and runs
//   the CUDA twin (threads then do not apply: one row, "gpu"). A pass ends when its logits are
//   back on the host, so GPU rates are wall time of whole passes.
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

#include "inference/llama/generator.h"
#include "inference/llama/llama_model.h"
#include "inference/llama/model_tools.h"
#include "kernels/cpu/cpu_features.h"

using namespace sluice::inference;

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

// Single-thread streaming read bandwidth right now (sum over 256 MiB, best of 3): the ceiling
// for decoding, which reads every weight once per token; shared machines vary a lot.
double read_bandwidth_gbs() {
  const size_t n = size_t(256) << 20 >> 3;
  std::vector<uint64_t> a(n, 1);
  double best = 0;
  uint64_t sink = 0;
  for (int rep = 0; rep < 3; ++rep) {
    const auto t0 = std::chrono::steady_clock::now();
    uint64_t s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    for (size_t i = 0; i < n; i += 4) {
      s0 += a[i];
      s1 += a[i + 1];
      s2 += a[i + 2];
      s3 += a[i + 3];
    }
    sink += s0 + s1 + s2 + s3;
    const double sec = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    best = std::max(best, double(n * 8) / sec / 1e9);
  }
  return sink ? best : 0;
}

// Weight bytes one decoded token reads: every tensor but the embedding (one row of it).
double weight_bytes_per_token(const LlamaModel& m) {
  double bytes = 0;
  for (const auto& t : m.file().tensors())
    if (t.name != "token_embd.weight") bytes += double(t.bytes);
  if (m.output.data == m.token_embd.data) bytes += double(m.file().find_tensor("token_embd.weight")->bytes);  // tied output
  return bytes;
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
  int p = 512, n = 128, reps = 5, depth = 0;
  sluice::kernels::DType kv_type = GeneratorOptions{}.kv_type;
  std::vector<int> threads = {1, 2};
  std::vector<std::string> models;
  std::string dir = "/tmp/sluice-synth";
  sluice::kernels::BackendKind device = sluice::kernels::BackendKind::kCpu;
  struct Synth {
    std::string preset, type, path;
  };
  std::vector<Synth> synth;  // --synth files to write, once the arguments are known to be good
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
    else if (a == "-d") depth = std::max(0, std::atoi(next()));
    else if (a == "--dir") dir = next();
    else if (a == "--cpu-time") g_cpu_time = true;
    else if (a == "--device") {
      const std::string d = next();
      if (!sluice::kernels::parse_backend_kind(d, &device)) {
        std::fprintf(stderr, "--device: cpu or cuda, not '%s'\n", d.c_str());
        return 2;
      }
    }
    else if (a == "--kv") kv_type = std::string(next()) == "f16" ? sluice::kernels::DType::kF16 : sluice::kernels::DType::kF32;
    else if (a == "--synth") {
      const std::string spec = next();
      const auto colon = spec.find(':');
      const std::string preset = spec.substr(0, colon), type = colon == std::string::npos ? "f32" : spec.substr(colon + 1);
      const std::string path = dir + "/synth-" + preset + "-" + type + ".gguf";
      if (!std::filesystem::exists(path)) synth.push_back({preset, type, path});
      models.push_back(path);
    } else models.push_back(a);
  }
  if (models.empty()) {
    std::fprintf(stderr, "usage: gen_bench [-p 512] [-n 128] [-r 5] [-t 1,2] [--synth 110m:q8_0] MODEL.gguf...\n");
    return 2;
  }
  std::string why;
  if (!sluice::kernels::backend_kind_available(device, &why)) {
    std::fprintf(stderr, "--device %s: %s\n", sluice::kernels::backend_kind_name(device), why.c_str());
    return 2;
  }
  if (device == sluice::kernels::BackendKind::kCuda) threads = {0};  // one row; threads do not apply
  for (const Synth& m : synth) {
    std::filesystem::create_directories(dir);
    std::fprintf(stderr, "writing %s\n", m.path.c_str());
    synth_model(synth_preset(m.preset), parse_weight_type(m.type), m.path);
  }
  std::printf("device: %s, isa: %s, KV %s\n\n", sluice::kernels::backend_kind_name(device),
              sluice::kernels::isa_name(sluice::kernels::default_isa()), kv_type == sluice::kernels::DType::kF16 ? "f16" : "f32");
  const std::string at = depth > 0 ? " @ d" + std::to_string(depth) : "";
  std::printf("| model | threads | pp%d%s tok/s (median, min-max) | tg%d%s tok/s (median, min-max) | tg weight GB/s |\n", p,
              at.c_str(), n, at.c_str());
  std::printf("| --- | --- | --- | --- | --- |\n");
  for (const auto& path : models) {
    try {
      const auto model = LlamaModel::load(path, device);
      std::mt19937 rng(42);
      std::vector<int32_t> prompt(static_cast<size_t>(p));
      for (auto& t : prompt) t = int32_t(rng() % uint32_t(model->config().vocab_size));
      std::vector<int32_t> decode_tokens(static_cast<size_t>(std::max(n, 1)));
      for (auto& t : decode_tokens) t = int32_t(rng() % uint32_t(model->config().vocab_size));
      std::vector<int32_t> context_tokens(static_cast<size_t>(depth));
      for (auto& t : context_tokens) t = int32_t(rng() % uint32_t(model->config().vocab_size));
      if (!context_tokens.empty()) context_tokens[0] = 1;
      for (int th : threads) {
        GeneratorOptions opts;
        opts.backend = device;
        opts.threads = std::max(1, th);
        opts.kv_type = kv_type;
        opts.context = depth + std::max(p, n) + 1;
        Generator gen(*model, opts);
        std::vector<double> pp, tg;
        if (depth > 0) gen.forward(context_tokens, 0);  // once: the runs only rewrite what follows it
        for (int r = 0; r <= reps; ++r) {  // r == 0 is the warm-up
          if (p > 0) {
            if (depth == 0) gen.reset();  // at a depth, each run overwrites positions depth..
            const double t0 = now();
            gen.forward(prompt, depth);
            if (r > 0) pp.push_back(p / (now() - t0));
          }
          if (n > 0) {
            if (depth == 0) gen.reset();
            // Like llama-bench: decode n tokens one at a time, no sampling (token ids from the
            // random sequence; BOS first when the context is empty).
            const double t0 = now();
            for (int k = 0; k < n; ++k)
              gen.forward({k == 0 && depth == 0 ? 1 : decode_tokens[size_t(k)]}, depth + k);
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
        const double gbs = tg.empty() ? 0 : median(tg) * weight_bytes_per_token(*model) / 1e9;
        const std::string th_cell = th > 0 ? std::to_string(th) : "gpu";
        std::printf("| %s | %s | %s | %s | %.1f |\n", std::filesystem::path(path).filename().c_str(), th_cell.c_str(),
                    cell(pp).c_str(), cell(tg).c_str(), gbs);
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
  // Measured after the RSS figure (its buffer would count) and after the runs.
  std::printf("read bandwidth after the runs: %.1f GB/s (1 thread)\n", read_bandwidth_gbs());
  return 0;
}
