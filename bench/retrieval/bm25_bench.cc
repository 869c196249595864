// BM25 on a BEIR dataset: quality (all six metrics) and single-thread / batched queries per second.
// Usage: bench_retrieval_bm25 [DATASET_DIR] [repeats] [k1] [b] [stemmer]
#include <tbb/global_control.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "nodes/retrieval/bm25/bm25_index.h"
#include "nodes/retrieval/eval/beir_dataset.h"
#include "nodes/retrieval/text/analyzer.h"

using namespace sluice::retrieval;

int main(int argc, char** argv) {
  const std::string dir = argc > 1 ? argv[1] : "../shared/datasets/cranfield";
  const int repeats = argc > 2 ? std::atoi(argv[2]) : 5;
  Bm25Params params;
  if (argc > 3) params.k1 = std::strtof(argv[3], nullptr);
  if (argc > 4) params.b = std::strtof(argv[4], nullptr);
  AnalyzerOptions aopt;
  if (argc > 5) aopt.stemmer = argv[5];
  auto ds = load_beir_dataset(dir);
  Analyzer analyzer(aopt);
  Bm25Index::Builder builder;
  for (const auto& d : ds.corpus) builder.add(analyzer.terms(d.title + "\n" + d.text));
  const Bm25Index index = builder.build(params);
  std::printf("docs %zu terms %zu postings %zu queries %zu\n", index.num_docs(), index.num_terms(),
              index.num_postings(), ds.queries.size());
  Run run;
  for (const auto& q : ds.queries) {
    for (const auto& h : index.search(analyzer.terms(q.text), 100)) {
      run[q.id].push_back({ds.corpus[h.doc].id, h.score});
    }
  }
  const auto m = evaluate_run(ds.qrels, run).mean;
  std::printf("nDCG@10 %.4f R@10 %.4f R@100 %.4f MRR@10 %.4f P@10 %.4f MAP@100 %.4f\n", m.ndcg10,
              m.recall10, m.recall100, m.mrr10, m.p10, m.map100);
  using Clock = std::chrono::steady_clock;
  auto median = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
  };
  for (auto strategy : {Bm25Index::Strategy::kExhaustive, Bm25Index::Strategy::kMaxScore}) {
    std::vector<double> qps;
    std::size_t sink = 0;
    for (int r = 0; r < repeats; ++r) {
      const auto t0 = Clock::now();
      for (int rep = 0; rep < 20; ++rep) {
        for (const auto& q : ds.queries) sink += index.search(analyzer.terms(q.text), 100, strategy).size();
      }
      const double s = std::chrono::duration<double>(Clock::now() - t0).count();
      qps.push_back(20.0 * ds.queries.size() / s);
    }
    std::printf("%s single-thread (analysis + search, top 100): median %.0f queries/s (sink %zu)\n",
                strategy == Bm25Index::Strategy::kExhaustive ? "exhaustive" : "maxscore  ", median(qps), sink);
  }
  for (int threads : {1, 2}) {
    tbb::global_control limit(tbb::global_control::max_allowed_parallelism, threads);
    std::vector<std::vector<std::string>> batch;
    for (int rep = 0; rep < 20; ++rep)
      for (const auto& q : ds.queries) batch.push_back(analyzer.terms(q.text));
    std::vector<double> qps;
    for (int r = 0; r < repeats; ++r) {
      const auto t0 = Clock::now();
      auto res = index.search_batch(batch, 100);
      const double s = std::chrono::duration<double>(Clock::now() - t0).count();
      qps.push_back(batch.size() / s);
    }
    std::printf("batch %d thread(s) (search only, top 100): median %.0f queries/s\n", threads, median(qps));
  }
  return 0;
}
