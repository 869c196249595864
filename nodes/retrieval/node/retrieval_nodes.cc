#include "nodes/retrieval/node/retrieval_nodes.h"

#include <filesystem>

#include <nlohmann/json.hpp>

#include "graph/clock.h"
#include "graph/request_citations.h"
#include "graph/token_estimate.h"
#include "nodes/retrieval/fusion/fusion_profile.h"

namespace sluice::retrieval {

std::shared_ptr<const KbSnapshot> pinned_snapshot(Request& request, const KnowledgeBase& kb) {
  auto gen = request.attachment<const KbSnapshot>(kSnapshotKey);
  if (!gen) {
    gen = kb.current();
    request.attach<const KbSnapshot>(kSnapshotKey, gen);
  }
  return gen;
}

void EmbedNode::process(Batch& batch) {
  // One embedder call per snapshot present in the batch (normally exactly one).
  std::vector<RequestPtr> active;
  for (auto& r : batch.requests) {
    if (!r->active()) continue;
    const auto gen = pinned_snapshot(*r, *kb_);  // pinned either way: every branch reads one snapshot
    if (!demand_ || demand_->wanted(*gen)) active.push_back(r);
  }
  while (!active.empty()) {
    const auto gen = pinned_snapshot(*active.front(), *kb_);
    std::vector<RequestPtr> same, rest;
    std::vector<std::string> texts;
    for (auto& r : active) {
      if (pinned_snapshot(*r, *kb_) == gen) {
        same.push_back(r);
        texts.push_back(r->input().query());
      } else {
        rest.push_back(r);
      }
    }
    const std::size_t dim = gen->embedder().dimension();
    const std::vector<float> vectors = gen->embedder().embed(texts);
    for (std::size_t i = 0; i < same.size(); ++i) {
      same[i]->attach(kQueryVectorKey, std::make_shared<std::vector<float>>(vectors.begin() + static_cast<long>(i * dim),
                                                                             vectors.begin() + static_cast<long>((i + 1) * dim)));
    }
    active.swap(rest);
  }
}

// The batch's queries go to the index together, one search per snapshot present (normally
// one): the exact index then reads its vectors once for all of them instead of once each
// (docs/benchmarks.md, "Dense exact search": 755 against 60 queries/s a thread on 200,000
// vectors). Each request's hits are those it would get alone (TopK breaks ties by id).
void DenseNode::process(Batch& batch) {
  std::vector<RequestPtr> pending;
  for (auto& r : batch.requests) {
    if (!r->active()) continue;
    const auto gen = pinned_snapshot(*r, *kb_);
    if (demand_ && !demand_->wanted(*gen)) continue;  // no fuse node reads dense hits on this snapshot
    const auto qv = r->attachment<std::vector<float>>(kQueryVectorKey);
    if (!qv || qv->size() != gen->embedder().dimension()) {
      r->complete(Status::Error(StatusCode::kInternal, "dense: no query vector (is an embed node upstream?)"),
                  clock_ != nullptr ? clock_->now() : 0);
      continue;
    }
    pending.push_back(r);
  }
  while (!pending.empty()) {
    const auto gen = pinned_snapshot(*pending.front(), *kb_);
    std::vector<RequestPtr> same, rest;
    std::vector<float> queries;
    for (auto& r : pending) {
      if (pinned_snapshot(*r, *kb_) != gen) {
        rest.push_back(r);
        continue;
      }
      const auto qv = r->attachment<std::vector<float>>(kQueryVectorKey);
      queries.insert(queries.end(), qv->begin(), qv->end());
      same.push_back(r);
    }
    auto hits = gen->search_dense(queries.data(), same.size(), candidates_);
    for (std::size_t i = 0; i < same.size(); ++i)
      same[i]->attach(kDenseKey, std::make_shared<std::vector<ScoredDoc>>(std::move(hits[i])));
    pending.swap(rest);
  }
}

void Bm25Node::process(Batch& batch) {
  for (auto& r : batch.requests) {
    if (!r->active()) continue;
    const auto gen = pinned_snapshot(*r, *kb_);
    r->attach(kBm25Key, std::make_shared<std::vector<ScoredDoc>>(gen->search_bm25(r->input().query(), candidates_)));
  }
}

void FuseNode::process(Batch& batch) {
  for (auto& r : batch.requests) {
    if (!r->active()) continue;
    const auto gen = pinned_snapshot(*r, *kb_);
    watch_.observe(*gen, options_);
    const auto bm25 = r->attachment<std::vector<ScoredDoc>>(kBm25Key);
    const auto dense = r->attachment<std::vector<ScoredDoc>>(kDenseKey);
    const auto qv = r->attachment<std::vector<float>>(kQueryVectorKey);
    auto out = std::make_shared<RetrievalHits>();
    const std::string query = r->input().query();
    out->type = classify_query(query);
    out->fusion = fusion_params_for(options_, out->type, *gen);
    static const std::vector<ScoredDoc> kNone;
    // Led by BM25 at weight 1 (!dense_ranks) the hybrid is BM25's ranking whether or not the
    // dense hits came (skipped when no fuse node reads them, dense_demand.h).
    if (bm25 && ((dense && qv) || !dense_ranks(options_, *gen))) {
      out->hits = hybrid_rank(*gen, qv ? qv->data() : nullptr, *bm25, dense ? *dense : kNone, out->fusion, options_);
    } else {
      // One branch only (a bm25-only or dense-only pipeline): its ranking as is.
      out->hits = fuse_candidates(bm25 ? *bm25 : kNone, dense ? *dense : kNone, out->fusion,
                                  bm25 ? RetrieveMode::kBm25 : RetrieveMode::kDense);
    }
    const std::size_t top_k = r->trace().degradation(stage_index_) == Degradation::kShrink ? shrunk_top_k_ : options_.top_k;
    if (out->hits.size() > top_k) out->hits.resize(top_k);
    r->attach(kHitsKey, std::shared_ptr<RetrievalHits>(out));
  }
}

void RerankNode::process(Batch& batch) {
  for (auto& r : batch.requests) {
    if (!r->active()) continue;
    const auto gen = pinned_snapshot(*r, *kb_);
    auto hits = r->attachment<RetrievalHits>(kHitsKey);
    if (!hits) continue;
    auto next = std::make_shared<RetrievalHits>(*hits);  // attachments are shared: copy, then replace
    ProximityScorer scorer(gen->analyzer(), gen->bm25());
    const bool shrunk = r->trace().degradation(stage_index_) == Degradation::kShrink;
    rerank_hits(next->hits, r->input().query(), *gen, scorer, shrunk ? shrunk_depth_ : depth_, weight_);
    r->attach(kHitsKey, std::shared_ptr<RetrievalHits>(next));
  }
}

RetrieveOptions retrieve_options_from(const FuseConfig& c, const std::string& base_dir) {
  RetrieveOptions o;
  const auto method = parse_fusion_method(c.method());
  o.natural_language = {method, c.natural_language_bm25_weight(), c.rrf_k(), c.natural_language_final_bm25_weight()};
  o.exact_lookup = {method, c.exact_lookup_bm25_weight(), c.rrf_k(), c.exact_lookup_bm25_weight()};
  if (!c.profile().empty()) {
    const std::filesystem::path path = std::filesystem::path(c.profile()).is_absolute()
                                           ? std::filesystem::path(c.profile())
                                           : std::filesystem::path(base_dir) / c.profile();
    const FusionProfile profile = read_fusion_profile(path.string());
    if (profile.natural_language_tuned) o.natural_language = profile.natural_language;
    if (profile.exact_lookup_tuned) o.exact_lookup = profile.exact_lookup;
  }
  o.classify = c.classify();
  o.feedback_docs = c.feedback_docs();
  o.feedback_weight = c.feedback_weight();
  o.top_k = c.top_k();
  // A profile's weights, measured on judged queries, replace the path-agreement estimate.
  o.min_path_agreement = c.profile().empty() ? c.min_path_agreement() : 0.f;
  o.low_agreement = {FusionMethod::kWeighted, c.low_agreement_bm25_weight(), c.rrf_k(), c.low_agreement_bm25_weight()};
  return o;
}

std::string hits_json(const RetrievalHits& hits, const KbSnapshot& gen) {
  nlohmann::json j;
  j["version"] = gen.version();
  j["query_type"] = query_type_name(hits.type);
  j["fusion"] = {{"method", fusion_method_name(hits.fusion.method)}, {"bm25_weight", hits.fusion.bm25_weight}};
  if (gen.path_agreement().measured()) j["path_agreement"] = gen.path_agreement().overlap;
  j["chunks"] = nlohmann::json::array();
  for (std::size_t i = 0; i < hits.hits.size(); ++i) {
    const auto& h = hits.hits[i];
    const Chunk& c = gen.chunks()[h.chunk];
    nlohmann::json e{{"rank", i + 1},       {"score", h.score},         {"doc_id", c.doc_id},
                     {"title", c.title},    {"text", c.text},           {"begin", c.begin},
                     {"end", c.end},        {"bm25_rank", h.bm25_rank}, {"bm25_score", h.bm25_score},
                     {"dense_rank", h.dense_rank}, {"dense_score", h.dense_score}};
    if (h.rerank_score >= 0) e["rerank_score"] = h.rerank_score;
    j["chunks"].push_back(std::move(e));
  }
  return j.dump();
}

void AnswerNode::process(Batch& batch) {
  for (auto& r : batch.requests) {
    if (!r->active()) continue;
    const auto gen = pinned_snapshot(*r, *kb_);
    auto hits = r->attachment<RetrievalHits>(kHitsKey);
    const RetrievalHits empty;
    const RetrievalHits& h = hits ? *hits : empty;
    const Nanos now = clock_ != nullptr ? clock_->now() : 0;
    if (r->input().kind == RequestInput::Kind::kRetrieve) {
      r->emit_owned_event("retrieval", hits_json(h, *gen));
      r->complete(Status::Ok(), clock_ != nullptr ? clock_->now() : now);
      continue;
    }
    if (Status refused = refuse_structured_output(r->input(), "answer"); !refused.ok()) {
      r->complete(std::move(refused), now);
      continue;
    }
    const ExtractiveAnswer a = extractive_answer(r->input().query(), h.hits, *gen, options_);
    std::string answer;
    for (const auto& piece : a.pieces) {
      r->emit_token(piece, clock_ != nullptr ? clock_->now() : now);
      answer += piece;
    }
    emit_sources(*r, a.sources, options_.citations, clock_ != nullptr ? clock_->now() : now);
    // No model, no tokenizer: usage in estimated tokens (graph/token_estimate.h) of what the
    // client sent and of the answer text, not a count of pieces.
    r->usage.prompt_tokens = static_cast<int>(estimate_prompt_tokens(r->input()));
    r->usage.completion_tokens = static_cast<int>(estimate_tokens(answer));
    r->complete(Status::Ok(), clock_ != nullptr ? clock_->now() : now);
  }
}

}  // namespace sluice::retrieval
