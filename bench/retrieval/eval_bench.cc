// Runs the evaluation library on a BEIR dataset and prints its JSON report (what `sluice eval`
// prints). Usage: bench_retrieval_eval [DATASET_DIR] [--tune] [--dims N] [--stemmer S] [--run FILE]
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <string>

#include "nodes/retrieval/eval/evaluate.h"

using namespace sluice::retrieval;

int main(int argc, char** argv) {
  std::string dir = "../shared/datasets/cranfield", run_file;
  EvalOptions o;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    auto next = [&] { return i + 1 < argc ? std::string(argv[++i]) : std::string(); };
    if (a == "--tune") o.tune = true;
    else if (a == "--dims") o.lsa.dimensions = std::stoul(next());
    else if (a == "--stemmer") o.lsa.analyzer.stemmer = next();
    else if (a == "--lsa-stopwords") o.lsa.analyzer.stopwords = next();
    else if (a == "--min-df") o.lsa.min_doc_freq = std::stoul(next());
    else if (a == "--power") o.lsa.power_iterations = std::stoul(next());
    else if (a == "--nl-weight") o.retrieve.natural_language.bm25_weight = std::stof(next());
    else if (a == "--rerank-weight") o.retrieve.rerank_weight = std::stof(next());
    else if (a == "--rerank-depth") o.retrieve.rerank_depth = std::stoul(next());
    else if (a == "--chunk") o.chunk_documents = true;
    else if (a == "--run") run_file = next();
    else dir = a;
  }
  const EvalReport r = evaluate_dataset_dir(dir, o);
  std::cout << r.to_json().dump(1) << "\n";
  for (const auto& m : r.methods) {
    std::printf("%-24s nDCG@10 %.4f R@10 %.4f R@100 %.4f MRR@10 %.4f P@10 %.4f MAP@100 %.4f\n", m.name.c_str(),
                m.metrics.ndcg10, m.metrics.recall10, m.metrics.recall100, m.metrics.mrr10, m.metrics.p10,
                m.metrics.map100);
  }
  if (!run_file.empty()) {
    for (const auto& m : r.methods) {
      std::string tag = m.name.substr(0, m.name.find(' '));
      std::ofstream out(run_file + "." + tag + ".trec");
      write_trec_run(out, m.run, "sluice-" + tag);
    }
  }
  return 0;
}
