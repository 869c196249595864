#include "kernels/cuda/cuda_weights.h"

#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/device_memory.h"
#include "kernels/quant_blocks.h"

namespace sluice::kernels {
namespace {

class DeviceWeights final : public PreparedWeights {
 public:
  size_t matrices() const override { return matrices_; }
  size_t bytes() const override { return bytes_; }

  // The device copy of `bytes` at `host`, made on first sight.
  void* copy_of(const void* host, size_t bytes) {
    auto it = copies_.find(host);
    if (it != copies_.end()) return it->second;
    buffers_.emplace_back(bytes);
    void* dev = buffers_.back().data();
    CUDA_CHECK(cudaMemcpy(dev, host, bytes, cudaMemcpyHostToDevice));
    copies_.emplace(host, dev);
    bytes_ += bytes;
    return dev;
  }
  size_t matrices_ = 0;

 private:
  std::vector<DeviceBuffer> buffers_;
  std::unordered_map<const void*, void*> copies_;
  size_t bytes_ = 0;
};

}  // namespace

std::unique_ptr<PreparedWeights> upload_cuda_weights(MatrixView* const* views, size_t count,
                                                     const WeightVector* vectors, size_t vector_count) {
  auto weights = std::make_unique<DeviceWeights>();
  for (size_t i = 0; i < count; ++i) {
    MatrixView& v = *views[i];
    if (v.type != DType::kF32 && v.type != DType::kF16 && v.type != DType::kQ8_0 && v.type != DType::kQ4_0)
      throw std::invalid_argument(std::string("cuda weights: matrix type ") + dtype_name(v.type) +
                                  " is a CPU layout; load the model for the CUDA backend from its file");
    v.data = weights->copy_of(v.data, size_t(dtype_row_bytes(v.type, v.cols) * v.rows));
    ++weights->matrices_;
  }
  for (size_t i = 0; i < vector_count; ++i)
    *vectors[i].data = static_cast<const float*>(weights->copy_of(*vectors[i].data, size_t(vectors[i].length) * 4));
  return weights;
}

}  // namespace sluice::kernels
