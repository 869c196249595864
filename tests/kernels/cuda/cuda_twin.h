// CudaTwin: the fixture of the CUDA-against-CPU tests. A CUDA backend when a device is there;
// otherwise the test skips by name, or fails under SLUICE_REQUIRE_GPU=1 (scripts/gpu-check), so
// a GPU machine that cannot run the tests is never read as a pass. Device buffers made through
// it live as long as the fixture.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <memory>
#include <vector>

#include "kernels/backend_buffer.h"
#include "kernels/cpu/cpu_backend.h"
#include "kernels/cuda/cuda_backend.h"
#include "kernels/cuda/device_memory.h"

namespace sluice::kernels {

class CudaTwin : public ::testing::Test {
 protected:
  void SetUp() override {
    if (cuda_device_count() > 0) {
      gpu_ = std::make_unique<CudaBackend>();
      return;
    }
    if (std::getenv("SLUICE_REQUIRE_GPU")) FAIL() << "SLUICE_REQUIRE_GPU is set but " << cuda_unavailable_reason();
    GTEST_SKIP() << "no CUDA device (" << cuda_unavailable_reason() << "): the CUDA twin is compiled, not run";
  }

  // A device copy of host bytes; the buffer lives as long as the fixture.
  void* to_device(const void* host, size_t bytes) {
    buffers_.emplace_back(*gpu_, std::max<size_t>(bytes, 1));
    gpu_->copy_to_backend(buffers_.back().data(), host, bytes);
    return buffers_.back().data();
  }
  template <typename T>
  T* to_device(const std::vector<T>& v) {
    return static_cast<T*>(to_device(v.data(), v.size() * sizeof(T)));
  }
  float* device_floats(size_t n) {
    buffers_.emplace_back(*gpu_, n * sizeof(float));
    return buffers_.back().floats();
  }
  std::vector<float> to_host(const float* device, size_t n) {
    std::vector<float> out(n);
    gpu_->copy_to_host(out.data(), device, n * sizeof(float));
    return out;
  }

  std::unique_ptr<CudaBackend> gpu_;
  CpuBackend cpu_{1, Isa::kScalar};
  std::vector<BackendBuffer> buffers_;  // declared after gpu_: freed before it
};


}  // namespace sluice::kernels
