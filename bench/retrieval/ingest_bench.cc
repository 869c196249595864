// Ingest costs on a BEIR corpus (default Cranfield), medians of `repeats`:
//  - embedding chunks/s in batches of 256 vs one text per call (the dense model's embedder);
//  - full ingest into an empty knowledge base vs re-ingest after changing 1% of the documents.
// Usage: bench_retrieval_ingest [DATASET_DIR] [repeats] [lsa|use-lite]
// (use-lite: the pretrained sentence encoder at inference::default_encoder_path()).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <string>

#include "inference/encoder/encoder_location.h"
#include "nodes/retrieval/dense/use_lite_embedder.h"
#include "nodes/retrieval/eval/beir_dataset.h"
#include "nodes/retrieval/kb/knowledge_base.h"

using namespace sluice::retrieval;
using Clock = std::chrono::steady_clock;

static double median_of(int repeats, const std::function<double()>& once) {
  std::vector<double> v;
  for (int r = 0; r < repeats; ++r) v.push_back(once());
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

int main(int argc, char** argv) {
  const std::string dir = argc > 1 ? argv[1] : "../shared/datasets/cranfield";
  const int repeats = argc > 2 ? std::stoi(argv[2]) : 3;
  const std::string dense = argc > 3 ? argv[3] : "lsa";
  KnowledgeBaseOptions kb_options;
  kb_options.dense_model = dense;
  std::vector<LoadProblem> problems;
  const auto corpus = read_beir_corpus(dir + "/corpus.jsonl", problems);
  std::vector<SourceDocument> docs;
  std::vector<std::string> texts;
  for (const auto& d : corpus) {
    if (d.text.find_first_not_of(" \n\t") == std::string::npos) continue;
    docs.push_back({d.id, d.title, d.text, DocumentKind::kNarrative, CodeLanguage::kNone});
    texts.push_back(d.title + "\n" + d.text);
  }
  const std::shared_ptr<const Embedder> embedder =
      dense == "use-lite" ? std::shared_ptr<const Embedder>(UseLiteEmbedder::open(sluice::inference::default_encoder_path()))
                          : LsaEmbedder::fit(texts, LsaOptions{});
  std::vector<float> out(texts.size() * embedder->dimension());
  const double batched = median_of(repeats, [&] {
    const auto t0 = Clock::now();
    for (std::size_t b = 0; b < texts.size(); b += 256) {
      std::vector<std::string> batch(texts.begin() + static_cast<long>(b),
                                     texts.begin() + static_cast<long>(std::min(texts.size(), b + 256)));
      embedder->embed(batch, out.data() + b * embedder->dimension());
    }
    return texts.size() / std::chrono::duration<double>(Clock::now() - t0).count();
  });
  const double single = median_of(repeats, [&] {
    const auto t0 = Clock::now();
    for (std::size_t i = 0; i < texts.size(); ++i) {
      embedder->embed(std::vector<std::string>{texts[i]}, out.data() + i * embedder->dimension());
    }
    return texts.size() / std::chrono::duration<double>(Clock::now() - t0).count();
  });
  std::printf("embed %zu chunks (%s): batches of 256 %.0f chunks/s, one by one %.0f chunks/s (%.1fx)\n",
              texts.size(), embedder->name().c_str(), batched, single, batched / single);

  double full_s = 0, incr_s = 0;
  std::size_t embedded_full = 0, embedded_incr = 0;
  full_s = median_of(repeats, [&] {
    KnowledgeBase kb(kb_options);
    const auto s = kb.upsert(docs);
    embedded_full = s.chunks_embedded;
    return s.seconds;
  });
  KnowledgeBase kb(kb_options);
  kb.upsert(docs);
  int round = 0;
  incr_s = median_of(repeats, [&] {
    auto changed = docs;
    ++round;
    for (std::size_t i = 0; i < changed.size(); i += 100) changed[i].text += " revision " + std::to_string(round);
    const auto s = kb.upsert(changed);
    embedded_incr = s.chunks_embedded;
    return s.seconds;
  });
  std::printf("ingest %zu documents: full %.3f s (%zu chunks embedded%s); re-ingest after "
              "changing 1%% %.3f s (%zu chunks embedded); %.1fx faster (%s)\n",
              docs.size(), full_s, embedded_full, dense == "lsa" ? ", LSA fit included" : "", incr_s, embedded_incr, full_s / incr_s, dense.c_str());
  return 0;
}
