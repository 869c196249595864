#include "kernels/cuda/cuda_backend.h"

#include <algorithm>
#include <climits>
#include <stdexcept>
#include <string>
#include <vector>

#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/cuda_kernels.h"
#include "kernels/quant_blocks.h"

namespace sluice::kernels {

using cuda_detail::AttentionTask;

struct CudaBackend::Impl {
  cudaStream_t stream = nullptr;
  // Scratch grown on demand and kept: Q8_0 activations (int8 values, float scales), half
  // activations for the tensor cores, one
  // launch's attention segments, one lookup's row ids, and the staged sampling rows with the
  // sort's keys and storage. Replacing a buffer frees the old one, which cudaFree orders after
  // every kernel already queued; during a capture the old one is kept until the capture ends.
  DeviceBuffer q8_values, q8_scales, half_values, attention_tasks, row_ids;
  DeviceBuffer sampling_rows, sampling_penalties, sample_keys, sample_sorted, sample_offsets, sample_temp;
  std::vector<AttentionTask> host_tasks;
  std::vector<cuda_detail::DeviceSampling> host_sampling;
  std::vector<TokenPenalty> host_penalties;
  int64_t staged_rows = 0;
  uint64_t epoch = 0;
  bool capturing = false;
  std::vector<DeviceBuffer> retired;  // replaced while capturing

  // The stream, with this backend's device made current for the calling thread (the runtime's
  // current device is per thread, and a backend may be called from a thread other than its
  // maker's).
  cudaStream_t on(int device) {
    CUDA_CHECK(cudaSetDevice(device));
    return stream;
  }

  // Grows `buffer` on `device` (DeviceBuffer allocates on the current device).
  void ensure(int device, DeviceBuffer& buffer, size_t bytes) {
    if (buffer.bytes() >= bytes) return;
    on(device);
    DeviceBuffer grown(bytes + bytes / 4);
    if (capturing) retired.push_back(std::move(buffer));  // cudaFree may not run inside a capture
    buffer = std::move(grown);
    ++epoch;
  }
};

CudaBackend::CudaBackend(int device) : device_(device), impl_(std::make_unique<Impl>()) {
  const int count = cuda_device_count();
  if (count == 0) throw std::runtime_error("cuda: no usable CUDA device (" + cuda_unavailable_reason() + ")");
  if (device < 0 || device >= count)
    throw std::runtime_error("cuda: device " + std::to_string(device) + " does not exist (" + std::to_string(count) +
                             " present)");
  CUDA_CHECK(cudaSetDevice(device));
  CUDA_CHECK(cudaStreamCreateWithFlags(&impl_->stream, cudaStreamNonBlocking));
}

CudaBackend::~CudaBackend() {
  if (impl_ && impl_->stream) {
    cudaSetDevice(device_);
    cudaStreamSynchronize(impl_->stream);
    cudaStreamDestroy(impl_->stream);
  }
}

namespace {

bool is_quantized(DType t) { return t == DType::kQ8_0 || t == DType::kQ4_0; }

void check_matrix(const MatrixView& w, const char* op) {
  const bool supported = w.type == DType::kF32 || w.type == DType::kF16 || is_quantized(w.type);
  if (!supported)
    throw std::invalid_argument(std::string("cuda ") + op + ": weight type " + dtype_name(w.type) +
                                " is a CPU layout; the CUDA backend reads F32, F16, Q8_0 and Q4_0 rows");
  if (is_quantized(w.type) && w.cols % kQuantBlock != 0)
    throw std::invalid_argument(std::string("cuda ") + op + ": " + std::to_string(w.cols) +
                                " columns is not a whole number of 32-element blocks");
}

}  // namespace

void CudaBackend::matmul(const MatrixView& w, const float* x, int64_t n, float* y) {
  float* const ys[1] = {y};
  matmul_shared_input(&w, 1, x, n, ys);
}

// The activations are quantised once for every quantised matrix that shares them.
void CudaBackend::matmul_shared_input(const MatrixView* ws, size_t count, const float* x, int64_t n,
                                      float* const* ys) {
  bool quantized_input = false;
  for (size_t i = 0; i < count; ++i) {
    check_matrix(ws[i], "matmul");
    if (ws[i].cols != ws[0].cols) throw std::invalid_argument("cuda matmul_shared_input: matrices of different widths");
    quantized_input |= is_quantized(ws[i].type);
  }
  if (count == 0 || n <= 0) return;
  const int64_t cols = ws[0].cols;
  if (quantized_input) {
    impl_->ensure(device_, impl_->q8_values, size_t(n * cols));
    impl_->ensure(device_, impl_->q8_scales, size_t(n * (cols / kQuantBlock)) * sizeof(float));
    cuda_detail::launch_quantize_q8(x, n, cols, impl_->q8_values.as<int8_t>(), impl_->q8_scales.as<float>(),
                                    impl_->on(device_));
  }
  // F16 matrices on the tensor cores share one half copy of the activations.
  bool half_input_ready = false;
  const int64_t n_pad = (n + 15) / 16 * 16;
  for (size_t i = 0; i < count; ++i) {
    if (is_quantized(ws[i].type)) {
      cuda_detail::launch_matmul_quant(ws[i], impl_->q8_values.as<int8_t>(), impl_->q8_scales.as<float>(), n, ys[i],
                                       impl_->on(device_));
    } else if (cuda_detail::tensor_core_eligible(ws[i], x, n, ys[i])) {
      if (!half_input_ready) {
        impl_->ensure(device_, impl_->half_values, size_t(n_pad * cols) * 2);
        cuda_detail::launch_to_half(x, n, n_pad, cols, impl_->half_values.data(), impl_->on(device_));
        half_input_ready = true;
      }
      cuda_detail::launch_matmul_f16_tensor(ws[i], impl_->half_values.data(), n, ys[i], impl_->on(device_));
    } else {
      cuda_detail::launch_matmul_float(ws[i], x, n, ys[i], impl_->on(device_));
    }
  }
}

void CudaBackend::rms_norm(const float* x, const float* weight, int64_t n, int64_t dim, float eps, float* out) {
  cuda_detail::launch_rms_norm(x, weight, n, dim, eps, out, impl_->on(device_));
}

void CudaBackend::rope(float* x, int64_t n, int n_heads, int head_dim, int n_rot, int64_t pos0, float freq_base) {
  cuda_detail::launch_rope(x, n, n_heads, head_dim, n_rot, pos0, freq_base, impl_->on(device_));
}

void CudaBackend::swiglu(float* gate, const float* up, int64_t count) {
  cuda_detail::launch_swiglu(gate, up, count, impl_->on(device_));
}

void CudaBackend::kv_store(const KvLayerView& kv, const int32_t* block_table, int64_t pos0, int64_t n, const float* k,
                           const float* v) {
  if (kv.type != DType::kF32 && kv.type != DType::kF16)
    throw std::invalid_argument(std::string("cuda kv_store: KV type ") + dtype_name(kv.type) + " (F32 or F16 only)");
  cuda_detail::launch_kv_store(kv, block_table, pos0, n, k, v, impl_->on(device_));
}

void CudaBackend::attention(const float* q, const KvLayerView& kv, const int32_t* block_table, int64_t pos0,
                            int64_t n, const AttentionShape& shape, float* out) {
  const AttentionSegment s{q, block_table, pos0, n, out};
  attention_batch(kv, &s, 1, shape);
}

void CudaBackend::attention_batch(const KvLayerView& kv, const AttentionSegment* segments, size_t count,
                                  const AttentionShape& shape) {
  if (shape.head_dim <= 0 || shape.head_dim > cuda_detail::kAttentionMaxHeadDim)
    throw std::invalid_argument("cuda attention: head_dim " + std::to_string(shape.head_dim) + " outside 1.." +
                                std::to_string(cuda_detail::kAttentionMaxHeadDim));
  if (shape.n_kv_heads <= 0 || shape.n_heads % shape.n_kv_heads != 0)
    throw std::invalid_argument("cuda attention: n_heads is not a multiple of n_kv_heads");
  if (kv.type != DType::kF32 && kv.type != DType::kF16)
    throw std::invalid_argument(std::string("cuda attention: KV type ") + dtype_name(kv.type) + " (F32 or F16 only)");
  auto& tasks = impl_->host_tasks;
  tasks.clear();
  int64_t total = 0;
  for (size_t i = 0; i < count; ++i) {
    const AttentionSegment& s = segments[i];
    if (s.n <= 0) continue;  // empty segments own no token of the launch
    tasks.push_back({s.q, s.block_table, s.pos0, s.n, s.out, total});
    total += s.n;
  }
  if (tasks.empty()) return;
  const size_t bytes = tasks.size() * sizeof(AttentionTask);
  impl_->ensure(device_, impl_->attention_tasks, bytes);
  // From pageable memory the copy has taken the bytes when it returns, so `tasks` may be reused.
  CUDA_CHECK(cudaMemcpyAsync(impl_->attention_tasks.data(), tasks.data(), bytes, cudaMemcpyHostToDevice, impl_->on(device_)));
  cuda_detail::launch_attention(kv, impl_->attention_tasks.as<AttentionTask>(), int(tasks.size()), total, shape,
                                impl_->on(device_));
}

void CudaBackend::add(float* x, const float* y, int64_t count) { cuda_detail::launch_add(x, y, count, impl_->on(device_)); }

void CudaBackend::get_row(const MatrixView& w, int64_t row, float* out) {
  const int32_t id = int32_t(row);
  if (row != id) throw std::out_of_range("cuda get_row: row " + std::to_string(row) + " of " + std::to_string(w.rows));
  get_rows(w, &id, 1, out);
}

// The ids go to the device in one copy, then one launch for every row.
void CudaBackend::get_rows(const MatrixView& w, const int32_t* rows, int64_t n, float* out) {
  check_matrix(w, "get_rows");
  for (int64_t i = 0; i < n; ++i)
    if (rows[i] < 0 || rows[i] >= w.rows)
      throw std::out_of_range("cuda get_rows: row " + std::to_string(rows[i]) + " of " + std::to_string(w.rows));
  if (n <= 0) return;
  impl_->ensure(device_, impl_->row_ids, size_t(n) * sizeof(int32_t));
  CUDA_CHECK(cudaMemcpyAsync(impl_->row_ids.data(), rows, size_t(n) * sizeof(int32_t), cudaMemcpyHostToDevice,
                             impl_->on(device_)));
  cuda_detail::launch_get_rows(w, impl_->row_ids.as<int32_t>(), n, out, impl_->on(device_));
}

void CudaBackend::get_rows_at(const MatrixView& w, const int32_t* rows, int64_t n, float* out) {
  check_matrix(w, "get_rows_at");
  if (n > 0) cuda_detail::launch_get_rows(w, rows, n, out, impl_->on(device_));
}

void CudaBackend::rope_at(float* x, const TokenPlaces& at, int n_heads, int head_dim, int n_rot, float freq_base) {
  cuda_detail::launch_rope_at(x, at, n_heads, head_dim, n_rot, freq_base, impl_->on(device_));
}

void CudaBackend::kv_store_at(const KvLayerView& kv, const TokenPlaces& at, const float* k, const float* v) {
  if (kv.type != DType::kF32 && kv.type != DType::kF16)
    throw std::invalid_argument(std::string("cuda kv_store_at: KV type ") + dtype_name(kv.type) + " (F32 or F16 only)");
  cuda_detail::launch_kv_store_at(kv, at, k, v, impl_->on(device_));
}

void CudaBackend::attention_at(const KvLayerView& kv, const TokenPlaces& at, const float* q,
                               const AttentionShape& shape, float* out) {
  if (shape.head_dim <= 0 || shape.head_dim > cuda_detail::kAttentionMaxHeadDim || shape.n_kv_heads <= 0 ||
      shape.n_heads % shape.n_kv_heads != 0)
    throw std::invalid_argument("cuda attention_at: unsupported shape (head_dim " + std::to_string(shape.head_dim) +
                                ", heads " + std::to_string(shape.n_heads) + "/" + std::to_string(shape.n_kv_heads) + ")");
  if (kv.type != DType::kF32 && kv.type != DType::kF16)
    throw std::invalid_argument(std::string("cuda attention_at: KV type ") + dtype_name(kv.type) + " (F32 or F16 only)");
  cuda_detail::launch_attention_at(kv, at, q, shape, out, impl_->on(device_));
}

// The rows' parameters and their penalties go to the device in two copies.
void CudaBackend::stage_sampling(const TokenSampling* params, int64_t rows) {
  auto& host = impl_->host_sampling;
  auto& penalties = impl_->host_penalties;
  host.clear();
  penalties.clear();
  for (int64_t i = 0; i < rows; ++i) {
    const TokenSampling& p = params[i];
    host.push_back({p.temperature, p.top_p, p.min_p, p.repetition_penalty, p.presence_penalty, p.frequency_penalty,
                    p.top_k, int32_t(penalties.size()), p.penalty_count, p.uniform});
    penalties.insert(penalties.end(), p.penalties, p.penalties + p.penalty_count);
  }
  impl_->staged_rows = rows;
  if (rows <= 0) return;
  // Room for 64 penalties a row before the buffer is replaced (which voids recordings).
  impl_->ensure(device_, impl_->sampling_rows, host.size() * sizeof(cuda_detail::DeviceSampling));
  impl_->ensure(device_, impl_->sampling_penalties,
                std::max(penalties.size(), size_t(rows) * 64) * sizeof(TokenPenalty));
  CUDA_CHECK(cudaMemcpyAsync(impl_->sampling_rows.data(), host.data(), host.size() * sizeof(cuda_detail::DeviceSampling),
                             cudaMemcpyHostToDevice, impl_->on(device_)));
  if (!penalties.empty())
    CUDA_CHECK(cudaMemcpyAsync(impl_->sampling_penalties.data(), penalties.data(),
                               penalties.size() * sizeof(TokenPenalty), cudaMemcpyHostToDevice, impl_->on(device_)));
}

void CudaBackend::sample_staged(float* logits, int64_t rows, int64_t vocab, bool greedy_only, int32_t* tokens) {
  if (rows > impl_->staged_rows)
    throw std::invalid_argument("cuda sample_staged: " + std::to_string(rows) + " rows but " +
                                std::to_string(impl_->staged_rows) + " staged");
  if (rows * vocab > int64_t(INT32_MAX))
    throw std::invalid_argument("cuda sample_staged: " + std::to_string(rows) + " x " + std::to_string(vocab) +
                                " logits exceed the sort's 2^31 items");
  cuda_detail::SamplingScratch scratch{};
  if (!greedy_only && rows > 0) {
    const size_t items = size_t(rows * vocab);
    impl_->ensure(device_, impl_->sample_keys, items * sizeof(uint64_t));
    impl_->ensure(device_, impl_->sample_sorted, items * sizeof(uint64_t));
    impl_->ensure(device_, impl_->sample_offsets, size_t(rows + 1) * sizeof(int32_t));
    const size_t temp = cuda_detail::sampling_sort_bytes(rows, vocab);
    impl_->ensure(device_, impl_->sample_temp, std::max<size_t>(temp, 1));
    scratch = {impl_->sample_keys.as<uint64_t>(), impl_->sample_sorted.as<uint64_t>(),
               impl_->sample_offsets.as<int32_t>(), impl_->sample_temp.data(), impl_->sample_temp.bytes()};
  }
  cuda_detail::launch_sample(logits, rows, vocab, impl_->sampling_rows.as<cuda_detail::DeviceSampling>(),
                             impl_->sampling_penalties.as<TokenPenalty>(), greedy_only, scratch, tokens,
                             impl_->on(device_));
}

namespace {

class CudaRecording final : public BackendRecording {
 public:
  CudaRecording(cudaGraphExec_t exec, cudaStream_t stream, int device) : exec_(exec), stream_(stream), device_(device) {}
  ~CudaRecording() override {
    cudaSetDevice(device_);
    cudaGraphExecDestroy(exec_);
  }
  void replay() override {
    CUDA_CHECK(cudaSetDevice(device_));
    CUDA_CHECK(cudaGraphLaunch(exec_, stream_));
  }

 private:
  cudaGraphExec_t exec_;
  cudaStream_t stream_;
  int device_;
};

}  // namespace

std::unique_ptr<BackendRecording> CudaBackend::record(const std::function<void()>& ops) {
  cudaStream_t stream = impl_->on(device_);
  CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeRelaxed));
  impl_->capturing = true;
  cudaGraph_t graph = nullptr;
  try {
    ops();
  } catch (...) {
    impl_->capturing = false;
    cudaStreamEndCapture(stream, &graph);
    if (graph) cudaGraphDestroy(graph);
    cudaGetLastError();
    impl_->retired.clear();
    throw;
  }
  impl_->capturing = false;
  CUDA_CHECK(cudaStreamEndCapture(stream, &graph));
  cudaGraphExec_t exec = nullptr;
  const cudaError_t err = cudaGraphInstantiate(&exec, graph, 0);
  cudaGraphDestroy(graph);
  impl_->retired.clear();
  CUDA_CHECK(err);
  return std::make_unique<CudaRecording>(exec, stream, device_);
}

uint64_t CudaBackend::scratch_epoch() const { return impl_->epoch; }

void* CudaBackend::allocate(size_t bytes) {
  CUDA_CHECK(cudaSetDevice(device_));
  void* p = nullptr;
  const cudaError_t err = cudaMalloc(&p, bytes);
  if (err != cudaSuccess) {
    cudaGetLastError();
    throw std::runtime_error("cuda: cannot allocate " + std::to_string(bytes) + " bytes of device memory: " +
                             cudaGetErrorString(err));
  }
  return p;
}

void CudaBackend::deallocate(void* p) noexcept {
  if (!p) return;
  cudaSetDevice(device_);
  cudaFree(p);
}

void CudaBackend::copy_to_backend(void* dst, const void* host_src, size_t bytes) {
  CUDA_CHECK(cudaMemcpyAsync(dst, host_src, bytes, cudaMemcpyHostToDevice, impl_->on(device_)));
}

void CudaBackend::copy_to_host(void* host_dst, const void* src, size_t bytes) {
  CUDA_CHECK(cudaMemcpyAsync(host_dst, src, bytes, cudaMemcpyDeviceToHost, impl_->on(device_)));
  CUDA_CHECK(cudaStreamSynchronize(impl_->stream));
}

void CudaBackend::copy_within(void* dst, const void* src, size_t bytes) {
  CUDA_CHECK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, impl_->on(device_)));
}

void CudaBackend::synchronize() { CUDA_CHECK(cudaStreamSynchronize(impl_->on(device_))); }

}  // namespace sluice::kernels
