#include "nodes/cache/semantic_cache_node.h"

#include <cstdio>
#include <filesystem>

#include "graph/proto_duration.h"
#include "inference/encoder/shared_encoders.h"
#include "inference/model_error.h"
#include "nodes/embedding/embeddings_node.h"
#include "nodes/retrieval/kb/shared_knowledge_bases.h"

namespace sluice::cache {

SemanticCacheNode::SemanticCacheNode(const SemanticCacheConfig& config, const NodeContext& ctx)
    : clock_(*ctx.clock),
      identity_{ctx.pipeline_name, ctx.pipeline_fingerprint},
      cache_sampled_(config.cache_sampled()),
      threshold_(static_cast<float>(config.threshold())),
      candidates_(config.candidates()),
      max_answer_bytes_(config.max_bytes() / 8) {
  const std::string path = encoder_path_from(config.model(), ctx.base_dir);
  if (!std::filesystem::exists(path)) {
    if (config.optional()) {
      std::fprintf(stderr, "sluice: semantic_cache node '%s' is off: no encoder at %s (optional: true)\n",
                   ctx.name.c_str(), path.c_str());
      return;
    }
    throw std::invalid_argument("model '" + path + "' does not exist (scripts/setup-encoder writes it, or set model / SLUICE_ENCODER)");
  }
  try {
    encoder_ = inference::shared_sentence_encoder(path, 0);
  } catch (const inference::ModelError& e) {
    throw std::invalid_argument(std::string("model: ") + e.what());
  }
  StoreLimits limits;
  limits.ttl = duration_nanos(config.ttl());
  limits.max_bytes = config.max_bytes();
  store_ = std::make_shared<SemanticStore>(limits, clock_, static_cast<std::size_t>(encoder_->dimension()));
  auto store = store_;
  tier_ = std::make_shared<AnswerCacheTier>(
      ctx, "semantic",
      AnswerCacheTier::Store{[store](const EntryPredicate& p) { return store->remove_if(p); },
                             [store] { return store->counts(); }},
      config.knowledge_base().empty() ? nullptr : retrieval::node_knowledge_base(config.knowledge_base(), ctx.base_dir),
      invalidation_policy(config.invalidate()));
}

void SemanticCacheNode::process(Batch& batch) {
  if (!encoder_) return;
  std::vector<Request*> asking;
  std::vector<std::string> questions;
  for (auto& r : batch.requests) {
    if (!r->active()) continue;
    if (!not_cacheable(r->input(), cache_sampled_).empty()) {
      tier_->count_uncacheable();
      continue;
    }
    asking.push_back(r.get());
    questions.push_back(semantic_question(r->input()));
  }
  if (asking.empty()) return;
  const std::size_t dim = store_->dimension();
  auto vectors = std::make_shared<std::vector<float>>(questions.size() * dim);
  encoder_->embed(questions, vectors->data());
  for (std::size_t i = 0; i < asking.size(); ++i) {
    Request& r = *asking[i];
    if (!r.active()) continue;
    const float* v = vectors->data() + i * dim;
    std::string scope = semantic_scope(r, identity_);
    const SemanticLookup found = store_->find(scope, v, question_features(questions[i]), threshold_, candidates_);
    const Nanos now = clock_.now();
    if (found.answer && tier_->valid(*found.answer)) {
      tier_->count_hit(*found.answer);
      replay(*found.answer, r, now);
      continue;
    }
    if (found.rejected_by) tier_->count_rejection(*found.rejected_by);
    tier_->count_miss();
    r.add_tap(std::make_shared<AnswerRecorder>(
        [store = store_, tier = tier_, scope = std::move(scope), tenant = r.tenant, question = questions[i],
         vector = std::vector<float>(v, v + dim)](std::shared_ptr<const CachedAnswer> a) {
          if (!tier->valid(*a)) return;
          store->put(scope, tenant, question, vector.data(), std::move(a));
          tier->publish();
        },
        max_answer_bytes_, now));
  }
}

}  // namespace sluice::cache
