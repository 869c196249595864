// MetricSlot: which row of a sharded metric the calling thread writes.
//
// Hot-path metric updates (graph/metrics.h) go to a per-thread row so two cores never fight
// over one cache line. The first metric_slot_count() - 1 threads alive at once each own a row
// exclusively: only that thread ever writes it, so an update is a plain relaxed load and
// store, no locked instruction. Threads beyond that share the last row and update it with
// atomic read-modify-writes, which is still exact. A thread's row goes back to the pool when
// the thread exits, so a process that starts and stops threads does not run out of rows; the
// next owner continues from the values the previous one left (the pool's mutex orders them).
//
// Readers (exposition, quantiles) sum all rows with relaxed loads: each row is exact, the sum
// is a snapshot that may miss updates racing with it, as Prometheus scraping allows.
#pragma once

#include <atomic>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <type_traits>

namespace sluice {

struct MetricSlot {
  std::uint32_t index;  // row, < metric_slot_count()
  bool exclusive;       // true: only this thread writes the row
};

// Rows per sharded metric: the hardware threads plus room for connector and engine threads,
// plus the shared row. Fixed for the life of the process.
std::size_t metric_slot_count();

namespace detail {
constexpr std::uint32_t kUnassignedSlot = UINT32_MAX;
inline thread_local MetricSlot t_metric_slot{kUnassignedSlot, false};
void assign_metric_slot();
}  // namespace detail

inline MetricSlot metric_slot() {
  if (detail::t_metric_slot.index == detail::kUnassignedSlot) [[unlikely]] detail::assign_metric_slot();
  return detail::t_metric_slot;
}

// Adds to a row: plain load and store when the caller owns it, fetch_add when it is shared.
template <class Int>
inline void slot_add(std::atomic<Int>& cell, std::type_identity_t<Int> v, bool exclusive) {
  if (exclusive) cell.store(cell.load(std::memory_order_relaxed) + v, std::memory_order_relaxed);
  else cell.fetch_add(v, std::memory_order_relaxed);
}
// A double kept as its bit pattern in a 64-bit cell (so a histogram row is one array).
inline void slot_add_double(std::atomic<std::uint64_t>& cell, double v, bool exclusive) {
  std::uint64_t old = cell.load(std::memory_order_relaxed);
  if (exclusive) {
    cell.store(std::bit_cast<std::uint64_t>(std::bit_cast<double>(old) + v), std::memory_order_relaxed);
    return;
  }
  while (!cell.compare_exchange_weak(old, std::bit_cast<std::uint64_t>(std::bit_cast<double>(old) + v),
                                     std::memory_order_relaxed)) {
  }
}

}  // namespace sluice
