// CpuBackend: KernelBackend on the host CPU. Matrix products run on the best SIMD level the
// CPU has (kernels/cpu/cpu_features.h) and, with threads > 1, inside a oneTBB arena of that
// many threads; attention is split across (sequence, query tile, head) triples, a batch of
// sequences in one launch. One caller thread at a time.
#pragma once

#include <memory>
#include <vector>

#include "kernels/backend.h"
#include "kernels/cpu/cpu_features.h"
#include "kernels/cpu/matmul.h"

namespace sluice::kernels {

class CpuBackend final : public KernelBackend {
 public:
  explicit CpuBackend(int threads, Isa isa = default_isa());

  void matmul(const MatrixView& w, const float* x, int64_t n, float* y) override;
  void matmul_shared_input(const MatrixView* ws, size_t count, const float* x, int64_t n, float* const* ys) override;
  void rms_norm(const float* x, const float* weight, int64_t n, int64_t dim, float eps,
                float* out) override;
  void rope(float* x, int64_t n, int n_heads, int head_dim, int n_rot, int64_t pos0,
            float freq_base) override;
  void swiglu(float* gate, const float* up, int64_t count) override;
  void kv_store(const KvLayerView& kv, const int32_t* block_table, int64_t pos0, int64_t n,
                const float* k, const float* v) override;
  void attention(const float* q, const KvLayerView& kv, const int32_t* block_table, int64_t pos0,
                 int64_t n, const AttentionShape& shape, float* out) override;
  void attention_batch(const KvLayerView& kv, const AttentionSegment* segments, size_t count,
                       const AttentionShape& shape) override;
  void add(float* x, const float* y, int64_t count) override;
  void get_row(const MatrixView& w, int64_t row, float* out) override;

  bool run_on_host_threads(const std::function<void()>& fn) override {
    runner_.execute(fn);
    return true;
  }
  int threads() const { return runner_.threads(); }
  Isa isa() const { return runner_.isa(); }

 private:
  // Runs attention for query tile `t0`.. (up to the tile width) and head h of one segment.
  void attention_task(const AttentionSegment& s, const KvLayerView& kv, const AttentionShape& shape, int64_t t0, int h,
                      bool tiled);
  MatmulRunner runner_;
  std::vector<int64_t> task_starts_;  // attention_batch: first task index of each segment
};

}  // namespace sluice::kernels
