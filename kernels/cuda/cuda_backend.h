// CudaBackend: KernelBackend (kernels/backend.h) on one NVIDIA GPU, the CUDA twin of CpuBackend.
//
// Contract:
// - Every pointer an operation receives (weights, activations, KV pools, block tables, attention
//   segments' q/out/block_table) is device memory; AttentionSegment arrays themselves are host
//   memory (the backend copies what its launch needs).
// - Operations are queued on the backend's own stream and return before the GPU finishes; they
//   run in call order. copy_to_host() waits for everything queued before it; synchronize() waits.
// - Weight types: kF32, kF16, kQ8_0, kQ4_0 in the file's row layout (the CPU-only interleaved and
//   panel layouts are refused with std::invalid_argument). Quantised products quantise the
//   activations to Q8_0 per 32-block exactly as the CPU twin does (amax / 127, round to nearest
//   even), so the integer block dots are the CPU's; only the float accumulation order differs.
//   F16 products of 16 or more tokens run on the tensor cores with the activations rounded to
//   half (cuda_matmul.cu), so they can match the CPU only within that rounding (the test allows
//   2e-3 x (1 + |y|); not yet run on a GPU); fewer tokens (decode)
//   multiply in float as the CPU does.
// - KV pools: kF32 or kF16 (IEEE half, round to nearest even, the same bits as the CPU twin).
// - Construction throws std::runtime_error when no device is usable (cuda_unavailable_reason()
//   says why); kernel launch failures throw std::runtime_error naming the kernel.
// - Decode steps record (can_record): record() captures the operations `ops` queues into a CUDA
//   graph (relaxed stream capture) and replay() launches it. Scratch that must grow while
//   recording is allocated anew and the old block kept until the capture ends; every such
//   replacement changes scratch_epoch().
// - Sampling runs on the device (cuda_sampling.cu): only the chosen ids are copied back.
// - One thread at a time, like every backend; any thread (each call makes the backend's device
//   current for the calling thread). DeviceBuffers are allocated on the calling thread's current
//   device: make them after the backend, on its thread, or call cudaSetDevice first.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "kernels/backend.h"
#include "kernels/cuda/device_memory.h"

namespace sluice::kernels {

class CudaBackend final : public KernelBackend {
 public:
  explicit CudaBackend(int device = 0);
  ~CudaBackend() override;

  void matmul(const MatrixView& w, const float* x, int64_t n, float* y) override;
  void matmul_shared_input(const MatrixView* ws, size_t count, const float* x, int64_t n, float* const* ys) override;
  void rms_norm(const float* x, const float* weight, int64_t n, int64_t dim, float eps, float* out) override;
  void rope(float* x, int64_t n, int n_heads, int head_dim, int n_rot, int64_t pos0, float freq_base) override;
  void swiglu(float* gate, const float* up, int64_t count) override;
  void kv_store(const KvLayerView& kv, const int32_t* block_table, int64_t pos0, int64_t n, const float* k,
                const float* v) override;
  void attention(const float* q, const KvLayerView& kv, const int32_t* block_table, int64_t pos0, int64_t n,
                 const AttentionShape& shape, float* out) override;
  void attention_batch(const KvLayerView& kv, const AttentionSegment* segments, size_t count,
                       const AttentionShape& shape) override;
  void add(float* x, const float* y, int64_t count) override;
  void get_row(const MatrixView& w, int64_t row, float* out) override;
  void get_rows(const MatrixView& w, const int32_t* rows, int64_t n, float* out) override;
  void get_rows_at(const MatrixView& w, const int32_t* rows, int64_t n, float* out) override;
  void rope_at(float* x, const TokenPlaces& at, int n_heads, int head_dim, int n_rot, float freq_base) override;
  void kv_store_at(const KvLayerView& kv, const TokenPlaces& at, const float* k, const float* v) override;
  void attention_at(const KvLayerView& kv, const TokenPlaces& at, const float* q, const AttentionShape& shape,
                    float* out) override;

  void stage_sampling(const TokenSampling* params, int64_t rows) override;
  void sample_staged(float* logits, int64_t rows, int64_t vocab, bool greedy_only, int32_t* tokens) override;

  bool can_record() const override { return true; }
  std::unique_ptr<BackendRecording> record(const std::function<void()>& ops) override;
  uint64_t scratch_epoch() const override;

  // Device memory (cudaMalloc on this backend's device; deallocate waits for queued work to
  // finish with it, as cudaFree does) and copies ordered with the queued kernels.
  bool host_memory() const override { return false; }
  void* allocate(size_t bytes) override;
  void deallocate(void* p) noexcept override;
  void copy_to_backend(void* dst, const void* host_src, size_t bytes) override;
  void copy_to_host(void* host_dst, const void* src, size_t bytes) override;
  void copy_within(void* dst, const void* src, size_t bytes) override;
  void synchronize();  // waits for everything queued

  int device() const { return device_; }

 private:
  struct Impl;
  int device_;
  std::unique_ptr<Impl> impl_;
};

}  // namespace sluice::kernels
