// calls_per_second: the rate loop of the job codec benchmarks (job_decode_bench.cc,
// job_encode_bench.cc). `call` runs one operation and returns whether it did what it should;
// it is called in bursts of `burst` between clock reads, so reading the clock stays a small
// part of a fast operation's time, until `seconds` have passed. A call that returns false
// ends the program with `what` (a benchmark of an operation that failed measures nothing).
// median_of: the median of `repeats` such rates, as docs/benchmarks.md reports them.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

namespace sluice::bench {

template <class Call>
double calls_per_second(Call&& call, double seconds, int burst, const char* what) {
  std::size_t n = 0;
  const auto t0 = std::chrono::steady_clock::now();
  double elapsed = 0;
  while (elapsed < seconds) {
    for (int i = 0; i < burst; ++i) {
      if (!call()) {
        std::fprintf(stderr, "%s\n", what);
        std::exit(1);
      }
    }
    n += static_cast<std::size_t>(burst);
    elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
  return static_cast<double>(n) / elapsed;
}

inline double median_of(std::vector<double> rates) {
  std::sort(rates.begin(), rates.end());
  return rates[rates.size() / 2];
}

}  // namespace sluice::bench
