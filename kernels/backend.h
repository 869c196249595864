// KernelBackend: the device-neutral set of operations a transformer forward pass needs.
//
// Contract:
// - All pointers are device pointers of the backend that receives them (host memory for the
//   CPU backend, device memory for a future CUDA backend); the backend never owns them.
// - Matrices are row-major: `rows` output features, each row `cols` input features stored in
//   `type`'s GGUF block layout (kernels/quant_blocks.h spells the blocks out once).
// - Keys and values live in fixed-size blocks of `block_size` positions addressed through a
//   block table (the paged layout the serving engine shares): position p of a sequence lives in
//   block table[p / block_size], slot p % block_size.
// - A backend instance may be used by one thread at a time; it parallelises internally.
// - Memory for its operands comes from the backend (allocate; BackendBuffer in
//   kernels/backend_buffer.h) and is filled and read through it (copy_to_backend,
//   copy_to_host), so code above kernels/ runs unchanged on host and device memory. A
//   host-memory backend (the CPU's) takes host pointers from anywhere.
// - Sampling (stage_sampling / sample_staged) follows kernels/token_sampling.h's rule, so a
//   device picks tokens where the logits are and only the ids cross to the host.
// - A device backend may record a sequence of operations (record) and replay it: decode steps
//   then read their changing inputs from backend memory (the *_at operations, TokenPlaces).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <new>
#include <vector>

#include "kernels/token_sampling.h"

namespace sluice::kernels {

// GGML type ids, so a GGUF tensor's type maps onto this enum without a table.
// kQ8_0x8 and kQ4_0x8 are not GGML types and never in a file: Q8_0 and Q4_0 with rows
// interleaved in groups of 8, the layouts the CPU backend's AVX2 integer kernels run fastest on
// (kernels/cpu/quant_x8.h). A backend makes them from kQ8_0/kQ4_0 at load; rows must be a
// multiple of 8. kF32x16 is likewise a CPU layout of kF32: rows in panels of 16, column-major
// within a panel (kernels/cpu/f32_panels.h); rows must be a multiple of 16. kBF16x16 is kF32
// rounded to bfloat16 in the same panels, column pairs interleaved, for CPUs with AVX-512 BF16
// (kernels/cpu/bf16_panels.h; opt-in, SLUICE_F32_LAYOUT=bf16); columns must be even.
enum class DType : uint32_t {
  kF32 = 0, kF16 = 1, kQ4_0 = 2, kQ8_0 = 8, kF32x16 = 0x10000, kQ4_0x8 = 0x10002, kQ8_0x8 = 0x10008,
  kBF16x16 = 0x10010
};

struct MatrixView {
  DType type = DType::kF32;
  const void* data = nullptr;
  int64_t rows = 0;
  int64_t cols = 0;
};

// One layer's key and value pools. Values: block b, slot s, feature f at
// (b*block_size + s)*kv_dim + f. Keys are stored transposed within a block, feature-major:
// (b*kv_dim + f)*block_size + s, so one query's scores against a block are block_size-wide
// vector operations. Elements are `type`: kF32 (float) or kF16 (IEEE half, written rounded to
// nearest even; half the bytes for attention to read). Only kv_store and attention touch the
// layout.
struct KvLayerView {
  void* k = nullptr;
  void* v = nullptr;
  int block_size = 0;
  int kv_dim = 0;  // n_kv_heads * head_dim
  DType type = DType::kF32;
};

struct AttentionShape {
  int n_heads = 0;
  int n_kv_heads = 0;  // n_heads % n_kv_heads == 0 (grouped-query attention)
  int head_dim = 0;
};

// One sequence's part of a batched attention call: n query tokens at positions pos0.., q and
// out n x (n_heads*head_dim), keys and values through its block table.
struct AttentionSegment {
  const float* q = nullptr;
  const int32_t* block_table = nullptr;
  int64_t pos0 = 0;
  int64_t n = 0;
  float* out = nullptr;
};

// One token per sequence, in backend memory (a decode step a device backend can record): token i
// is at positions[i], its sequence's block table at tables + i * table_stride. A negative
// position marks a padding row, which rope_at and kv_store_at leave alone and attention_at
// answers with zeros.
struct TokenPlaces {
  const int32_t* positions = nullptr;
  const int32_t* tables = nullptr;
  int64_t table_stride = 0;
  int64_t n = 0;
};

// A recorded sequence of a backend's operations (a CUDA graph on the GPU); replay() queues them
// again, reading their operands from the same addresses.
class BackendRecording {
 public:
  virtual ~BackendRecording() = default;
  virtual void replay() = 0;
};

class KernelBackend {
 public:
  virtual ~KernelBackend() = default;

  // y[t][r] = sum_c W[r][c] * x[t][c] for n tokens (y is n x rows, x is n x cols).
  virtual void matmul(const MatrixView& w, const float* x, int64_t n, float* y) = 0;
  // matmul() of several matrices with the same cols on one input x: y[i] = x W[i]^T (n x
  // ws[i].rows each), as one launch. Same results as one matmul() call per matrix.
  virtual void matmul_shared_input(const MatrixView* ws, size_t count, const float* x, int64_t n, float* const* ys) {
    for (size_t i = 0; i < count; ++i) matmul(ws[i], x, n, ys[i]);
  }
  // out[t] = x[t] / rms(x[t]) * weight, for n rows of `dim` (out may equal x).
  virtual void rms_norm(const float* x, const float* weight, int64_t n, int64_t dim, float eps,
                        float* out) = 0;
  // Rotary embedding on adjacent pairs (llama's "normal" rope) of the first n_rot features
  // of each head, for n tokens at positions pos0, pos0+1, ...; x is n x (n_heads*head_dim).
  virtual void rope(float* x, int64_t n, int n_heads, int head_dim, int n_rot, int64_t pos0,
                    float freq_base) = 0;
  // gate[i] = silu(gate[i]) * up[i]
  virtual void swiglu(float* gate, const float* up, int64_t count) = 0;
  // Writes n tokens' k and v rows (n x kv_dim each) at positions pos0.. through the table.
  virtual void kv_store(const KvLayerView& kv, const int32_t* block_table, int64_t pos0,
                        int64_t n, const float* k, const float* v) = 0;
  // Causal attention for n query tokens at positions pos0..pos0+n-1: token t attends to
  // positions 0..pos0+t. q and out are n x (n_heads*head_dim).
  virtual void attention(const float* q, const KvLayerView& kv, const int32_t* block_table,
                         int64_t pos0, int64_t n, const AttentionShape& shape, float* out) = 0;
  // attention() for several sequences of one layer at once (a continuous-batching step), with
  // the same results; a backend runs them as one parallel launch. Segments must not write
  // each other's inputs.
  virtual void attention_batch(const KvLayerView& kv, const AttentionSegment* segments, size_t count,
                               const AttentionShape& shape) {
    for (size_t i = 0; i < count; ++i)
      if (segments[i].n > 0)
        attention(segments[i].q, kv, segments[i].block_table, segments[i].pos0, segments[i].n, shape, segments[i].out);
  }
  // x[i] += y[i]
  virtual void add(float* x, const float* y, int64_t count) = 0;
  // Writes row `row` of w as float (embedding lookup).
  virtual void get_row(const MatrixView& w, int64_t row, float* out) = 0;
  // get_row for n rows at once, out n x w.cols; the row ids are host memory. A device backend
  // makes it one launch instead of one per row.
  virtual void get_rows(const MatrixView& w, const int32_t* rows, int64_t n, float* out) {
    for (int64_t i = 0; i < n; ++i) get_row(w, rows[i], out + i * w.cols);
  }

  // Decode-step forms of get_rows, rope, kv_store and attention whose per-step inputs (token ids,
  // positions, block tables) are read from backend memory, so a recording of them stays valid
  // when the inputs change. The defaults run the operations above token by token and suit a
  // host-memory backend only; a device backend overrides all four.
  virtual void get_rows_at(const MatrixView& w, const int32_t* rows, int64_t n, float* out) { get_rows(w, rows, n, out); }
  virtual void rope_at(float* x, const TokenPlaces& at, int n_heads, int head_dim, int n_rot, float freq_base) {
    for (int64_t i = 0; i < at.n; ++i)
      if (at.positions[i] >= 0) rope(x + i * n_heads * head_dim, 1, n_heads, head_dim, n_rot, at.positions[i], freq_base);
  }
  virtual void kv_store_at(const KvLayerView& kv, const TokenPlaces& at, const float* k, const float* v) {
    for (int64_t i = 0; i < at.n; ++i)
      if (at.positions[i] >= 0)
        kv_store(kv, at.tables + i * at.table_stride, at.positions[i], 1, k + i * kv.kv_dim, v + i * kv.kv_dim);
  }
  virtual void attention_at(const KvLayerView& kv, const TokenPlaces& at, const float* q, const AttentionShape& shape,
                            float* out) {
    const int64_t width = int64_t(shape.n_heads) * shape.head_dim;
    std::vector<AttentionSegment> segments;
    for (int64_t i = 0; i < at.n; ++i) {
      if (at.positions[i] >= 0)
        segments.push_back({q + i * width, at.tables + i * at.table_stride, at.positions[i], 1, out + i * width});
      else
        std::memset(out + i * width, 0, size_t(width) * sizeof(float));
    }
    attention_batch(kv, segments.data(), segments.size(), shape);
  }

  // Sampling (kernels/token_sampling.h's rule), in two halves so that a recorded step can end
  // with it: stage_sampling takes `rows` rows' parameters (host memory, penalties included) into
  // the backend, outside any recording; sample_staged then picks one token per row of `logits`
  // (rows x vocab, backend memory, modified by the penalties) into `tokens` (backend memory).
  // `greedy_only` says every staged row has temperature <= 0 (the backend may then skip the
  // sort); a recording of sample_staged is valid for stagings of the same row count and kind.
  // On a device only the ids then cross to the host. A device sums in another order than the
  // host (see token_sampling.h).
  virtual void stage_sampling(const TokenSampling* params, int64_t rows) {
    staged_sampling_.assign(params, params + rows);
    staged_penalties_.clear();
    for (const TokenSampling& p : staged_sampling_)
      staged_penalties_.emplace_back(p.penalties, p.penalties + p.penalty_count);
    for (size_t i = 0; i < staged_sampling_.size(); ++i) staged_sampling_[i].penalties = staged_penalties_[i].data();
  }
  virtual void sample_staged(float* logits, int64_t rows, int64_t vocab, bool greedy_only, int32_t* tokens) {
    (void)greedy_only;
    for (int64_t i = 0; i < rows && size_t(i) < staged_sampling_.size(); ++i)
      tokens[i] = sample_token(logits + i * vocab, vocab, staged_sampling_[size_t(i)], sampling_scratch_);
  }
  // Recording. record() returns what `ops` queues, for replay, or nullptr when this backend does
  // not record (can_record() false; the CPU's operations run when called, so a replay would
  // save nothing).
  // While recording, operations are queued into the recording instead of run, so whatever must
  // differ between replays (token ids, positions, block tables, sampling parameters) has to be
  // read from backend memory staged before each replay: the *_at operations and sample_staged
  // read theirs so. Nothing else may be called meanwhile: no allocate, copy or stage_sampling.
  // scratch_epoch() changes whenever the backend replaced internal scratch memory a recording
  // may address; a recording made under another epoch must be discarded, never replayed.
  virtual bool can_record() const { return false; }
  virtual std::unique_ptr<BackendRecording> record(const std::function<void()>& ops) {
    (void)ops;
    return nullptr;
  }
  virtual uint64_t scratch_epoch() const { return 0; }

  // Host threads. Runs fn on the calling thread inside the oneTBB arena of this backend's host
  // threads and returns true, or returns false without running it where the backend has none
  // (the default; a device backend). fn's own oneTBB loops then share the kernels' threads, and
  // the operations fn calls on this thread run in that arena without switching arenas (a host
  // caller's row work between products, as the sentence encoder's pass).
  virtual bool run_on_host_threads(const std::function<void()>& fn) {
    (void)fn;
    return false;
  }

  // Operand memory. The defaults are host memory; a device backend overrides all of them.
  // True when operands may be any host memory (no copies needed).
  virtual bool host_memory() const { return true; }
  // `bytes` of operand memory, 64-byte aligned, uninitialised; throws std::bad_alloc or
  // std::runtime_error when none is left.
  virtual void* allocate(size_t bytes) { return ::operator new(bytes, std::align_val_t(64)); }
  virtual void deallocate(void* p) noexcept { ::operator delete(p, std::align_val_t(64)); }
  // Copies ordered with the operations: into backend memory from the host, out of it to the
  // host (returns when the bytes are there), and within it.
  virtual void copy_to_backend(void* dst, const void* host_src, size_t bytes) { std::memcpy(dst, host_src, bytes); }
  virtual void copy_to_host(void* host_dst, const void* src, size_t bytes) { std::memcpy(host_dst, src, bytes); }
  virtual void copy_within(void* dst, const void* src, size_t bytes) { std::memcpy(dst, src, bytes); }

 private:
  // The host defaults' staged sampling parameters (deep copies, so the caller's may change).
  std::vector<TokenSampling> staged_sampling_;
  std::vector<std::vector<TokenPenalty>> staged_penalties_;
  std::vector<std::pair<float, int32_t>> sampling_scratch_;
};

}  // namespace sluice::kernels
