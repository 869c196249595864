// Matrix products y = x W^T for every weight type, with dequantisation fused into the dot
// products. For Q8_0/Q4_0 weights the activations are first quantised to Q8_0 blocks (as
// llama.cpp does) so the inner loop is an integer dot product (AVX-512 VNNI where present).
//
// MatmulRunner owns the scratch for quantised activations and the thread arena; one runner
// serves one caller thread at a time. The free function is for tests and one-off calls.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "kernels/backend.h"
#include "kernels/cpu/cpu_features.h"

namespace sluice::kernels {

// Activations prepared once for the kernels of a run, n rows of `cols`: for quantised weights
// quantised to Q8_0 blocks, qs (n*cols), per-block scale d and per-block -8 * sum(qs) (the Q4_0
// offset correction); for BF16 panels rounded to bfloat16, bf16 (n*cols, bf16_panels.h).
struct Q8Activations {
  int64_t n = 0, cols = 0;
  std::vector<int8_t> qs;
  std::vector<float> d;
  std::vector<int32_t> neg8sum;
  std::vector<uint16_t> bf16;
  void quantize(const float* x, int64_t n_rows, int64_t n_cols, Isa isa);
  void round_bf16(const float* x, int64_t n_rows, int64_t n_cols, Isa isa);
};

class MatmulRunner {
 public:
  static constexpr size_t kMaxSharedInput = 8;  // matrices per run_shared_input call
  // threads <= 1 runs on the caller's thread; otherwise inside a oneTBB arena of that size.
  MatmulRunner(int threads, Isa isa);
  ~MatmulRunner();
  MatmulRunner(const MatmulRunner&) = delete;
  MatmulRunner& operator=(const MatmulRunner&) = delete;

  // y (n x w.rows) = x (n x w.cols) W^T. Quantised types need w.cols % 32 == 0.
  void run(const MatrixView& w, const float* x, int64_t n, float* y);
  // run() for count matrices of one width on the same x: the activations are quantised once
  // and every matrix's rows are split across the threads in one launch (matrices of different
  // types, e.g. one in F32 panels and one not, run one after another). Results are
  // bit-identical to run() per matrix.
  void run_shared_input(const MatrixView* ws, size_t count, const float* x, int64_t n, float* const* ys);
  // How parallel() hands out its chunks. kStatic: a few per thread, fixed in advance (no
  // stealing: at decoding sizes a chunk is microseconds and stealing costs more than it
  // saves). kDynamic: more and smaller chunks taken as threads come free, for calls whose
  // chunks are long enough that two cores of different speed would otherwise wait on each
  // other (this machine's two vCPUs differed by 12% in one run).
  enum class Split { kStatic, kDynamic };
  // Runs fn(begin, end) over [0, count) split across the arena's threads (grain: min chunk).
  template <class Fn>
  void parallel(int64_t count, int64_t grain, Fn&& fn, Split split = Split::kStatic);
  // Matrix products of at least this many tokens split dynamically.
  static constexpr int64_t kDynamicSplitTokens = 64;

  // Runs fn on the calling thread inside the runner's arena (one of `threads` threads, one
  // for a single-threaded runner): fn's own oneTBB loops get the runner's threads, and runs
  // fn starts on this thread stay in the arena (oneTBB calls a nested execute() of the arena a
  // thread is already in directly).
  void execute(const std::function<void()>& fn);

  int threads() const { return threads_; }
  Isa isa() const { return isa_; }

 private:
  void parallel_impl(int64_t count, int64_t grain, Split split, void (*call)(void*, int64_t, int64_t), void* ctx);
  int threads_;
  Isa isa_;
  struct Arena;  // a oneTBB task_arena, kept out of this header
  std::unique_ptr<Arena> arena_;
  Q8Activations acts_;
};

template <class Fn>
void MatmulRunner::parallel(int64_t count, int64_t grain, Fn&& fn, Split split) {
  parallel_impl(count, grain, split,
                [](void* ctx, int64_t b, int64_t e) { (*static_cast<Fn*>(ctx))(b, e); }, &fn);
}

// One-shot matmul on the given ISA, single-threaded (tests, tools).
void matmul(const MatrixView& w, const float* x, int64_t n, float* y, Isa isa);

}  // namespace sluice::kernels
