// The model runtime on a backend whose operands live in memory of its own, as a GPU's do: the
// CPU kernels behind a backend that says host_memory() is false and checks that every
// activation, KV pool and block table it is handed was allocated by it (weights, which the
// caller chose to keep in host memory here, are exempt). This runs the device paths of
// LlamaForward, KvBlockPool and the serving engine (staged block tables, logits copied back,
// KV copies within the backend) on any machine, and proves they hand a device backend nothing
// from the host. The CUDA twin's own arithmetic is tested against the CPU in
// tests/kernels/cuda/.
#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <mutex>
#include <new>
#include <stdexcept>
#include <string>

#include "inference/engine/engine_scheduler.h"
#include "kernels/backend_factory.h"
#include "tests/inference/stories_model_test.h"

namespace sluice::inference {
namespace {

using Steady = std::chrono::steady_clock;

class SeparateMemoryBackend final : public kernels::KernelBackend {
 public:
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
    check(dst, bytes, "copy_to_backend");
    std::memcpy(dst, src, bytes);
    ++copies_in;
  }
  void copy_to_host(void* dst, const void* src, size_t bytes) override {
    check(src, bytes, "copy_to_host");
    std::memcpy(dst, src, bytes);
    ++copies_out;
  }
  void copy_within(void* dst, const void* src, size_t bytes) override {
    check(dst, bytes, "copy_within");
    check(src, bytes, "copy_within");
    std::memcpy(dst, src, bytes);
  }

  void matmul(const kernels::MatrixView& w, const float* x, int64_t n, float* y) override {
    check(x, n * w.cols * 4, "matmul x");
    check(y, n * w.rows * 4, "matmul y");
    cpu_->matmul(w, x, n, y);
  }
  void rms_norm(const float* x, const float* weight, int64_t n, int64_t dim, float eps, float* out) override {
    check(x, n * dim * 4, "rms_norm x");
    check(out, n * dim * 4, "rms_norm out");
    cpu_->rms_norm(x, weight, n, dim, eps, out);
  }
  void rope(float* x, int64_t n, int n_heads, int head_dim, int n_rot, int64_t pos0, float freq_base) override {
    check(x, n * n_heads * head_dim * 4, "rope");
    cpu_->rope(x, n, n_heads, head_dim, n_rot, pos0, freq_base);
  }
  void swiglu(float* gate, const float* up, int64_t count) override {
    check(gate, count * 4, "swiglu gate");
    check(up, count * 4, "swiglu up");
    cpu_->swiglu(gate, up, count);
  }
  void kv_store(const kernels::KvLayerView& kv, const int32_t* table, int64_t pos0, int64_t n, const float* k,
                const float* v) override {
    check_kv(kv, table, pos0 + n, "kv_store");
    check(k, n * kv.kv_dim * 4, "kv_store k");
    check(v, n * kv.kv_dim * 4, "kv_store v");
    cpu_->kv_store(kv, table, pos0, n, k, v);
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
    cpu_->attention_batch(kv, segments, count, shape);
  }
  void add(float* x, const float* y, int64_t count) override {
    check(x, count * 4, "add x");
    check(y, count * 4, "add y");
    cpu_->add(x, y, count);
  }
  void get_row(const kernels::MatrixView& w, int64_t row, float* out) override {
    check(out, w.cols * 4, "get_row out");
    cpu_->get_row(w, row, out);
  }

  int allocations = 0, copies_in = 0, copies_out = 0;

 private:
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

}  // namespace
}  // namespace sluice::inference
