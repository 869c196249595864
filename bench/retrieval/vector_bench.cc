// Vector search on the anchors' synthetic data: N x D float32, 1,000 Gaussian cluster centres,
// each point = centre + unit Gaussian noise, L2-normalised, inner product, k = 10; 1,000 queries
// from the same distribution. Ground truth from the exact index (itself tested against brute force).
//
// Prints, medians of `repeats`: exact search on 1 and 2 threads (one batch of 1,000, one query at
// a time, and batches of 8: what the dense node searches for 8 concurrent requests), then for
// each ef: HNSW recall@10 and queries/s. Built twice: bench_retrieval_vectors
// measures our HnswIndex; bench_retrieval_hnswlib (SLUICE_BENCH_RAW_HNSWLIB) measures hnswlib's
// HierarchicalNSW used directly, same data, M, efConstruction, ef and compiler flags. (hnswlib's
// header defines globals, so it cannot share a binary with our wrapper.)
// Usage: bench_retrieval_vectors [N] [D] [repeats] [--no-hnsw]
#ifdef SLUICE_BENCH_RAW_HNSWLIB
#include <hnswlib/hnswlib.h>
#endif
#include <tbb/global_control.h>
#include <tbb/parallel_for.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <sstream>
#include <string>

#include "bench/vector/synthetic_vectors.h"
#include "nodes/retrieval/dense/exact_index.h"
#ifndef SLUICE_BENCH_RAW_HNSWLIB
#include "nodes/retrieval/dense/hnsw_index.h"
#endif

using namespace sluice::retrieval;
using Clock = std::chrono::steady_clock;

static double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

static double median_of(int repeats, const std::function<double()>& once) {
  std::vector<double> v;
  for (int r = 0; r < repeats; ++r) v.push_back(once());
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

static double recall_at_10(const std::vector<std::vector<ScoredDoc>>& got, const std::vector<std::vector<ScoredDoc>>& truth) {
  std::size_t hit = 0, total = 0;
  for (std::size_t q = 0; q < truth.size(); ++q) {
    for (const auto& t : truth[q]) {
      total++;
      for (const auto& g : got[q]) hit += g.doc == t.doc;
    }
  }
  return static_cast<double>(hit) / static_cast<double>(total);
}

int main(int argc, char** argv) {
  std::size_t n = 200'000, dim = 384;
  int repeats = 3;
  bool hnsw = true;
  std::vector<std::string> pos;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--no-hnsw") == 0) hnsw = false;
    else pos.emplace_back(argv[i]);
  }
  if (pos.size() > 0) n = std::stoul(pos[0]);
  if (pos.size() > 1) dim = std::stoul(pos[1]);
  if (pos.size() > 2) repeats = std::stoi(pos[2]);
  const std::size_t nq = 1000, k = 10;
  const auto centres = sluice::bench::gaussian_centres(1000, dim, 1);
  const auto data = sluice::bench::clustered_unit_vectors(n, dim, centres, 2);
  const auto queries = sluice::bench::clustered_unit_vectors(nq, dim, centres, 3);
  std::printf("data %zu x %zu, %zu queries, k %zu, exact kernel %s\n", n, dim, nq, k, ExactIndex::kernel_name());

  ExactIndex exact(dim);
  exact.add(data.data(), n);
  std::vector<std::vector<ScoredDoc>> truth;
  for (int threads : {1, 2}) {
    tbb::global_control limit(tbb::global_control::max_allowed_parallelism, threads);
    const double batch = median_of(repeats, [&] {
      const auto t0 = Clock::now();
      truth = exact.search(queries.data(), nq, k);
      return nq / seconds_since(t0);
    });
    std::printf("exact  %d thread(s), batch of %zu: %.0f queries/s\n", threads, nq, batch);
    const std::size_t single_n = 100;
    const double single = median_of(repeats, [&] {
      const auto t0 = Clock::now();
      for (std::size_t q = 0; q < single_n; ++q) exact.search(queries.data() + q * dim, 1, k);
      return single_n / seconds_since(t0);
    });
    std::printf("exact  %d thread(s), one at a time: %.0f queries/s\n", threads, single);
    // What the dense node does with a graph batch of concurrent requests (one search per batch).
    const std::size_t group = 8, groups_n = 25;
    const double grouped = median_of(repeats, [&] {
      const auto t0 = Clock::now();
      for (std::size_t g = 0; g < groups_n; ++g) exact.search(queries.data() + g * group * dim, group, k);
      return groups_n * group / seconds_since(t0);
    });
    std::printf("exact  %d thread(s), batches of %zu: %.0f queries/s\n", threads, group, grouped);
  }
  if (!hnsw) return 0;

  const std::size_t m = 16, efc = 200;
#ifdef SLUICE_BENCH_RAW_HNSWLIB
  const char* who = "hnswlib";
  hnswlib::InnerProductSpace space(dim);
  hnswlib::HierarchicalNSW<float> index(&space, n, m, efc, 100);
  auto build = [&] {
    index.addPoint(data.data(), 0);
    tbb::parallel_for(std::size_t{1}, n, [&](std::size_t i) { index.addPoint(data.data() + i * dim, i); });
  };
  auto set_ef = [&](std::size_t ef) { index.setEf(ef); };
  auto search_one = [&](const float* q) {
    auto heap = index.searchKnn(q, k);
    std::vector<ScoredDoc> r(heap.size());
    for (std::size_t i = heap.size(); i-- > 0;) {
      r[i] = {static_cast<DocIndex>(heap.top().second), 1.f - heap.top().first};
      heap.pop();
    }
    return r;
  };
  auto search_batch = [&](std::vector<std::vector<ScoredDoc>>& got) {
    tbb::parallel_for(std::size_t{0}, nq, [&](std::size_t q) { got[q] = search_one(queries.data() + q * dim); });
  };
#else
  const char* who = "ours";
  HnswIndex index(dim, HnswOptions{m, efc, 16, 100});
  auto build = [&] { index.add(data.data(), n); };
  auto set_ef = [&](std::size_t ef) { index.set_ef_search(ef); };
  auto search_one = [&](const float* q) { return index.search(q, 1, k)[0]; };
  auto search_batch = [&](std::vector<std::vector<ScoredDoc>>& got) { got = index.search(queries.data(), nq, k); };
#endif
  {
    const auto t0 = Clock::now();
    build();
    std::printf("%s hnsw build (M %zu, efC %zu, 2 threads): %.1f s\n", who, m, efc, seconds_since(t0));
  }
  for (std::size_t ef : {16u, 32u, 64u, 128u}) {
    set_ef(ef);
    std::vector<std::vector<ScoredDoc>> got(nq);
    double single = 0, batch1 = 0, batch2 = 0;
    {
      tbb::global_control limit1(tbb::global_control::max_allowed_parallelism, 1);
      single = median_of(repeats, [&] {
        const auto t0 = Clock::now();
        for (std::size_t q = 0; q < nq; ++q) got[q] = search_one(queries.data() + q * dim);
        return nq / seconds_since(t0);
      });
      batch1 = median_of(repeats, [&] {
        const auto t0 = Clock::now();
        search_batch(got);
        return nq / seconds_since(t0);
      });
    }
    const double recall = recall_at_10(got, truth);
    {
      tbb::global_control limit2(tbb::global_control::max_allowed_parallelism, 2);
      batch2 = median_of(repeats, [&] {
        const auto t0 = Clock::now();
        search_batch(got);
        return nq / seconds_since(t0);
      });
    }
    std::printf("%s hnsw ef %3zu: recall@10 %.4f, 1 thread one at a time %.0f q/s, 1 thread batch %.0f q/s, 2 threads batch %.0f q/s\n",
                who, ef, recall, single, batch1, batch2);
    std::fflush(stdout);
  }
  return 0;
}
