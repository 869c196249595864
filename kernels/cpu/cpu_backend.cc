#include "kernels/cpu/cpu_backend.h"

#include <algorithm>

#include "kernels/cpu/attention.h"
#include "kernels/cpu/elementwise.h"
#include "kernels/cpu/bf16_panels.h"
#include "kernels/cpu/f32_panels.h"
#include "kernels/cpu/quant_x8.h"
#include "kernels/quant_blocks.h"

namespace sluice::kernels {

CpuBackend::CpuBackend(int threads, Isa isa) : runner_(threads, isa) {}

void CpuBackend::matmul(const MatrixView& w, const float* x, int64_t n, float* y) {
  runner_.run(w, x, n, y);
}

// One launch when the runner can (same type and width, few matrices); otherwise one each.
void CpuBackend::matmul_shared_input(const MatrixView* ws, size_t count, const float* x, int64_t n, float* const* ys) {
  bool same = count <= MatmulRunner::kMaxSharedInput;
  for (size_t i = 1; i < count && same; ++i) same = ws[i].type == ws[0].type && ws[i].cols == ws[0].cols;
  if (same) return runner_.run_shared_input(ws, count, x, n, ys);
  for (size_t i = 0; i < count; ++i) runner_.run(ws[i], x, n, ys[i]);
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

// Element by element, so any split gives the same bits. Split only when a batch makes it worth
// a launch: 16 decoding streams' 32K elements took 2.6% of a step's CPU time on one thread.
void CpuBackend::swiglu(float* gate, const float* up, int64_t count) {
  constexpr int64_t kChunk = 8192;
  if (count < 2 * kChunk || threads() == 1) return swiglu_row(gate, up, count);
  runner_.parallel((count + kChunk - 1) / kChunk, 1, [&](int64_t b, int64_t e) {
    swiglu_row(gate + b * kChunk, up + b * kChunk, std::min(count, e * kChunk) - b * kChunk);
  });
}

void CpuBackend::kv_store(const KvLayerView& kv, const int32_t* block_table, int64_t pos0, int64_t n,
                          const float* k, const float* v) {
  if (kv.type == DType::kF16 && runner_.isa() != Isa::kScalar) return kv_store_rows_f16c(kv, block_table, pos0, n, k, v);
  kv_store_rows(kv, block_table, pos0, n, k, v);
}

namespace {
bool attention_tiled(Isa isa, const KvLayerView& kv, const AttentionShape& shape) {
  return isa != Isa::kScalar && attention_tile_supported(kv, shape.head_dim);
}
}  // namespace

void CpuBackend::attention_task(const AttentionSegment& s, const KvLayerView& kv, const AttentionShape& shape,
                                int64_t t0, int h, bool tiled) {
  const int group = shape.n_heads / shape.n_kv_heads;
  const int64_t stride = int64_t(shape.n_heads) * shape.head_dim;
  const float* qt = s.q + t0 * stride + int64_t(h) * shape.head_dim;
  float* ot = s.out + t0 * stride + int64_t(h) * shape.head_dim;
  if (tiled) {
    const int m = int(std::min<int64_t>(kAttentionTileTokens, s.n - t0));
    attention_tile_avx2(qt, stride, m, kv, s.block_table, s.pos0 + t0, h / group, shape.head_dim, ot, stride);
    return;
  }
  // Scores live in a per-thread buffer: tasks on one thread run one after another.
  thread_local std::vector<float> scores_buffer;
  if (int64_t(scores_buffer.size()) < s.pos0 + s.n + 16) scores_buffer.resize(size_t(s.pos0 + s.n + 16));
  attention_head(qt, kv, s.block_table, s.pos0 + t0, h / group, shape.head_dim, scores_buffer.data(), ot);
}

void CpuBackend::attention(const float* q, const KvLayerView& kv, const int32_t* block_table,
                           int64_t pos0, int64_t n, const AttentionShape& shape, float* out) {
  const AttentionSegment s{q, block_table, pos0, n, out};
  attention_batch(kv, &s, 1, shape);
}

// Tasks are (segment, query tile, head) triples, numbered segment by segment, in one launch:
// a decoding step's sequences (one query each) share the threads without a launch apiece.
// The flash-style tiles read each K/V block once per tile of up to 16 queries; the portable
// path runs one query at a time.
void CpuBackend::attention_batch(const KvLayerView& kv, const AttentionSegment* segments, size_t count,
                                 const AttentionShape& shape) {
  const bool tiled = attention_tiled(runner_.isa(), kv, shape);
  const int64_t tile = tiled ? kAttentionTileTokens : 1;
  task_starts_.resize(count + 1);
  int64_t tasks = 0;
  for (size_t i = 0; i < count; ++i) {
    task_starts_[i] = tasks;
    tasks += (segments[i].n + tile - 1) / tile * shape.n_heads;
  }
  task_starts_[count] = tasks;
  const int64_t grain = std::max<int64_t>(1, tasks / (int64_t(threads()) * 4));
  runner_.parallel(tasks, grain, [&](int64_t b, int64_t e) {
    size_t seg = size_t(std::upper_bound(task_starts_.begin(), task_starts_.end(), b) - task_starts_.begin()) - 1;
    for (int64_t i = b; i < e; ++i) {
      while (i >= task_starts_[seg + 1]) ++seg;
      const int64_t local = i - task_starts_[seg];
      attention_task(segments[seg], kv, shape, local / shape.n_heads * tile, int(local % shape.n_heads), tiled);
    }
  });
}

void CpuBackend::add(float* x, const float* y, int64_t count) {
  for (int64_t i = 0; i < count; ++i) x[i] += y[i];
}

void CpuBackend::get_row(const MatrixView& w, int64_t row, float* out) {
  if (is_x8(w.type)) return dequantize_row_x8(w, row, out);
  if (w.type == DType::kF32x16) return f32_panel_row(w, row, out);
  if (w.type == DType::kBF16x16) return bf16_panel_row(w, row, out);
  const char* base = static_cast<const char*>(w.data);
  dequantize_row(w.type, base + row * dtype_row_bytes(w.type, w.cols), out, w.cols);
}

}  // namespace sluice::kernels
