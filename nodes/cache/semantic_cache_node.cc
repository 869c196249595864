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
      identity_{ctx.pipeline_name, ctx.pipeline_fingerprint, ""},
      cache_sampled_(config.cache_sampled()),
      threshold_(static_cast<float>(config.threshold())),
      candidates_(config.candidates()),
      max_answer_bytes_(config.max_bytes() / 8) {
  if (config.store() == "off") {
    std::fprintf(stderr, "sluice: semantic_cache node '%s' is off (store: off): requests pass on uncached\n", ctx.name.c_str());
    return;
  }
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
  if (config.store() == "redis") {
    // Entries other instances store are mirrored into this index; invalidations they make
    // drop the same entries here.
    std::weak_ptr<AnswerCacheTier> tier = tier_;
    std::weak_ptr<SemanticStore> weak_store = store_;
    const Clock* clock = &clock_;
    shared_ = node_redis_tier(
        ctx, "semantic", config.redis_url(), duration_nanos(config.redis_timeout()), limits.ttl, /*mirror=*/true,
        RedisTier::Handlers{
            [weak_store, tier, clock](const v1::CachedAnswerRecord& record, std::uint64_t fill) {
              auto store = weak_store.lock();
              auto t = tier.lock();
              auto answer = answer_from_record(record, *clock);
              if (!store || !t || !answer || static_cast<std::size_t>(record.vector_size()) != store->dimension()) return;
              // Not if this instance invalidated since the read (fill_epoch.h).
              if (store->put(record.key(), record.tenant(), record.question(), record.vector().data(), std::move(answer),
                             [&] { return t->fill_current(fill); })) {
                t->publish();
              }
            },
            [tier](const SharedInvalidation& what) {
              if (auto t = tier.lock()) t->apply_remote(what);
            },
            // The subscriber thread reads only once subscribed: the epoch alone decides.
            [tier] {
              auto t = tier.lock();
              return t ? t->fill_epoch() : std::uint64_t{0};
            }});
    tier_->set_shared(shared_);
  }
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
    QuestionFeatures features = question_features(questions[i]);  // kept for the put after a miss
    const SemanticLookup found = store_->find(scope, v, features, threshold_, candidates_);
    const Nanos now = clock_.now();
    if (found.answer && tier_->valid(*found.answer)) {
      tier_->count_hit(*found.answer);
      replay(*found.answer, r, now);
      continue;
    }
    if (found.rejected_by) tier_->count_rejection(*found.rejected_by);
    tier_->count_miss();
    r.add_tap(std::make_shared<AnswerRecorder>(
        [store = store_, tier = tier_, shared = shared_, clock = &clock_, scope = std::move(scope), tenant = r.tenant,
         question = questions[i], features = std::move(features),
         vector = std::vector<float>(v, v + dim)](std::shared_ptr<const CachedAnswer> a) mutable {
          if (!tier->valid(*a)) return;
          if (shared) {
            v1::CachedAnswerRecord record = answer_record(*a, *clock);
            record.set_key(scope);
            record.set_tenant(tenant);
            record.set_question(question);
            record.mutable_vector()->Add(vector.begin(), vector.end());
            shared->put(shared->new_id(), record);
          }
          store->put(scope, tenant, question, std::move(features), vector.data(), std::move(a));
          tier->publish();
        },
        max_answer_bytes_, now));
  }
}

}  // namespace sluice::cache
