// The model runtime on a backend whose operands live in memory of its own, as a GPU's do: the
// CPU kernels behind a backend that says host_memory() is false and checks that every
// activation, KV pool and block table it is handed was allocated by it (weights, which the
// caller chose to keep in host memory here, are exempt). This runs the device paths of
// LlamaForward, KvBlockPool and the serving engine (staged block tables, logits copied back,
// KV copies within the backend) on any machine, and proves they hand a device backend nothing
// from the host. The CUDA twin's own arithmetic is tested against the CPU in
// tests/kernels/cuda/.
//
// Made with `records`, the backend also records as a GPU does: while recording, every operation
// is put on a tape with its arguments instead of run, and a replay runs the tape again, reading
// whatever the operands hold then. A decode step that passed anything per-step by value (a
// position, a token id, a sampling draw) would replay stale values and answer wrong tokens.
#include <gtest/gtest.h>

#include <condition_variable>
#include <cstring>
#include <functional>
#include <map>
#include <mutex>
#include <new>
#include <stdexcept>
#include <string>
#include <vector>

#include "inference/engine/engine_scheduler.h"
#include "inference/engine/serving_engine.h"
#include "kernels/backend_factory.h"
#include "tests/inference/stories_model_test.h"

namespace sluice::inference {
namespace {

using Steady = std::chrono::steady_clock;

class SeparateMemoryBackend final : public kernels::KernelBackend {
 public:
  explicit SeparateMemoryBackend(bool records = false) : records_(records) {}

  bool host_memory() const override { return false; }
  void* allocate(size_t bytes) override {
    void* p = ::operator new(bytes, std::align_val_t(64));
    std::lock_guard lock(mu_);
    blocks_[static_cast<const char*>(p)] = bytes;
    ++allocations;
    return p;
  }
  void deallocate(void* p) noexcept override {
    {
      std::lock_guard lock(mu_);
      blocks_.erase(static_cast<const char*>(p));
    }
    ::operator delete(p, std::align_val_t(64));
  }
  void copy_to_backend(void* dst, const void* src, size_t bytes) override {
    not_recording("copy_to_backend");
    check(dst, bytes, "copy_to_backend");
    std::memcpy(dst, src, bytes);
    ++copies_in;
  }
  void copy_to_host(void* dst, const void* src, size_t bytes) override {
    not_recording("copy_to_host");
    check(src, bytes, "copy_to_host");
    std::memcpy(dst, src, bytes);
    ++copies_out;
  }
  void copy_within(void* dst, const void* src, size_t bytes) override {
    not_recording("copy_within");
    check(dst, bytes, "copy_within");
    check(src, bytes, "copy_within");
    std::memcpy(dst, src, bytes);
  }

  void matmul(const kernels::MatrixView& w, const float* x, int64_t n, float* y) override {
    check(x, n * w.cols * 4, "matmul x");
    check(y, n * w.rows * 4, "matmul y");
    run([=, this] { cpu_->matmul(w, x, n, y); });
  }
  void rms_norm(const float* x, const float* weight, int64_t n, int64_t dim, float eps, float* out) override {
    check(x, n * dim * 4, "rms_norm x");
    check(out, n * dim * 4, "rms_norm out");
    run([=, this] { cpu_->rms_norm(x, weight, n, dim, eps, out); });
  }
  void rope(float* x, int64_t n, int n_heads, int head_dim, int n_rot, int64_t pos0, float freq_base) override {
    check(x, n * n_heads * head_dim * 4, "rope");
    run([=, this] { cpu_->rope(x, n, n_heads, head_dim, n_rot, pos0, freq_base); });
  }
  void swiglu(float* gate, const float* up, int64_t count) override {
    check(gate, count * 4, "swiglu gate");
    check(up, count * 4, "swiglu up");
    run([=, this] { cpu_->swiglu(gate, up, count); });
  }
  void kv_store(const kernels::KvLayerView& kv, const int32_t* table, int64_t pos0, int64_t n, const float* k,
                const float* v) override {
    check_kv(kv, table, pos0 + n, "kv_store");
    check(k, n * kv.kv_dim * 4, "kv_store k");
    check(v, n * kv.kv_dim * 4, "kv_store v");
    run([=, this] { cpu_->kv_store(kv, table, pos0, n, k, v); });
  }
  void attention(const float* q, const kernels::KvLayerView& kv, const int32_t* table, int64_t pos0, int64_t n,
                 const kernels::AttentionShape& shape, float* out) override {
    const kernels::AttentionSegment s{q, table, pos0, n, out};
    attention_batch(kv, &s, 1, shape);
  }
  void attention_batch(const kernels::KvLayerView& kv, const kernels::AttentionSegment* segments, size_t count,
                       const kernels::AttentionShape& shape) override {
    for (size_t i = 0; i < count; ++i) {
      const kernels::AttentionSegment& s = segments[i];
      check_kv(kv, s.block_table, s.pos0 + s.n, "attention");
      check(s.q, s.n * shape.n_heads * shape.head_dim * 4, "attention q");
      check(s.out, s.n * shape.n_heads * shape.head_dim * 4, "attention out");
    }
    std::vector<kernels::AttentionSegment> copy(segments, segments + count);  // host memory: taken now
    run([=, this] { cpu_->attention_batch(kv, copy.data(), copy.size(), shape); });
  }
  void add(float* x, const float* y, int64_t count) override {
    check(x, count * 4, "add x");
    check(y, count * 4, "add y");
    run([=, this] { cpu_->add(x, y, count); });
  }
  void get_row(const kernels::MatrixView& w, int64_t row, float* out) override {
    check(out, w.cols * 4, "get_row out");
    run([=, this] { cpu_->get_row(w, row, out); });
  }

  // The decode-step forms: positions, tables and token ids must be this backend's memory.
  void get_rows_at(const kernels::MatrixView& w, const int32_t* rows, int64_t n, float* out) override {
    check(rows, n * 4, "get_rows_at ids");
    check(out, n * w.cols * 4, "get_rows_at out");
    run([=, this] { cpu_->get_rows(w, rows, n, out); });
  }
  void rope_at(float* x, const kernels::TokenPlaces& at, int n_heads, int head_dim, int n_rot, float base) override {
    check_places(at, "rope_at");
    check(x, at.n * n_heads * head_dim * 4, "rope_at x");
    run([=, this] { cpu_->rope_at(x, at, n_heads, head_dim, n_rot, base); });
  }
  void kv_store_at(const kernels::KvLayerView& kv, const kernels::TokenPlaces& at, const float* k,
                   const float* v) override {
    check_places(at, "kv_store_at");
    check(kv.k, 1, "kv_store_at");
    run([=, this] { cpu_->kv_store_at(kv, at, k, v); });
  }
  void attention_at(const kernels::KvLayerView& kv, const kernels::TokenPlaces& at, const float* q,
                    const kernels::AttentionShape& shape, float* out) override {
    check_places(at, "attention_at");
    check(out, at.n * shape.n_heads * shape.head_dim * 4, "attention_at out");
    run([=, this] { cpu_->attention_at(kv, at, q, shape, out); });
  }

  // Sampling: the staged rows are this backend's (a copy taken now); picks run when the tape does.
  void stage_sampling(const kernels::TokenSampling* params, int64_t rows) override {
    not_recording("stage_sampling");
    cpu_->stage_sampling(params, rows);
    ++stagings;
  }
  void sample_staged(float* logits, int64_t rows, int64_t vocab, bool greedy_only, int32_t* tokens) override {
    check(logits, rows * vocab * 4, "sample_staged logits");
    check(tokens, rows * 4, "sample_staged tokens");
    run([=, this] { cpu_->sample_staged(logits, rows, vocab, greedy_only, tokens); });
  }

  bool can_record() const override { return records_; }
  std::unique_ptr<kernels::BackendRecording> record(const std::function<void()>& ops) override {
    if (!records_) return nullptr;
    auto tape = std::make_unique<Tape>(this);
    tape_ = &tape->ops;
    try {
      ops();
    } catch (...) {
      tape_ = nullptr;
      throw;
    }
    tape_ = nullptr;
    ++recordings;
    return tape;
  }

  int allocations = 0, copies_in = 0, copies_out = 0, stagings = 0, recordings = 0, replays = 0;

 private:
  struct Tape final : kernels::BackendRecording {
    explicit Tape(SeparateMemoryBackend* b) : backend(b) {}
    void replay() override {
      ++backend->replays;
      for (auto& op : ops) op();
    }
    SeparateMemoryBackend* backend;
    std::vector<std::function<void()>> ops;
  };
  template <typename F>
  void run(F&& f) {
    if (tape_) tape_->push_back(std::forward<F>(f)); else f();
  }
  void not_recording(const char* what) {
    if (tape_) throw std::logic_error(std::string(what) + " while recording");
  }
  void check_places(const kernels::TokenPlaces& at, const char* what) {
    check(at.positions, at.n * 4, what);
    check(at.tables, at.n * at.table_stride * 4, what);
  }

  bool records_;
  std::vector<std::function<void()>>* tape_ = nullptr;
  // Throws unless [p, p + bytes) lies inside one allocation of this backend.
  void check(const void* p, int64_t bytes, const char* what) {
    std::lock_guard lock(mu_);
    const char* c = static_cast<const char*>(p);
    auto it = blocks_.upper_bound(c);
    if (it == blocks_.begin() || c + bytes > std::prev(it)->first + std::prev(it)->second)
      throw std::logic_error(std::string(what) + ": operand is not this backend's memory");
  }
  void check_kv(const kernels::KvLayerView& kv, const int32_t* table, int64_t positions, const char* what) {
    check(kv.k, 1, what);
    check(kv.v, 1, what);
    check(table, (positions + kv.block_size - 1) / kv.block_size * 4, what);
  }

  std::mutex mu_;
  std::map<const char*, size_t> blocks_;
  std::unique_ptr<kernels::KernelBackend> cpu_ = kernels::make_backend(kernels::BackendOptions{});
};

struct SeparateMemory : testing::StoriesModelTest {};

TEST_F(SeparateMemory, GeneratorMatchesTheHostMemoryRunTokenForToken) {
  SeparateMemoryBackend backend;
  GeneratorOptions options;
  options.max_batch = 7;  // a prompt in several chunks
  Generator gen(*model, options, backend);
  const std::string prompt = "Once upon a time, there was a little girl named Lily. She";
  GenerationRequest r;
  r.prompt = prompt;
  r.max_tokens = 120;
  r.sampling = greedy();
  EXPECT_EQ(gen.generate(r).text, alone(prompt, 120));
  EXPECT_GT(backend.allocations, 0);
  EXPECT_GT(backend.copies_in, 0) << "block tables are staged";
  EXPECT_GT(backend.copies_out, 0) << "logits come back";
}

TEST_F(SeparateMemory, TheGeneratorsDecodeStepsAreRecordedToo) {
  SeparateMemoryBackend backend(/*records=*/true);
  Generator gen(*model, GeneratorOptions{}, backend);
  const std::string prompt = "Lily and Ben went to the park";
  GenerationRequest r;
  r.prompt = prompt;
  r.max_tokens = 80;
  r.sampling = greedy();
  EXPECT_EQ(gen.generate(r).text, alone(prompt, 80));
  EXPECT_GE(backend.recordings, 1) << "bucket 1, logits: one recording per block-table width";
  EXPECT_GT(backend.replays, 70);
}

TEST_F(SeparateMemory, TheServingEngineBatchesAndReusesPrefixesInBackendMemory) {
  SeparateMemoryBackend backend;
  EngineOptions options;
  options.prefix_cache = true;
  EngineScheduler s(*model, options, backend);
  std::vector<std::string> failures;
  s.on_sequence_failure = [&](const std::string& id, const std::string& error) { failures.push_back(id + ": " + error); };
  // The second and third share the first's prompt prefix (its cached blocks are reused).
  const std::vector<std::string> prompts = {"The cat sat on the mat and", "The cat sat on the mat and then",
                                            "The cat sat on the mat and then she", "One day"};
  std::vector<std::string> texts(prompts.size());
  std::vector<int> finished(prompts.size(), 0);
  for (size_t i = 0; i < prompts.size(); ++i) {
    GenerationRequest r;
    r.prompt = prompts[i];
    r.max_tokens = 40;
    r.sampling = greedy();
    r.request_id = "r" + std::to_string(i);
    r.on_text = [&texts, i](std::string_view piece) { texts[i] += piece; };
    r.on_finish = [&finished, i](const GenerationResult&) { ++finished[i]; };
    ASSERT_TRUE(s.add(std::move(r), Steady::now()).ok());
    if (i == 0)
      for (int step = 0; step < 3; ++step) s.step();  // the first is cached before the others come
  }
  while (!s.idle()) s.step();
  EXPECT_TRUE(failures.empty()) << failures.front();
  for (size_t i = 0; i < prompts.size(); ++i) {
    EXPECT_EQ(finished[i], 1) << prompts[i];
    EXPECT_EQ(texts[i], alone(prompts[i], 40)) << prompts[i];
  }
}

// Runs `prompts` through an engine on `backend` and returns each one's text.
std::vector<std::string> serve(kernels::KernelBackend& backend, const LlamaModel& model,
                               const std::vector<std::string>& prompts, const SamplingParams& sampling,
                               int max_tokens) {
  EngineScheduler s(model, EngineOptions{}, backend);
  std::vector<std::string> failures;
  s.on_sequence_failure = [&](const std::string& id, const std::string& error) { failures.push_back(id + ": " + error); };
  std::vector<std::string> texts(prompts.size());
  for (size_t i = 0; i < prompts.size(); ++i) {
    GenerationRequest r;
    r.prompt = prompts[i];
    r.max_tokens = max_tokens;
    r.sampling = sampling;
    r.sampling.seed = 1000 + i;
    r.request_id = "r" + std::to_string(i);
    r.on_text = [&texts, i](std::string_view piece) { texts[i] += piece; };
    EXPECT_TRUE(s.add(std::move(r), Steady::now()).ok());
  }
  while (!s.idle()) s.step();
  EXPECT_TRUE(failures.empty()) << failures.front();
  return texts;
}

const std::vector<std::string> kFivePrompts = {"The cat sat on the mat and", "One day", "Lily wanted to",
                                               "Once upon a time, there was a big dog", "Tom and Sue"};

TEST_F(SeparateMemory, RecordedDecodeStepsAnswerTheHostsGreedyTokens) {
  SeparateMemoryBackend backend(/*records=*/true);
  const std::vector<std::string> texts = serve(backend, *model, kFivePrompts, greedy(), 60);
  for (size_t i = 0; i < kFivePrompts.size(); ++i) EXPECT_EQ(texts[i], alone(kFivePrompts[i], 60)) << kFivePrompts[i];
  // Five sequences decode as one bucket of 8 (three padding rows), then fewer as they end.
  EXPECT_GT(backend.recordings, 0);
  EXPECT_GT(backend.replays, 20) << "decode steps replay their recording";
}

TEST_F(SeparateMemory, RecordedDecodeStepsSampleWithEachStepsDrawAndPenalties) {
  SamplingParams p;
  p.temperature = 0.9f;
  p.top_k = 40;
  p.top_p = 0.95f;
  p.min_p = 0.02f;
  p.repetition_penalty = 1.1f;
  p.frequency_penalty = 0.2f;
  auto cpu = kernels::make_backend(kernels::BackendOptions{});
  const std::vector<std::string> expected = serve(*cpu, *model, kFivePrompts, p, 60);
  SeparateMemoryBackend backend(/*records=*/true);
  const std::vector<std::string> texts = serve(backend, *model, kFivePrompts, p, 60);
  EXPECT_EQ(texts, expected);
  EXPECT_GT(backend.replays, 20);
  // The texts differ from one another and from greedy's: the draws were really used.
  EXPECT_NE(texts[1], alone(kFivePrompts[1], 60));
}

// The serving engine exports the replays: sluice_engine_graph_replays_total counts them.
TEST_F(SeparateMemory, TheServingEngineCountsReplayedDecodeSteps) {
  SeparateMemoryBackend backend(/*records=*/true);
  MetricsRegistry metrics;
  ServingEngine engine(*model, EngineOptions{}, backend, &metrics);
  std::mutex mu;
  std::condition_variable cv;
  int finished = 0;
  for (int i = 0; i < 3; ++i) {
    GenerationRequest r;
    r.prompt = kFivePrompts[size_t(i)];
    r.max_tokens = 40;
    r.sampling = greedy();
    r.on_finish = [&](const GenerationResult&) {
      std::lock_guard lock(mu);
      ++finished;
      cv.notify_all();
    };
    ASSERT_TRUE(engine.submit(std::move(r)).ok());
  }
  {
    std::unique_lock lock(mu);
    ASSERT_TRUE(cv.wait_for(lock, std::chrono::seconds(60), [&] { return finished == 3; }));
  }
  engine.stop();
  const std::string exposition = metrics.exposition();
  const auto at = exposition.find("sluice_engine_graph_replays_total{model=\"\"} ");
  ASSERT_NE(at, std::string::npos) << exposition;
  EXPECT_GT(std::stod(exposition.substr(at + std::string("sluice_engine_graph_replays_total{model=\"\"} ").size())), 10)
      << exposition.substr(at, 80);
  EXPECT_GT(backend.replays, 10);
}

}  // namespace
}  // namespace sluice::inference
