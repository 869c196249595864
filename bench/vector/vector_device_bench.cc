// Exact vector search on the CPU and on the GPU, side by side on the anchors' synthetic data
// (synthetic_vectors.h; 200,000 x 384 by default, k 10, 1,024 queries):
//   cpu   ExactIndex on `--threads` oneTBB threads: one query per call, batches of 8 and 64
//   cuda  CudaExactIndex (when this build has CUDA and the machine a GPU): the same three, then
//         `--clients` threads each searching one query per call at once, which the coalescer
//         merges into launches (its mean launch size and the clients' p50 latency are printed),
//         and whether every result equals the CPU index's (same ids, same order, same float
//         scores). With --f16 the GPU holds the vectors in F16 (device: cuda-f16) and the CPU
//         index it is compared with holds the vectors rounded to half.
// One JSON line per row, queries/s the median of `--repeats` runs. Without a GPU the cuda rows
// are replaced by one line saying why, and the exit status stays 0 (scripts/gpu-check runs it
// on the GPU machine; docs/benchmarks.md has the figures).
//   vector_device_bench [--n N] [--dim D] [--k K] [--repeats R] [--threads T] [--clients C]
//                       [--f16] [--no-cpu-rates]   (the latter: only the identity check on the CPU)
#include <tbb/global_control.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "bench/vector/synthetic_vectors.h"
#include "kernels/quant_blocks.h"
#include "nodes/retrieval/dense/exact_index.h"
#include "nodes/retrieval/dense/vector_device.h"
#if SLUICE_HAVE_CUDA_INDEX
#include "nodes/retrieval/dense/cuda_exact_index.h"
#endif

using namespace sluice::retrieval;
using Clock = std::chrono::steady_clock;

namespace {

double median_of(int repeats, const std::function<double()>& once) {
  std::vector<double> v;
  for (int r = 0; r < repeats; ++r) v.push_back(once());
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// Queries/s searching `queries` (nq of them) in calls of `batch`.
double rate(const VectorIndex& index, const std::vector<float>& queries, std::size_t nq, std::size_t batch,
            std::size_t k, int repeats) {
  const std::size_t dim = index.dimension();
  return median_of(repeats, [&] {
    const auto t0 = Clock::now();
    for (std::size_t q = 0; q < nq; q += batch) index.search(queries.data() + q * dim, std::min(batch, nq - q), k);
    return double(nq) / seconds_since(t0);
  });
}

bool same(const std::vector<std::vector<ScoredDoc>>& a, const std::vector<std::vector<ScoredDoc>>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t q = 0; q < a.size(); ++q) {
    if (a[q].size() != b[q].size()) return false;
    for (std::size_t i = 0; i < a[q].size(); ++i) {
      if (a[q][i].doc != b[q][i].doc || std::memcmp(&a[q][i].score, &b[q][i].score, sizeof(float)) != 0) return false;
    }
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  std::size_t n = 200'000, dim = 384, k = 10, nq = 1024;
  int repeats = 3, threads = 2, clients = 16;
  bool f16 = false, no_cpu_rates = false;
  for (int i = 1; i < argc; ++i) {
    const std::string flag = argv[i];
    if (flag == "--f16" || flag == "--no-cpu-rates") {
      (flag == "--f16" ? f16 : no_cpu_rates) = true;
      continue;
    }
    if (i + 1 >= argc) {
      std::fprintf(stderr, "vector_device_bench: %s needs a value\n", flag.c_str());
      return 2;
    }
    const std::string value = argv[++i];
    if (flag == "--n") n = std::stoul(value);
    else if (flag == "--dim") dim = std::stoul(value);
    else if (flag == "--k") k = std::stoul(value);
    else if (flag == "--repeats") repeats = std::stoi(value);
    else if (flag == "--threads") threads = std::stoi(value);
    else if (flag == "--clients") clients = std::stoi(value);
    else {
      std::fprintf(stderr, "vector_device_bench: unknown flag %s\n", flag.c_str());
      return 2;
    }
  }
  tbb::global_control limit(tbb::global_control::max_allowed_parallelism, std::size_t(threads));
  const auto centres = sluice::bench::gaussian_centres(1000, dim, 1);
  const auto data = sluice::bench::clustered_unit_vectors(n, dim, centres, 2);
  const auto queries = sluice::bench::clustered_unit_vectors(nq, dim, centres, 3);
  std::printf("{\"data\":\"%zu x %zu\",\"queries\":%zu,\"k\":%zu,\"cpu_kernel\":\"%s\",\"threads\":%d}\n", n, dim, nq, k,
              ExactIndex::kernel_name(), threads);

  ExactIndex cpu(dim);
  if (f16) {  // the twin of an F16 device index: the vectors rounded to half
    std::vector<float> rounded(data);
    for (float& v : rounded) v = sluice::kernels::fp16_to_fp32(sluice::kernels::fp32_to_fp16(v));
    cpu.add(rounded.data(), n);
  } else {
    cpu.add(data.data(), n);
  }
  for (std::size_t batch : {std::size_t{1}, std::size_t{8}, std::size_t{64}}) {
    if (no_cpu_rates) break;
    std::printf("{\"device\":\"cpu\",\"batch\":%zu,\"queries_per_s\":%.0f}\n", batch, rate(cpu, queries, nq, batch, k, repeats));
  }

  std::string device;
  try {
    device = resolve_vector_device(f16 ? "cuda-f16" : "cuda");
  } catch (const std::exception& e) {
    std::printf("{\"device\":\"cuda\",\"skipped\":\"%s\"}\n", e.what());
    return 0;
  }
  CoalescerOptions coalescing;  // the dense node's defaults
  const auto t_load = Clock::now();
  auto gpu = make_cuda_exact_index(dim, coalescing, f16);
  gpu->add(data.data(), n);
  std::printf("{\"device\":\"%s\",\"load_s\":%.3f}\n", device.c_str(), seconds_since(t_load));
  for (std::size_t batch : {std::size_t{1}, std::size_t{8}, std::size_t{64}, std::size_t{256}}) {
    std::printf("{\"device\":\"cuda\",\"batch\":%zu,\"queries_per_s\":%.0f}\n", batch, rate(*gpu, queries, nq, batch, k, repeats));
  }
  // Concurrent single queries from `clients` threads (requests the graph did not batch together);
  // each query's latency is kept for the p50.
  std::vector<double> latencies(nq);
  const double concurrent = median_of(repeats, [&] {
    const auto t0 = Clock::now();
    std::vector<std::thread> pool;
    for (int c = 0; c < clients; ++c) {
      pool.emplace_back([&, c] {
        for (std::size_t q = std::size_t(c); q < nq; q += std::size_t(clients)) {
          const auto tq = Clock::now();
          gpu->search(queries.data() + q * dim, 1, k);
          latencies[q] = seconds_since(tq);
        }
      });
    }
    for (auto& t : pool) t.join();
    return double(nq) / seconds_since(t0);
  });
  std::sort(latencies.begin(), latencies.end());
  const double p50_ms = latencies[latencies.size() / 2] * 1e3;
#if SLUICE_HAVE_CUDA_INDEX
  if (const auto* c = dynamic_cast<const CudaExactIndex*>(gpu.get())) {
    const SearchCoalescer::Stats st = c->coalescing();
    std::printf("{\"device\":\"cuda\",\"searches\":%llu,\"launches\":%llu,\"mean_queries_per_launch\":%.1f,"
                "\"largest_launch\":%llu,\"device_bytes\":%zu}\n",
                (unsigned long long)st.calls, (unsigned long long)st.batches,
                st.batches ? double(st.queries) / double(st.batches) : 0.0, (unsigned long long)st.largest, c->device_bytes());
  }
#endif
  const bool identical = same(cpu.search(queries.data(), nq, k), gpu->search(queries.data(), nq, k));
  std::printf("{\"device\":\"%s\",\"clients\":%d,\"one_query_each\":true,\"queries_per_s\":%.0f,\"p50_ms\":%.3f,"
              "\"identical_to_cpu\":%s}\n",
              device.c_str(), clients, concurrent, p50_ms, identical ? "true" : "false");
  return identical ? 0 : 1;
}
