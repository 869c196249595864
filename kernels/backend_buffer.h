// BackendBuffer: operand memory of one KernelBackend (kernels/backend.h), returned to it when the
// buffer goes. Host memory for the CPU backend, device memory for CUDA; filled and read through
// the backend's copies. Movable, not copyable; the backend must outlive the buffer.
#pragma once

#include <cstddef>
#include <utility>

#include "kernels/backend.h"

namespace sluice::kernels {

class BackendBuffer {
 public:
  BackendBuffer() = default;
  BackendBuffer(KernelBackend& backend, size_t bytes)
      : backend_(&backend), data_(bytes ? backend.allocate(bytes) : nullptr), bytes_(bytes) {}
  ~BackendBuffer() { reset(); }
  BackendBuffer(BackendBuffer&& o) noexcept
      : backend_(o.backend_), data_(std::exchange(o.data_, nullptr)), bytes_(std::exchange(o.bytes_, 0)) {}
  BackendBuffer& operator=(BackendBuffer&& o) noexcept {
    if (this != &o) {
      reset();
      backend_ = o.backend_;
      data_ = std::exchange(o.data_, nullptr);
      bytes_ = std::exchange(o.bytes_, 0);
    }
    return *this;
  }
  BackendBuffer(const BackendBuffer&) = delete;
  BackendBuffer& operator=(const BackendBuffer&) = delete;

  void* data() const { return data_; }
  float* floats() const { return static_cast<float*>(data_); }
  size_t bytes() const { return bytes_; }

 private:
  void reset() noexcept {
    if (data_) backend_->deallocate(data_);
    data_ = nullptr;
    bytes_ = 0;
  }
  KernelBackend* backend_ = nullptr;
  void* data_ = nullptr;
  size_t bytes_ = 0;
};

}  // namespace sluice::kernels
