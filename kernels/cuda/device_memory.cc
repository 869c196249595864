#include "kernels/cuda/device_memory.h"

#include <utility>

#include "kernels/cuda/cuda_check.h"

namespace sluice::kernels {

namespace {
// The runtime's answer, asked once: cudaGetDeviceCount initialises the runtime, which is slow
// the first time and then fixed for the process.
struct DeviceCensus {
  int count = 0;
  std::string reason;
  DeviceCensus() {
    const cudaError_t err = cudaGetDeviceCount(&count);
    if (err != cudaSuccess) {
      count = 0;
      reason = std::string(cudaGetErrorName(err)) + ": " + cudaGetErrorString(err);
      cudaGetLastError();  // clear it: the next runtime call must not report it again
    } else if (count == 0) {
      reason = "the CUDA runtime reports no device";
    }
  }
};
const DeviceCensus& census() {
  static const DeviceCensus c;
  return c;
}
}  // namespace

int cuda_device_count() { return census().count; }
std::string cuda_unavailable_reason() { return census().reason; }

DeviceBuffer::DeviceBuffer(size_t bytes) : bytes_(bytes) {
  if (bytes == 0) return;
  const cudaError_t err = cudaMalloc(&data_, bytes);
  if (err != cudaSuccess) {
    data_ = nullptr;
    cudaGetLastError();
    throw std::runtime_error("cuda: cannot allocate " + std::to_string(bytes) + " bytes of device memory: " +
                             cudaGetErrorString(err));
  }
}

DeviceBuffer::~DeviceBuffer() {
  if (data_) cudaFree(data_);
}

DeviceBuffer::DeviceBuffer(DeviceBuffer&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)), bytes_(std::exchange(other.bytes_, 0)) {}

DeviceBuffer& DeviceBuffer::operator=(DeviceBuffer&& other) noexcept {
  if (this != &other) {
    if (data_) cudaFree(data_);
    data_ = std::exchange(other.data_, nullptr);
    bytes_ = std::exchange(other.bytes_, 0);
  }
  return *this;
}

}  // namespace sluice::kernels
