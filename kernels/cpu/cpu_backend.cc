#include "kernels/cpu/cpu_backend.h"

#include <algorithm>

#include "kernels/cpu/attention.h"
#include "kernels/cpu/elementwise.h"
#include "kernels/cpu/q8_0x8.h"
#include "kernels/cpu/quant_blocks.h"

namespace sluice::kernels {

CpuBackend::CpuBackend(int threads, Isa isa) : runner_(threads, isa) {}

void CpuBackend::matmul(const MatrixView& w, const float* x, int64_t n, float* y) {
  runner_.run(w, x, n, y);
}

void CpuBackend::rms_norm(const float* x, const float* weight, int64_t n, int64_t dim, float eps,
                          float* out) {
  for (int64_t t = 0; t < n; ++t) rms_norm_row(x + t * dim, weight, dim, eps, out + t * dim);
}

void CpuBackend::rope(float* x, int64_t n, int n_heads, int head_dim, int n_rot, int64_t pos0,
                      float freq_base) {
  const int64_t stride = int64_t(n_heads) * head_dim;
  for (int64_t t = 0; t < n; ++t) rope_row(x + t * stride, n_heads, head_dim, n_rot, pos0 + t, freq_base);
}

void CpuBackend::swiglu(float* gate, const float* up, int64_t count) { swiglu_row(gate, up, count); }

void CpuBackend::kv_store(const KvLayerView& kv, const int32_t* block_table, int64_t pos0, int64_t n,
                          const float* k, const float* v) {
  if (kv.type == DType::kF16 && runner_.isa() != Isa::kScalar) return kv_store_rows_f16c(kv, block_table, pos0, n, k, v);
  kv_store_rows(kv, block_table, pos0, n, k, v);
}

void CpuBackend::attention(const float* q, const KvLayerView& kv, const int32_t* block_table,
                           int64_t pos0, int64_t n, const AttentionShape& shape, float* out) {
  const int group = shape.n_heads / shape.n_kv_heads;
  const int64_t stride = int64_t(shape.n_heads) * shape.head_dim;
  // Tasks are (query tile, head) pairs. The flash-style tiles read each K/V block once per
  // tile of up to 16 queries; the portable path runs one query at a time.
  const bool tiled = runner_.isa() != Isa::kScalar && attention_tile_supported(kv, shape.head_dim);
  const int64_t tile = tiled ? kAttentionTileTokens : 1;
  const int64_t tiles = (n + tile - 1) / tile;
  const int64_t tasks = tiles * shape.n_heads;
  const int64_t grain = std::max<int64_t>(1, tasks / (int64_t(threads()) * 4));
  runner_.parallel(tasks, grain, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) {
      const int64_t t0 = (i / shape.n_heads) * tile;
      const int h = int(i % shape.n_heads);
      const int m = int(std::min<int64_t>(tile, n - t0));
      const float* qt = q + t0 * stride + int64_t(h) * shape.head_dim;
      float* ot = out + t0 * stride + int64_t(h) * shape.head_dim;
      if (tiled) {
        attention_tile_avx2(qt, stride, m, kv, block_table, pos0 + t0, h / group, shape.head_dim, ot, stride);
        continue;
      }
      // Scores live in a per-thread buffer: tasks on one thread run one after another.
      thread_local std::vector<float> scores_buffer;
      if (int64_t(scores_buffer.size()) < pos0 + n + 16) scores_buffer.resize(size_t(pos0 + n + 16));
      attention_head(qt, kv, block_table, pos0 + t0, h / group, shape.head_dim, scores_buffer.data(), ot);
    }
  });
}

void CpuBackend::add(float* x, const float* y, int64_t count) {
  for (int64_t i = 0; i < count; ++i) x[i] += y[i];
}

void CpuBackend::get_row(const MatrixView& w, int64_t row, float* out) {
  if (w.type == DType::kQ8_0x8) return dequantize_row_q8_0x8(w, row, out);
  const char* base = static_cast<const char*>(w.data);
  dequantize_row(w.type, base + row * dtype_row_bytes(w.type, w.cols), out, w.cols);
}

}  // namespace sluice::kernels
