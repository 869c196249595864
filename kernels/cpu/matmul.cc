#include "kernels/cpu/matmul.h"

#include <oneapi/tbb/blocked_range.h>
#include <oneapi/tbb/parallel_for.h>
#include <oneapi/tbb/partitioner.h>
#include <oneapi/tbb/task_arena.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <vector>

#include "graph/tsan_annotations.h"  // header only: the annotations, no graph library
#include "kernels/cpu/matmul_kernels.h"
#include "kernels/cpu/bf16_panels.h"
#include "kernels/cpu/f32_panels.h"
#include "kernels/cpu/quant_x8.h"
#include "kernels/quant_blocks.h"

namespace sluice::kernels {
namespace detail {
namespace {

// Portable kernels: the reference every SIMD kernel is tested against.
void scalar_f32(const MatrixView& w, const float* x, const Q8Activations&, int64_t n, int64_t r0,
                int64_t r1, float* y) {
  const auto* wd = static_cast<const float*>(w.data);
  for (int64_t r = r0; r < r1; ++r) {
    const float* wr = wd + r * w.cols;
    for (int64_t t = 0; t < n; ++t) {
      const float* xt = x + t * w.cols;
      float s = 0;
      for (int64_t c = 0; c < w.cols; ++c) s += wr[c] * xt[c];
      y[t * w.rows + r] = s;
    }
  }
}

// F32 row panels (f32_panels.h): each result the fused multiply-add chain over the columns in
// order, as every SIMD panel kernel computes it lane by lane.
void scalar_f32x16(const MatrixView& w, const float* x, const Q8Activations&, int64_t n, int64_t r0,
                   int64_t r1, float* y) {
  const auto* wd = static_cast<const float*>(w.data);
  for (int64_t r = r0; r < r1; ++r) {
    const float* panel = wd + r / kF32PanelRows * w.cols * kF32PanelRows + r % kF32PanelRows;
    for (int64_t t = 0; t < n; ++t) {
      const float* xt = x + t * w.cols;
      float s = 0;
      for (int64_t c = 0; c < w.cols; ++c) s = std::fma(panel[c * kF32PanelRows], xt[c], s);
      y[t * w.rows + r] = s;
    }
  }
}

}  // namespace

// BF16 row panels (bf16_panels.h): the arithmetic of vdpbf16ps, which every result of the
// AVX-512 BF16 kernel is: per column pair, the odd column's product added, then the even one's,
// each product exact (two bfloat16s multiply exactly) and each sum rounded to nearest once;
// the activations as rounded (xq.bf16); a sum under FLT_MIN is flushed to zero, as the
// instruction does.
void scalar_bf16x16_rows(const MatrixView& w, const float*, const Q8Activations& xq, int64_t n, int64_t r0,
                         int64_t r1, float* y) {
  const auto* wd = static_cast<const uint16_t*>(w.data);
  const int64_t pairs = w.cols / 2;
  std::vector<float> xr(size_t(w.cols));
  for (int64_t t = 0; t < n; ++t) {
    for (int64_t c = 0; c < w.cols; ++c) xr[size_t(c)] = bf16_to_f32(xq.bf16[size_t(t * w.cols + c)]);
    for (int64_t r = r0; r < r1; ++r) {
      const uint16_t* panel = wd + (r / kBF16PanelRows * pairs * kBF16PanelRows + r % kBF16PanelRows) * 2;
      float s = 0;
      for (int64_t q = 0; q < pairs; ++q) {
        const uint16_t* pair = panel + q * kBF16PanelRows * 2;
        s = flush_denormal(std::fma(bf16_to_f32(pair[1]), xr[size_t(2 * q + 1)], s));
        s = flush_denormal(std::fma(bf16_to_f32(pair[0]), xr[size_t(2 * q)], s));
      }
      y[t * w.rows + r] = s;
    }
  }
}

void scalar_round_bf16(const float* x, int64_t count, uint16_t* out) {
  for (int64_t i = 0; i < count; ++i) out[i] = bf16_round(x[i]);
}

namespace {

void scalar_f16(const MatrixView& w, const float* x, const Q8Activations&, int64_t n, int64_t r0,
                int64_t r1, float* y) {
  const auto* wd = static_cast<const uint16_t*>(w.data);
  for (int64_t r = r0; r < r1; ++r) {
    const uint16_t* wr = wd + r * w.cols;
    for (int64_t t = 0; t < n; ++t) {
      const float* xt = x + t * w.cols;
      float s = 0;
      for (int64_t c = 0; c < w.cols; ++c) s += fp16_to_fp32(wr[c]) * xt[c];
      y[t * w.rows + r] = s;
    }
  }
}

void scalar_q8_0(const MatrixView& w, const float*, const Q8Activations& xq, int64_t n,
                 int64_t r0, int64_t r1, float* y) {
  const int64_t nb = w.cols / kQuantBlock;
  for (int64_t r = r0; r < r1; ++r) {
    const auto* b = static_cast<const BlockQ8_0*>(w.data) + r * nb;
    for (int64_t t = 0; t < n; ++t) {
      const int8_t* xs = xq.qs.data() + t * w.cols;
      const float* xd = xq.d.data() + t * nb;
      float s = 0;
      for (int64_t i = 0; i < nb; ++i) {
        int32_t acc = 0;
        for (int j = 0; j < 32; ++j) acc += int32_t(b[i].qs[j]) * xs[i * 32 + j];
        s += float(acc) * fp16_to_fp32(b[i].d) * xd[i];
      }
      y[t * w.rows + r] = s;
    }
  }
}

void scalar_q4_0(const MatrixView& w, const float*, const Q8Activations& xq, int64_t n,
                 int64_t r0, int64_t r1, float* y) {
  const int64_t nb = w.cols / kQuantBlock;
  for (int64_t r = r0; r < r1; ++r) {
    const auto* b = static_cast<const BlockQ4_0*>(w.data) + r * nb;
    for (int64_t t = 0; t < n; ++t) {
      const int8_t* xs = xq.qs.data() + t * w.cols;
      const float* xd = xq.d.data() + t * nb;
      float s = 0;
      for (int64_t i = 0; i < nb; ++i) {
        int32_t acc = 0;
        for (int j = 0; j < 16; ++j) {
          acc += ((b[i].qs[j] & 0x0f) - 8) * xs[i * 32 + j];
          acc += ((b[i].qs[j] >> 4) - 8) * xs[i * 32 + 16 + j];
        }
        s += float(acc) * fp16_to_fp32(b[i].d) * xd[i];
      }
      y[t * w.rows + r] = s;
    }
  }
}

// The arithmetic of the AVX2 kernels (matmul_x8_avx2.cc) lane for lane, so the two agree bit
// for bit: per block an exact integer dot, then acc = fma(float(dot), d_w * d_x, acc).
template <bool kQ4>
void scalar_x8(const MatrixView& w, const float*, const Q8Activations& xq, int64_t n, int64_t r0, int64_t r1, float* y) {
  const int64_t nb = w.cols / kQuantBlock;
  for (int64_t r = r0; r < r1; ++r) {
    const int64_t i = r % kX8Rows;
    for (int64_t t = 0; t < n; ++t) {
      const int8_t* xs = xq.qs.data() + t * w.cols;
      const float* xd = xq.d.data() + t * nb;
      float s = 0;
      for (int64_t j = 0; j < nb; ++j) {
        int32_t dot = 0;
        uint16_t d;
        if constexpr (kQ4) {
          const BlockQ4_0x8& b = static_cast<const BlockQ4_0x8*>(w.data)[r / kX8Rows * nb + j];
          for (int m = 0; m < 4; ++m)
            for (int e = 0; e < 4; ++e) {
              const uint8_t q = b.qs[32 * m + 4 * i + e];
              dot += ((q & 0x0f) - 8) * xs[j * 32 + 4 * m + e] + ((q >> 4) - 8) * xs[j * 32 + 16 + 4 * m + e];
            }
          d = b.d[i];
        } else {
          const BlockQ8_0x8& b = static_cast<const BlockQ8_0x8*>(w.data)[r / kX8Rows * nb + j];
          for (int m = 0; m < 8; ++m)
            for (int e = 0; e < 4; ++e) dot += int32_t(b.qs[32 * m + 4 * i + e]) * xs[j * 32 + 4 * m + e];
          d = b.d[i];
        }
        s = std::fma(float(dot), fp16_to_fp32(d) * xd[j], s);
      }
      y[t * w.rows + r] = s;
    }
  }
}

}  // namespace

void scalar_quantize_q8(const float* x, int64_t cols, int8_t* qs, float* d, int32_t* neg8sum) {
  for (int64_t i = 0; i < cols / kQuantBlock; ++i) {
    float amax = 0;
    for (int j = 0; j < 32; ++j) amax = std::max(amax, std::fabs(x[i * 32 + j]));
    const float di = amax / 127.0f;
    const float id = di != 0 ? 1.0f / di : 0.0f;
    int32_t sum = 0;
    for (int j = 0; j < 32; ++j) {
      const int q = int(std::nearbyint(x[i * 32 + j] * id));
      qs[i * 32 + j] = int8_t(q);
      sum += q;
    }
    d[i] = di;
    neg8sum[i] = -8 * sum;
  }
}

const IsaKernels& scalar_kernels() {
  static const IsaKernels k{scalar_f32,       scalar_f16,        scalar_q8_0,       scalar_q4_0,
                            scalar_x8<false>, scalar_x8<true>, scalar_quantize_q8,
                            scalar_f32x16,    scalar_bf16x16_rows, scalar_round_bf16};
  return k;
}

}  // namespace detail

namespace {
const detail::IsaKernels& kernels_for(Isa isa) {
  switch (isa) {
    case Isa::kAvx512: return detail::avx512_kernels();
    case Isa::kAvx2: return detail::avx2_kernels();
    case Isa::kScalar: break;
  }
  return detail::scalar_kernels();
}
bool is_quantized(DType t) { return t == DType::kQ8_0 || t == DType::kQ4_0 || is_x8(t); }
}  // namespace

void Q8Activations::quantize(const float* x, int64_t n_rows, int64_t n_cols, Isa isa) {
  n = n_rows;
  cols = n_cols;
  const int64_t nb = n_cols / kQuantBlock;
  // Padding of one block keeps SIMD loads of a trailing odd block inside the buffer.
  if (int64_t(qs.size()) < n * n_cols + 64) qs.resize(size_t(n * n_cols + 64));
  if (int64_t(d.size()) < n * nb + 2) d.resize(size_t(n * nb + 2));
  if (int64_t(neg8sum.size()) < n * nb + 2) neg8sum.resize(size_t(n * nb + 2));
  const auto& k = kernels_for(isa);
  for (int64_t t = 0; t < n; ++t)
    k.quantize_q8(x + t * n_cols, n_cols, qs.data() + t * n_cols, d.data() + t * nb,
                  neg8sum.data() + t * nb);
}

void Q8Activations::round_bf16(const float* x, int64_t n_rows, int64_t n_cols, Isa isa) {
  n = n_rows;
  cols = n_cols;
  if (int64_t(bf16.size()) < n * n_cols) bf16.resize(size_t(n * n_cols));
  kernels_for(isa).round_bf16(x, n * n_cols, bf16.data());
}

struct MatmulRunner::Arena {
  explicit Arena(int threads) : arena(threads) {}
  oneapi::tbb::task_arena arena;
};

MatmulRunner::MatmulRunner(int threads, Isa isa) : threads_(std::max(1, threads)), isa_(isa) {
  arena_ = std::make_unique<Arena>(threads_);  // one thread: only execute() enters it
}

MatmulRunner::~MatmulRunner() = default;

void MatmulRunner::parallel_impl(int64_t count, int64_t grain, Split split,
                                 void (*call)(void*, int64_t, int64_t), void* ctx) {
  if (count <= 0) return;
  if (threads_ == 1 || count <= grain) {
    call(ctx, 0, count);
    return;
  }
  // Chunks of at least `grain`: 4 a thread, static, or 12 a thread handed out as threads
  // come free (Split in matmul.h).
  const bool dynamic = split == Split::kDynamic;
  const int64_t chunks = std::max<int64_t>(1, std::min<int64_t>(count / grain, threads_ * (dynamic ? 12 : 4)));
  // oneTBB's hand-off of the chunks is invisible to ThreadSanitizer (the library is not
  // instrumented): the caller's inputs happen before every chunk, every chunk before the return.
  SLUICE_HANDOFF_RELEASE(ctx);
  arena_->arena.execute([&] {
    const auto body = [=](const oneapi::tbb::blocked_range<int64_t>& r) {
      // This body and its range are copies inside oneTBB's task object: read them as
      // oneTBB's memory, then order against the caller through ctx.
      SLUICE_TBB_OWNED_BEGIN();
      void* const task_ctx = ctx;
      const auto task_call = call;
      const int64_t n = count, k = chunks, c0 = r.begin(), c1 = r.end();
      SLUICE_TBB_OWNED_END();
      SLUICE_HANDOFF_ACQUIRE(task_ctx);
      for (int64_t c = c0; c != c1; ++c) task_call(task_ctx, n * c / k, n * (c + 1) / k);
      SLUICE_HANDOFF_RELEASE(task_ctx);
    };
    const oneapi::tbb::blocked_range<int64_t> all(0, chunks, 1);
    if (dynamic) {
      oneapi::tbb::parallel_for(all, body, oneapi::tbb::simple_partitioner{});
    } else {
      oneapi::tbb::parallel_for(all, body, oneapi::tbb::static_partitioner{});
    }
  });
  SLUICE_HANDOFF_ACQUIRE(ctx);
}

void MatmulRunner::execute(const std::function<void()>& fn) { arena_->arena.execute(fn); }

void MatmulRunner::run(const MatrixView& w, const float* x, int64_t n, float* y) {
  run_shared_input(&w, 1, x, n, &y);
}

void MatmulRunner::run_shared_input(const MatrixView* ws, size_t count, const float* x, int64_t n, float* const* ys) {
  if (count == 0) return;
  const auto& k = kernels_for(isa_);
  for (size_t i = 1; i < count; ++i) {
    if (ws[i].cols != ws[0].cols) throw std::invalid_argument("run_shared_input: matrices of different widths");
    if (ws[i].type != ws[0].type) {  // e.g. one of them laid out in panels and one not: one at a time
      for (size_t j = 0; j < count; ++j) run_shared_input(ws + j, 1, x, n, ys + j);
      return;
    }
  }
  if (is_quantized(ws[0].type)) acts_.quantize(x, n, ws[0].cols, isa_);
  if (ws[0].type == DType::kBF16x16) acts_.round_bf16(x, n, ws[0].cols, isa_);
  const detail::RowsKernel kernel = detail::pick(k, ws[0].type);
  // Row ranges in multiples of 4 so the SIMD kernels run their widest tile; of 8 for the
  // interleaved types and 16 for F32 and BF16 panels, whose groups cannot be split. Units are numbered
  // matrix after matrix.
  const bool panels = ws[0].type == DType::kF32x16 || ws[0].type == DType::kBF16x16;
  const int64_t unit = is_x8(ws[0].type) ? kX8Rows : panels ? kF32PanelRows : 4;
  int64_t starts[kMaxSharedInput + 1];
  if (count > kMaxSharedInput) throw std::invalid_argument("run_shared_input: too many matrices");
  int64_t units = 0;
  for (size_t i = 0; i < count; ++i) {
    starts[i] = units;
    units += (ws[i].rows + unit - 1) / unit;
  }
  starts[count] = units;
  const Split split = n >= kDynamicSplitTokens ? Split::kDynamic : Split::kStatic;
  parallel(units, 4, [&](int64_t g0, int64_t g1) {
    size_t i = 0;
    while (g0 >= starts[i + 1]) ++i;
    for (; i < count && starts[i] < g1; ++i) {
      const int64_t b = std::max(g0, starts[i]) - starts[i], e = std::min(g1, starts[i + 1]) - starts[i];
      kernel(ws[i], x, acts_, n, b * unit, std::min(ws[i].rows, e * unit), ys[i]);
    }
  }, split);
}

void matmul(const MatrixView& w, const float* x, int64_t n, float* y, Isa isa) {
  MatmulRunner runner(1, isa);
  runner.run(w, x, n, y);
}

}  // namespace sluice::kernels
