// CUDA_CHECK(call): turns a CUDA runtime error into std::runtime_error naming the call, the file
// and line, and the runtime's message. Internal to kernels/cuda/.
#pragma once

#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

namespace sluice::kernels::cuda_detail {

[[noreturn]] inline void throw_cuda_error(cudaError_t err, const char* call, const char* file, int line) {
  throw std::runtime_error(std::string("cuda: ") + call + " failed at " + file + ":" + std::to_string(line) + ": " +
                           cudaGetErrorName(err) + " (" + cudaGetErrorString(err) + ")");
}

}  // namespace sluice::kernels::cuda_detail

#define CUDA_CHECK(call)                                                                   \
  do {                                                                                     \
    const cudaError_t sluice_cuda_err_ = (call);                                           \
    if (sluice_cuda_err_ != cudaSuccess)                                                   \
      ::sluice::kernels::cuda_detail::throw_cuda_error(sluice_cuda_err_, #call, __FILE__, __LINE__); \
  } while (0)
