#include "graph/monotonic_time.h"

#include <time.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>

namespace sluice {
namespace detail {

std::atomic<const TscCalibration*> g_tsc_calibration{nullptr};

namespace {

constexpr std::int64_t kCalibrationNanos = 50'000'000;  // 50 ms: about 1 ppm from ~30 ns reads

std::int64_t clock_monotonic() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<std::int64_t>(ts.tv_sec) * 1'000'000'000 + ts.tv_nsec;
}

#if defined(__x86_64__)
// The kernel trusts the counter: its clocksource is "tsc", and the CPU says the counter runs
// at a constant rate through power states.
bool tsc_usable() {
  if (const char* e = std::getenv("SLUICE_CLOCK"); e && std::strcmp(e, "system") == 0) return false;
  std::ifstream source("/sys/devices/system/clocksource/clocksource0/current_clocksource");
  std::string name;
  if (!(source >> name) || name != "tsc") return false;
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  while (std::getline(cpuinfo, line)) {
    if (line.rfind("flags", 0) != 0) continue;
    std::istringstream words(line);
    bool constant = false, nonstop = false;
    for (std::string w; words >> w;) {
      constant |= w == "constant_tsc";
      nonstop |= w == "nonstop_tsc";
    }
    return constant && nonstop;
  }
  return false;
}

// A (counter, CLOCK_MONOTONIC) pair read as close together as this thread can: the counter
// halfway between two reads that bracket the clock_gettime, best of a few tries.
struct Pair {
  std::uint64_t tsc;
  std::int64_t ns;
};
Pair read_pair() {
  Pair best{0, 0};
  std::uint64_t best_gap = UINT64_MAX;
  for (int i = 0; i < 8; ++i) {
    std::uint64_t a = __rdtsc();
    std::int64_t ns = clock_monotonic();
    std::uint64_t b = __rdtsc();
    if (b > a && b - a < best_gap) {
      best_gap = b - a;
      best = {a + (b - a) / 2, ns};
    }
  }
  return best;
}

struct Calibrator {
  bool usable = tsc_usable();
  Pair start = usable ? read_pair() : Pair{0, 0};
  std::atomic<bool> done{!usable};
  TscCalibration calibration{};
};

Calibrator& calibrator() {
  static Calibrator* c = new Calibrator();  // never destroyed: read until process exit
  return *c;
}
#endif

}  // namespace

std::int64_t monotonic_nanos_slow() {
  std::int64_t now = clock_monotonic();
#if defined(__x86_64__)
  Calibrator& c = calibrator();
  if (c.done.load(std::memory_order_acquire) || now - c.start.ns < kCalibrationNanos) return now;
  if (c.done.exchange(true, std::memory_order_acq_rel)) return now;  // another thread calibrates
  Pair end = read_pair();
  if (end.tsc <= c.start.tsc || end.ns <= c.start.ns) return now;  // counter misbehaved: stay on the system clock
  unsigned __int128 scaled = static_cast<unsigned __int128>(end.ns - c.start.ns) << 32;
  c.calibration = {end.tsc, end.ns, static_cast<std::uint64_t>(scaled / (end.tsc - c.start.tsc))};
  g_tsc_calibration.store(&c.calibration, std::memory_order_release);
  return end.ns;
#else
  return now;
#endif
}

}  // namespace detail

const char* monotonic_time_source() {
  return detail::g_tsc_calibration.load(std::memory_order_acquire) ? "tsc" : "clock_gettime";
}

}  // namespace sluice
