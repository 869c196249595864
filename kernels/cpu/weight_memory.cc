#include "kernels/cpu/weight_memory.h"

#include <sys/mman.h>

#include <cstdint>
#include <new>
#include <utility>

namespace sluice::kernels {

namespace {
constexpr size_t kHugePage = size_t(2) << 20;
}

WeightMemory::WeightMemory(size_t bytes) : bytes_(bytes) {
  if (bytes == 0) return;
  // Over-allocate by one huge page so the region can start on a 2 MiB boundary.
  map_bytes_ = (bytes + kHugePage - 1) / kHugePage * kHugePage + kHugePage;
  map_ = mmap(nullptr, map_bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (map_ == MAP_FAILED) {
    map_ = nullptr;
    throw std::bad_alloc();
  }
  const uintptr_t aligned = (reinterpret_cast<uintptr_t>(map_) + kHugePage - 1) / kHugePage * kHugePage;
  data_ = reinterpret_cast<char*>(aligned);
  madvise(data_, map_bytes_ - (aligned - reinterpret_cast<uintptr_t>(map_)), MADV_HUGEPAGE);  // advice only
}

WeightMemory::~WeightMemory() {
  if (map_) munmap(map_, map_bytes_);
}

WeightMemory::WeightMemory(WeightMemory&& o) noexcept
    : data_(std::exchange(o.data_, nullptr)), bytes_(std::exchange(o.bytes_, 0)), map_(std::exchange(o.map_, nullptr)),
      map_bytes_(std::exchange(o.map_bytes_, 0)) {}

WeightMemory& WeightMemory::operator=(WeightMemory&& o) noexcept {
  if (this != &o) {
    if (map_) munmap(map_, map_bytes_);
    data_ = std::exchange(o.data_, nullptr);
    bytes_ = std::exchange(o.bytes_, 0);
    map_ = std::exchange(o.map_, nullptr);
    map_bytes_ = std::exchange(o.map_bytes_, 0);
  }
  return *this;
}

}  // namespace sluice::kernels
