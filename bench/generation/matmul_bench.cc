// matmul_bench: one quantised matrix product, row-major against the 8-row interleaved layout
// (kernels/cpu/quant_x8.h), alternating in one process (docs/benchmarks.md, "Interleaved
// quantised kernels"). Random Q8_0 or Q4_0 weights; n tokens of random activations; the
// product repeated until about 0.2 s have passed, 7 times; prints the median in GMAC/s
// (rows x cols x n multiply-adds a call) for each layout.
//
//   matmul_bench [--type q8_0|q4_0] [--rows 2048] [--cols 768] [--n 1,16,512] [-t 1]
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "kernels/cpu/cpu_features.h"
#include "kernels/cpu/matmul.h"
#include "kernels/cpu/quant_x8.h"
#include "kernels/cpu/weight_memory.h"
#include "kernels/quant_blocks.h"

using namespace sluice::kernels;
using Clock = std::chrono::steady_clock;

namespace {

double gmacs(MatmulRunner& runner, const MatrixView& w, const std::vector<float>& x, int64_t n, std::vector<float>& y) {
  runner.run(w, x.data(), n, y.data());
  int reps = 1;
  for (;;) {  // calibrate to ~0.2 s a sample
    const auto a = Clock::now();
    for (int i = 0; i < reps; ++i) runner.run(w, x.data(), n, y.data());
    if (std::chrono::duration<double>(Clock::now() - a).count() > 0.05) break;
    reps *= 2;
  }
  reps *= 4;
  std::vector<double> v;
  for (int k = 0; k < 7; ++k) {
    const auto a = Clock::now();
    for (int i = 0; i < reps; ++i) runner.run(w, x.data(), n, y.data());
    v.push_back(std::chrono::duration<double>(Clock::now() - a).count());
  }
  std::sort(v.begin(), v.end());
  return double(w.rows) * double(w.cols) * double(n) * reps / v[3] / 1e9;
}

}  // namespace

int main(int argc, char** argv) {
  DType type = DType::kQ8_0;
  int64_t rows = 2048, cols = 768;
  int threads = 1;
  std::vector<int64_t> ns = {1, 16, 512};
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&]() -> std::string {
      if (i + 1 >= argc) {
        std::fprintf(stderr, "%s needs a value\n", a.c_str());
        std::exit(2);
      }
      return argv[++i];
    };
    if (a == "--type") type = next() == "q4_0" ? DType::kQ4_0 : DType::kQ8_0;
    else if (a == "--rows") rows = std::stol(next());
    else if (a == "--cols") cols = std::stol(next());
    else if (a == "-t") threads = std::stoi(next());
    else if (a == "--n") {
      ns.clear();
      std::stringstream ss(next());
      for (std::string p; std::getline(ss, p, ',');) ns.push_back(std::stol(p));
    } else {
      std::fprintf(stderr, "usage: matmul_bench [--type q8_0|q4_0] [--rows 2048] [--cols 768] [--n 1,16,512] [-t 1]\n");
      return 2;
    }
  }
  if (rows % kX8Rows != 0 || cols % kQuantBlock != 0) {
    std::fprintf(stderr, "rows must be a multiple of 8 and cols of 32\n");
    return 2;
  }
  std::mt19937 rng(1);
  std::normal_distribution<float> nd;
  std::vector<float> wf(size_t(rows * cols));
  for (auto& v : wf) v = nd(rng);
  const int64_t rb = dtype_row_bytes(type, cols);
  std::vector<uint8_t> bytes(size_t(rows * rb));
  for (int64_t r = 0; r < rows; ++r) quantize_row(type, wf.data() + r * cols, bytes.data() + r * rb, cols);
  const MatrixView row_major{type, bytes.data(), rows, cols};
  WeightMemory memory(size_t(x8_bytes(row_major)));
  const MatrixView interleaved = interleave_x8(row_major, memory.data());
  MatmulRunner runner(threads, default_isa());
  std::printf("%s %lld x %lld, %d thread(s), isa %s\n\n| n | row-major GMAC/s | interleaved GMAC/s | ratio |\n| --- | --- | --- | --- |\n",
              dtype_name(type), (long long)rows, (long long)cols, threads, isa_name(default_isa()));
  for (int64_t n : ns) {
    std::vector<float> x(size_t(n * cols)), y(size_t(n * rows));
    for (auto& v : x) v = nd(rng);
    const double a = gmacs(runner, row_major, x, n, y), b = gmacs(runner, interleaved, x, n, y);
    std::printf("| %lld | %.1f | %.1f | %.2fx |\n", (long long)n, a, b, b / a);
    std::fflush(stdout);
  }
}
