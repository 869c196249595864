#include "nodes/retrieval/kb/retriever.h"

#include <algorithm>
#include <chrono>
#include <stdexcept>
#include <unordered_map>

namespace sluice::retrieval {
namespace {

long long since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

const char* retrieve_mode_name(RetrieveMode m) {
  switch (m) {
    case RetrieveMode::kBm25: return "bm25";
    case RetrieveMode::kDense: return "dense";
    case RetrieveMode::kHybrid: return "hybrid";
  }
  return "hybrid";
}

RetrieveMode parse_retrieve_mode(const std::string& name) {
  if (name == "bm25") return RetrieveMode::kBm25;
  if (name == "dense") return RetrieveMode::kDense;
  if (name == "hybrid") return RetrieveMode::kHybrid;
  throw std::invalid_argument("retrieve.mode: '" + name + "' is not bm25, dense or hybrid");
}

FusionParams fusion_params_for(const RetrieveOptions& options, QueryType type) {
  return options.classify && type == QueryType::kExactLookup ? options.exact_lookup : options.natural_language;
}

bool lexical_led(const RetrieveOptions& options, const PathAgreement& agreement) {
  return options.min_path_agreement > 0 && agreement.measured() && agreement.overlap < options.min_path_agreement;
}

bool lexical_led(const RetrieveOptions& options, const KbSnapshot& gen) {
  return lexical_led(options, gen.path_agreement());
}

bool dense_ranks(const RetrieveOptions& options, const KbSnapshot& gen) {
  return !lexical_led(options, gen) || options.low_agreement.bm25_weight < 1.f;
}

FusionParams fusion_params_for(const RetrieveOptions& options, QueryType type, const KbSnapshot& gen) {
  return lexical_led(options, gen) ? options.low_agreement : fusion_params_for(options, type);
}

std::vector<RetrievedChunk> fuse_candidates(const std::vector<ScoredDoc>& bm25, const std::vector<ScoredDoc>& dense,
                                            const FusionParams& params, RetrieveMode mode) {
  std::vector<ScoredDoc> fused;
  if (mode == RetrieveMode::kBm25) {
    fused = bm25;
  } else if (mode == RetrieveMode::kDense) {
    fused = dense;
  } else {
    fused = fuse(bm25, dense, params);
  }
  std::unordered_map<DocIndex, std::size_t> slot;
  std::vector<RetrievedChunk> out(fused.size());
  for (std::size_t i = 0; i < fused.size(); ++i) {
    out[i].chunk = fused[i].doc;
    out[i].score = fused[i].score;
    slot.emplace(fused[i].doc, i);
  }
  for (std::size_t r = 0; r < bm25.size(); ++r) {
    auto it = slot.find(bm25[r].doc);
    if (it == slot.end()) continue;
    out[it->second].bm25_rank = static_cast<int>(r + 1);
    out[it->second].bm25_score = bm25[r].score;
  }
  for (std::size_t r = 0; r < dense.size(); ++r) {
    auto it = slot.find(dense[r].doc);
    if (it == slot.end()) continue;
    out[it->second].dense_rank = static_cast<int>(r + 1);
    out[it->second].dense_score = dense[r].score;
  }
  return out;
}

std::vector<ScoredDoc> feedback_dense(const KbSnapshot& gen, const float* query_vector,
                                      const std::vector<ScoredDoc>& fused, std::size_t docs, float weight,
                                      std::size_t candidates) {
  const std::size_t dim = gen.embedder().dimension();
  const std::size_t m = std::min(docs, fused.size());
  std::vector<float> q(query_vector, query_vector + dim), v(dim);
  if (m == 0) return gen.search_dense(q.data(), 1, candidates)[0];
  const float scale = weight / static_cast<float>(m);
  for (std::size_t i = 0; i < m; ++i) {
    gen.vectors().vector(fused[i].doc, v.data());
    for (std::size_t c = 0; c < dim; ++c) q[c] += scale * v[c];
  }
  l2_normalize_rows(q.data(), 1, dim);
  return gen.search_dense(q.data(), 1, candidates)[0];
}

std::vector<RetrievedChunk> hybrid_rank(const KbSnapshot& gen, const float* query_vector,
                                        const std::vector<ScoredDoc>& bm25, const std::vector<ScoredDoc>& dense,
                                        const FusionParams& params, const RetrieveOptions& options) {
  if (!dense_ranks(options, gen)) {
    // BM25's candidates in BM25's order. With the dense list fused at weight 0, documents only
    // it found would score 0, the same as BM25's lowest, and fill the floor in id order.
    std::vector<RetrievedChunk> hits = fuse_candidates(bm25, dense, params, RetrieveMode::kHybrid);
    hits.erase(std::remove_if(hits.begin(), hits.end(), [](const RetrievedChunk& h) { return h.bm25_rank == 0; }),
               hits.end());
    return hits;
  }
  if (options.feedback_docs == 0 || lexical_led(options, gen)) {
    return fuse_candidates(bm25, dense, params, RetrieveMode::kHybrid);
  }
  const auto first = fuse(bm25, dense, params);
  const auto moved = feedback_dense(gen, query_vector, first, options.feedback_docs, options.feedback_weight,
                                    std::max(options.candidates, dense.size()));
  FusionParams second = params;
  second.bm25_weight = params.final_weight();
  return fuse_candidates(bm25, moved, second, RetrieveMode::kHybrid);
}

void rerank_hits(std::vector<RetrievedChunk>& hits, std::string_view query, const KbSnapshot& gen,
                 const RerankScorer& scorer, std::size_t depth, float weight) {
  const std::size_t n = std::min(depth, hits.size());
  if (n == 0) return;
  std::vector<const Chunk*> chunks(n);
  for (std::size_t i = 0; i < n; ++i) chunks[i] = &gen.chunks()[hits[i].chunk];
  const std::vector<float> s = scorer.score(query, chunks);
  float lo = hits[0].score, hi = hits[0].score;
  for (std::size_t i = 0; i < n; ++i) {
    lo = std::min(lo, hits[i].score);
    hi = std::max(hi, hits[i].score);
  }
  for (std::size_t i = 0; i < n; ++i) {
    const float base = hi > lo ? (hits[i].score - lo) / (hi - lo) : 1.f;
    hits[i].rerank_score = s[i];
    // +1 keeps every reranked hit above the ones beyond `depth` (whose order is unchanged).
    hits[i].score = 1.f + (1 - weight) * base + weight * s[i];
  }
  std::stable_sort(hits.begin(), hits.begin() + static_cast<std::ptrdiff_t>(n),
                   [](const RetrievedChunk& a, const RetrievedChunk& b) { return a.score > b.score; });
}

RetrieveResult retrieve(const KbSnapshot& gen, std::string_view query, const RetrieveOptions& options) {
  using Clock = std::chrono::steady_clock;
  RetrieveResult r;
  r.type = classify_query(query);
  r.fusion = fusion_params_for(options, r.type, gen);
  std::vector<ScoredDoc> bm25, dense;
  if (options.mode != RetrieveMode::kDense) {
    const auto t0 = Clock::now();
    bm25 = gen.search_bm25(query, options.candidates);
    r.nanos.bm25 = since(t0);
  }
  std::vector<float> qv;
  if (options.mode != RetrieveMode::kBm25) {
    auto t0 = Clock::now();
    qv = gen.embedder().embed(std::vector<std::string>{std::string(query)});
    r.nanos.embed = since(t0);
    t0 = Clock::now();
    dense = gen.search_dense(qv.data(), 1, options.candidates)[0];
    r.nanos.dense = since(t0);
  }
  auto t0 = Clock::now();
  if (options.mode == RetrieveMode::kHybrid) {
    r.hits = hybrid_rank(gen, qv.data(), bm25, dense, r.fusion, options);
  } else {
    r.hits = fuse_candidates(bm25, dense, r.fusion, options.mode);
  }
  r.nanos.fuse = since(t0);
  if (options.rerank) {
    t0 = Clock::now();
    ProximityScorer scorer(gen.analyzer(), gen.bm25());
    rerank_hits(r.hits, query, gen, scorer, options.rerank_depth, options.rerank_weight);
    r.nanos.rerank = since(t0);
  }
  if (r.hits.size() > options.top_k) r.hits.resize(options.top_k);
  return r;
}

}  // namespace sluice::retrieval
