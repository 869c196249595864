// engine_bench: the serving engine under concurrent streams (docs/benchmarks.md, "Serving
// engine"). Three measurements, each a median over --reps repetitions:
//
//  1. Aggregate generation tokens/s with S concurrent streams (llama-batched-bench's S_TG:
//     S x (gen - 1) tokens over the time from the last stream's first token to the end; every
//     stream has its own random --prompt tokens and generates exactly --gen tokens), beside
//     the single-stream Generator (no engine) on the same model and threads.
//  2. Prefix reuse: TTFT of a request whose --prefix-token system prompt is cached vs the same
//     shape uncached (a fresh random prefix), one request at a time.
//  3. Admission of a long prompt: --itl-streams streams decode; a --prefix-token prompt joins.
//     Inter-token latency of the running streams: P50 before it joins, P50/P99 from its
//     submission to its first token; and a control run of the same streams without the long
//     prompt, its P50 over the same token positions (their own growing context costs too).
//
//   engine_bench --synth 110m:q8_0 [-t 2] [--streams 1,4,8,16] [--prompt 128] [--gen 128]
//                [--reps 3] [--prefix 2000] [--itl-streams 8] [--interleaved 32] [--slack 0.8]
//                [--min-chunk 1] [--only-itl | --only-tg] [--kv f32|f16] [--itl-trace FILE]
//                [--device cpu|cuda] [MODEL.gguf]
//  --device cuda: the model in GPU memory and the engine (and the single-stream Generator it is
//  compared with) on the CUDA backend; -t then does not apply. Exits 1 naming the reason when
//  the build or the machine has no usable CUDA device (scripts/gpu-check runs it there).
//  --itl-trace: the last repetition's inter-token latencies while admitting, one line per token
//  ("seconds since the long prompt's submission,ms"), to see where the tail comes from.
//  --step-trace FILE: instead, measurement 3 once on the scheduler driven step by step, one line
//  per step while the long prompt is admitted: "prefill tokens,decode tokens,forward ms".
#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "inference/engine/engine_scheduler.h"
#include "inference/engine/serving_engine.h"
#include "inference/llama/generator.h"
#include "inference/llama/llama_model.h"
#include "inference/llama/model_tools.h"
#include "kernels/backend_factory.h"

using namespace sluice::inference;
using Steady = std::chrono::steady_clock;

namespace {

double secs(Steady::time_point a, Steady::time_point b) { return std::chrono::duration<double>(b - a).count(); }

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, size_t(p * double(v.size() - 1) + 0.5))];
}

std::vector<int32_t> random_tokens(std::mt19937& rng, int n, int vocab, int bos) {
  std::uniform_int_distribution<int> d(3, vocab - 1);
  std::vector<int32_t> t{bos};
  while (int(t.size()) < n) t.push_back(d(rng));
  return t;
}

// Waits for a set of requests to finish.
struct Latch {
  std::mutex mu;
  std::condition_variable cv;
  int left = 0;
  void done() {
    std::lock_guard l(mu);
    if (--left == 0) cv.notify_all();
  }
  void wait() {
    std::unique_lock l(mu);
    cv.wait(l, [&] { return left == 0; });
  }
};

struct Stream {
  Steady::time_point submitted, first, last;
  std::vector<double> itl;  // seconds between consecutive text events
  std::vector<Steady::time_point> times;
  int events = 0;
};

GenerationRequest bench_request(std::vector<int32_t> tokens, int gen, Stream* s, Latch* latch) {
  GenerationRequest r;
  r.prompt_tokens = std::move(tokens);
  r.max_tokens = gen;
  r.ignore_eos = true;
  r.sampling.temperature = 0;
  r.on_text = [s](std::string_view) {
    const auto now = Steady::now();
    if (s->events++ == 0) s->first = now;
    else s->itl.push_back(secs(s->last, now));
    s->times.push_back(now);
    s->last = now;
  };
  r.on_finish = [latch](const GenerationResult&) { latch->done(); };
  return r;
}

// The value of a counter in a registry's exposition (0 when absent).
double counter_value(const sluice::MetricsRegistry& metrics, const std::string& name) {
  const std::string text = metrics.exposition();
  const std::size_t at = text.find("\n" + name + "{");
  if (at == std::string::npos) return 0;
  const std::size_t space = text.find(' ', text.find('}', at));
  return space == std::string::npos ? 0 : std::atof(text.c_str() + space + 1);
}

// Aggregate tokens/s of `streams` concurrent streams; *replays gets the decode steps the engine
// replayed as recordings (CUDA graphs).
double aggregate_rate(const LlamaModel& model, const EngineOptions& o, int streams, int prompt, int gen, std::mt19937& rng,
                      double* replays) {
  sluice::MetricsRegistry metrics;
  ServingEngine engine(model, o, &metrics);
  std::vector<Stream> s(static_cast<size_t>(streams));
  Latch latch;
  latch.left = streams;
  for (int i = 0; i < streams; ++i)
    engine.submit(bench_request(random_tokens(rng, prompt, model.config().vocab_size, model.tokenizer().bos()), gen,
                                &s[size_t(i)], &latch));
  latch.wait();
  engine.stop();
  *replays = counter_value(metrics, "sluice_engine_graph_replays_total");
  Steady::time_point all_first = s[0].first, end = s[0].last;
  for (auto& x : s) all_first = std::max(all_first, x.first), end = std::max(end, x.last);
  // Tokens generated after every stream had started (each stream's events after all_first).
  int tokens = 0;
  for (auto& x : s)
    for (auto t : x.times) tokens += t > all_first;
  return tokens / secs(all_first, end);
}

double single_stream_generator(const LlamaModel& model, sluice::kernels::BackendKind device, int threads,
                               sluice::kernels::DType kv_type, int prompt, int gen, std::mt19937& rng) {
  GeneratorOptions go;
  go.backend = device;
  go.threads = threads;
  go.kv_type = kv_type;
  Generator g(model, go);
  const auto tokens = random_tokens(rng, prompt, model.config().vocab_size, model.tokenizer().bos());
  g.forward(tokens, 0);
  const auto t0 = Steady::now();
  for (int i = 0; i < gen; ++i) g.forward({int32_t(3 + i % 100)}, int64_t(tokens.size()) + i);
  return gen / secs(t0, Steady::now());
}

}  // namespace

int main(int argc, char** argv) {
  int threads = 2, prompt = 128, gen = 128, reps = 3, prefix = 2000, itl_streams = 8, interleaved = 32;
  double slack = 0.8;
  int min_chunk = 1;
  sluice::kernels::DType kv_type = EngineOptions{}.kv_type;
  bool run_throughput = true, run_prefix = true, run_itl = true;
  std::vector<int> stream_counts = {1, 4, 8, 16};
  std::string model_path, synth, dir = "/tmp/sluice-synth", itl_trace, step_trace;
  sluice::kernels::BackendKind device = sluice::kernels::BackendKind::kCpu;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&] { return std::string(i + 1 < argc ? argv[++i] : ""); };
    if (a == "-t") threads = std::stoi(next());
    else if (a == "--prompt") prompt = std::stoi(next());
    else if (a == "--gen") gen = std::stoi(next());
    else if (a == "--reps") reps = std::stoi(next());
    else if (a == "--prefix") prefix = std::stoi(next());
    else if (a == "--itl-streams") itl_streams = std::stoi(next());
    else if (a == "--interleaved") interleaved = std::stoi(next());
    else if (a == "--slack") slack = std::stod(next());
    else if (a == "--only-itl") run_throughput = run_prefix = false;
    else if (a == "--only-tg") run_prefix = run_itl = false;
    else if (a == "--min-chunk") min_chunk = std::stoi(next());
    else if (a == "--kv") kv_type = next() == "f16" ? sluice::kernels::DType::kF16 : sluice::kernels::DType::kF32;
    else if (a == "--synth") synth = next();
    else if (a == "--itl-trace") itl_trace = next();
    else if (a == "--step-trace") step_trace = next();
    else if (a == "--device") {
      const std::string d = next();
      if (!sluice::kernels::parse_backend_kind(d, &device)) {
        std::fprintf(stderr, "--device: cpu or cuda, not '%s'\n", d.c_str());
        return 2;
      }
    }
    else if (a == "--streams") {
      stream_counts.clear();
      std::string list = next();
      for (size_t p = 0; p < list.size();) {
        size_t q = list.find(',', p);
        stream_counts.push_back(std::stoi(list.substr(p, q - p)));
        p = q == std::string::npos ? list.size() : q + 1;
      }
    } else if (a[0] != '-') model_path = a;
    else {
      std::fprintf(stderr, "usage: engine_bench [--synth 110m:q8_0 | MODEL.gguf] [-t 2] [--streams 1,4,8,16] ...\n");
      return 2;
    }
  }
  if (!synth.empty()) {
    // The anchors' shape with a 4096-position context, so a 2,000-token prefix fits.
    const size_t colon = synth.find(':');
    SynthPreset preset = synth_preset(synth.substr(0, colon));
    preset.context_length = 4096;
    std::filesystem::create_directories(dir);
    model_path = dir + "/synth-" + synth.substr(0, colon) + "-" + synth.substr(colon + 1) + "-ctx4096.gguf";
    if (!std::filesystem::exists(model_path)) synth_model(preset, parse_weight_type(synth.substr(colon + 1)), model_path);
  }
  std::string why;
  if (!sluice::kernels::backend_kind_available(device, &why)) {
    std::fprintf(stderr, "--device %s: %s\n", sluice::kernels::backend_kind_name(device), why.c_str());
    return 1;
  }
  const auto model = LlamaModel::load(model_path, device);
  std::mt19937 rng(1);
  EngineOptions o;
  o.backend = device;
  o.threads = threads;
  o.context = 4096;
  o.interleaved_prefill = interleaved;
  o.prefill_itl_slack = slack;
  o.min_prefill_chunk = min_chunk;
  o.kv_type = kv_type;
  o.model_id = model_path;
  o.kv_budget_bytes = size_t(2) << 30;
  std::printf("model %s, device %s, %d threads, prompt %d, gen %d, %d reps (median), KV %s\n\n", model_path.c_str(),
              sluice::kernels::backend_kind_name(device), threads, prompt, gen, reps,
              kv_type == sluice::kernels::DType::kF16 ? "f16" : "f32");

  // 1. Aggregate generation.
  if (run_throughput) {
  std::vector<double> solo;
  for (int r = 0; r < reps; ++r) solo.push_back(single_stream_generator(*model, device, threads, kv_type, prompt, gen, rng));
  const double solo_rate = median(solo);
  std::printf("| streams | aggregate tg tok/s | per stream | vs single-stream Generator (%.1f tok/s) |\n| --- | --- | --- | --- |\n", solo_rate);
  double replays = 0;
  for (int streams : stream_counts) {
    std::vector<double> v;
    for (int r = 0; r < reps; ++r) {
      double run_replays = 0;
      v.push_back(aggregate_rate(*model, o, streams, prompt, gen, rng, &run_replays));
      replays += run_replays;
    }
    const double m = median(v);
    std::printf("| %d | %.1f | %.1f | %.2fx |\n", streams, m, m / streams, m / solo_rate);
    std::fflush(stdout);
  }
  std::printf("\ndecode steps replayed as recordings (CUDA graphs) over these runs: %.0f\n", replays);
  }

  // 2. Prefix reuse.
  if (run_prefix) {
    std::vector<double> cold, warm;
    ServingEngine engine(*model, o);
    auto ttft = [&](std::vector<int32_t> tokens) {
      Stream s;
      Latch latch;
      latch.left = 1;
      s.submitted = Steady::now();
      engine.submit(bench_request(std::move(tokens), 2, &s, &latch));
      latch.wait();
      return secs(s.submitted, s.first);
    };
    for (int r = 0; r < reps; ++r) {
      auto system = random_tokens(rng, prefix, model->config().vocab_size, model->tokenizer().bos());
      auto a = system, b = system;
      for (int i = 0; i < 16; ++i) a.push_back(100 + i), b.push_back(200 + i);
      cold.push_back(ttft(a));
      warm.push_back(ttft(b));
    }
    std::printf("\nprefix reuse (%d-token system prompt + 16): TTFT uncached %.1f ms, cached %.1f ms, ratio %.3f\n",
                prefix, 1e3 * median(cold), 1e3 * median(warm), median(warm) / median(cold));
    const KvBlockStats kv = engine.kv_stats();
    std::printf("  prefix hits %llu, reused tokens %llu\n", (unsigned long long)kv.prefix_hits,
                (unsigned long long)kv.prefix_reused_tokens);
  }

  if (!step_trace.empty()) {
    // Measurement 3 on the scheduler itself: what each step carried and cost.
    EngineScheduler sched(*model, o);
    std::vector<Stream> s(static_cast<size_t>(itl_streams));
    Latch latch;
    latch.left = itl_streams + 1;
    for (int i = 0; i < itl_streams; ++i)
      sched.add(bench_request(random_tokens(rng, 32, model->config().vocab_size, model->tokenizer().bos()), 600, &s[size_t(i)],
                              &latch), Steady::now());
    const auto t0 = Steady::now();
    while (secs(t0, Steady::now()) < 4.5) sched.step();
    Stream big;
    sched.add(bench_request(random_tokens(rng, prefix, model->config().vocab_size, model->tokenizer().bos()), 4, &big, &latch),
              Steady::now());
    FILE* f = std::fopen(step_trace.c_str(), "w");
    while (big.events == 0 && !sched.idle()) {
      const StepReport r = sched.step();
      if (f) std::fprintf(f, "%d,%d,%.1f\n", r.prefill_tokens, r.decode_tokens, 1e3 * r.forward_seconds);
    }
    if (f) std::fclose(f);
    return 0;
  }

  // 3. Inter-token latency while a long prompt is admitted.
  if (run_itl) {
    std::vector<double> base_p50, during_p50, during_p99, long_ttft, control_p50, control_p99;
    std::vector<std::pair<double, double>> trace;  // (seconds since submission, ITL ms)
    for (int r = 0; r < reps; ++r) {
      std::vector<std::vector<int32_t>> prompts;
      for (int i = 0; i < itl_streams; ++i)
        prompts.push_back(random_tokens(rng, 32, model->config().vocab_size, model->tokenizer().bos()));
      // Each stream's token indexes generated while the long prompt was admitted: [first, last).
      std::vector<std::pair<size_t, size_t>> window(static_cast<size_t>(itl_streams));
      {
        ServingEngine engine(*model, o);
        std::vector<Stream> s(static_cast<size_t>(itl_streams));
        Latch latch;
        latch.left = itl_streams + 1;
        for (int i = 0; i < itl_streams; ++i) engine.submit(bench_request(prompts[size_t(i)], 600, &s[size_t(i)], &latch));
        std::this_thread::sleep_for(std::chrono::milliseconds(1500));
        // Steady state: every stream has produced its first token; then a baseline window.
        const Steady::time_point all_started = Steady::now();
        std::this_thread::sleep_for(std::chrono::milliseconds(3000));
        Stream big;
        big.submitted = Steady::now();
        engine.submit(bench_request(random_tokens(rng, prefix, model->config().vocab_size, model->tokenizer().bos()), 4,
                                    &big, &latch));
        latch.wait();
        std::vector<double> before, during;
        for (size_t i = 0; i < s.size(); ++i) {
          const auto& x = s[i];
          window[i] = {x.times.size(), 0};
          for (size_t k = 1; k < x.times.size(); ++k) {
            const double d = secs(x.times[k - 1], x.times[k]);
            if (x.times[k] < big.submitted && x.times[k - 1] > all_started) {
              before.push_back(d);
            } else if (x.times[k] > big.submitted && x.times[k] <= big.first) {
              during.push_back(d);
              if (!itl_trace.empty() && r == reps - 1) trace.emplace_back(secs(big.submitted, x.times[k]), 1e3 * d);
              window[i].first = std::min(window[i].first, k);
              window[i].second = k + 1;
            }
          }
        }
        base_p50.push_back(percentile(before, 0.5));
        during_p50.push_back(percentile(during, 0.5));
        during_p99.push_back(percentile(during, 0.99));
        long_ttft.push_back(secs(big.submitted, big.first));
      }
      // Control: the same streams alone; their inter-token latency over the same token indexes
      // (the same positions: each decode step's attention grows with the streams' context).
      {
        ServingEngine engine(*model, o);
        std::vector<Stream> s(static_cast<size_t>(itl_streams));
        Latch latch;
        latch.left = itl_streams;
        for (int i = 0; i < itl_streams; ++i) engine.submit(bench_request(prompts[size_t(i)], 600, &s[size_t(i)], &latch));
        latch.wait();
        std::vector<double> same;
        for (size_t i = 0; i < s.size(); ++i)
          for (size_t k = std::max<size_t>(1, window[i].first); k < std::min(window[i].second, s[i].times.size()); ++k)
            same.push_back(secs(s[i].times[k - 1], s[i].times[k]));
        control_p50.push_back(percentile(same, 0.5));
        control_p99.push_back(percentile(same, 0.99));
      }
    }
    std::printf("\nlong prompt admission (%d tokens, interleaved_prefill %d, slack %.2f, min chunk %d) beside %d decoding streams:\n",
                prefix, interleaved, slack, min_chunk, itl_streams);
    std::printf("  ITL P50 before %.1f ms; while admitting P50 %.1f ms, P99 %.1f ms; P99/P50(before) %.2f; long prompt TTFT %.2f s\n",
                1e3 * median(base_p50), 1e3 * median(during_p50), 1e3 * median(during_p99),
                median(during_p99) / median(base_p50), median(long_ttft));
    if (!itl_trace.empty()) {
      std::sort(trace.begin(), trace.end());
      if (FILE* f = std::fopen(itl_trace.c_str(), "w")) {
        for (auto [t, ms] : trace) std::fprintf(f, "%.3f,%.1f\n", t, ms);
        std::fclose(f);
      }
    }
    std::printf("  control (same streams, no long prompt, same token positions): ITL P50 %.1f ms, P99 %.1f ms; P99 while "
                "admitting / control P50 %.2f\n",
                1e3 * median(control_p50), 1e3 * median(control_p99), median(during_p99) / median(control_p50));
  }
  return 0;
}
