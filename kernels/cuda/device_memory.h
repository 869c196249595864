// Device memory for the CUDA backend (kernels/cuda/cuda_backend.h): whether a GPU is there, and
// RAII buffers in its memory. Plain C++ (no CUDA headers), so code above kernels/ and the tests
// include it from any compiler.
//
// Contract:
// - cuda_device_count() never throws: no driver, no device or a driver too old for this build's
//   runtime all read as 0, with the runtime's reason in cuda_unavailable_reason().
// - DeviceBuffer owns `bytes` of device memory on the current device (cudaMalloc), freed when it
//   goes out of scope. Allocation failures throw std::runtime_error naming the size and the
//   runtime's message. Contents are uninitialised. Movable, not copyable. It is the CUDA
//   backend's own memory (its scratch, a model's weights); code above kernels/ takes operand
//   memory from a backend instead (kernels/backend_buffer.h) and copies through it.
#pragma once

#include <cstddef>
#include <string>

namespace sluice::kernels {

int cuda_device_count();
std::string cuda_unavailable_reason();  // empty when cuda_device_count() > 0

class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  explicit DeviceBuffer(size_t bytes);
  ~DeviceBuffer();
  DeviceBuffer(DeviceBuffer&& other) noexcept;
  DeviceBuffer& operator=(DeviceBuffer&& other) noexcept;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;

  void* data() const { return data_; }
  template <typename T>
  T* as() const { return static_cast<T*>(data_); }
  size_t bytes() const { return bytes_; }

 private:
  void* data_ = nullptr;
  size_t bytes_ = 0;
};

}  // namespace sluice::kernels
