// WeightMemory: one anonymous, read-mostly region for weights the CPU backend rewrites at load
// (the interleaved quantised copies, quant_x8.h), aligned to 2 MiB and advised for transparent huge
// pages. Why: decoding streams every weight from DRAM once per token, and with 4 KiB pages that
// is a TLB miss every 4 KiB; with huge pages the interleaved weights decoded as fast as the
// file's mapping (110M Q8_0, one thread: 160 against 146-155 tokens/s on 4 KiB pages).
// Whether the kernel grants huge pages is its choice (THP "madvise" or "always"); without them
// the region works the same on 4 KiB pages.
#pragma once

#include <cstddef>

namespace sluice::kernels {

class WeightMemory {
 public:
  WeightMemory() = default;
  explicit WeightMemory(size_t bytes);  // throws std::bad_alloc when the mapping fails
  ~WeightMemory();
  WeightMemory(WeightMemory&& o) noexcept;
  WeightMemory& operator=(WeightMemory&& o) noexcept;
  WeightMemory(const WeightMemory&) = delete;
  WeightMemory& operator=(const WeightMemory&) = delete;

  char* data() const { return data_; }
  size_t bytes() const { return bytes_; }

 private:
  char* data_ = nullptr;
  size_t bytes_ = 0;
  void* map_ = nullptr;  // the whole mapping, alignment slack included
  size_t map_bytes_ = 0;
};

}  // namespace sluice::kernels
