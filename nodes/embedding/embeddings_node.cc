#include "nodes/embedding/embeddings_node.h"

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <stdexcept>

#include "graph/embedding_result.h"
#include "inference/encoder/encoder_location.h"
#include "inference/encoder/shared_encoders.h"
#include "inference/model_error.h"

namespace sluice {

std::string encoder_path_from(const std::string& model, const std::string& base_dir) {
  if (model.empty()) return inference::default_encoder_path();
  std::filesystem::path p(model);
  if (p.is_relative() && !base_dir.empty()) p = std::filesystem::path(base_dir) / p;
  return p.string();
}

EmbeddingsNode::EmbeddingsNode(const EmbeddingsConfig& config, const NodeContext& ctx)
    : max_batch_(config.max_batch()), max_inputs_(config.max_inputs()), max_input_chars_(config.max_input_chars()),
      clock_(ctx.clock) {
  const std::string path = encoder_path_from(config.model(), ctx.base_dir);
  if (!std::filesystem::exists(path) && config.optional()) {
    std::fprintf(stderr, "sluice: embeddings node '%s' is off: no model at %s (optional: true)\n", ctx.name.c_str(), path.c_str());
    return;
  }
  if (!std::filesystem::exists(path))
    throw std::invalid_argument("model '" + path + "' does not exist (scripts/setup-encoder writes it, or set model / SLUICE_ENCODER)");
  try {
    encoder_ = inference::shared_sentence_encoder(path, int(config.threads()));
  } catch (const inference::ModelError& e) {
    throw std::invalid_argument(std::string("model: ") + e.what());
  }
  if (ctx.metrics) {
    const Labels l{{"pipeline", ctx.pipeline_name}, {"node", ctx.name}};
    texts_ = &ctx.metrics->counter("sluice_embeddings_texts_total", "Texts embedded by an embeddings node", l);
    tokens_ = &ctx.metrics->counter("sluice_embeddings_tokens_total", "Tokens of the texts an embeddings node embedded", l);
    batch_texts_ = &ctx.metrics->histogram("sluice_embeddings_batch_texts", "Texts per encoder call of an embeddings node", l,
                                           Histogram::size_buckets());
  }
}

void EmbeddingsNode::process(Batch& batch) {
  if (!encoder_) return;
  const Nanos now = clock_ ? clock_->now() : 0;
  std::vector<RequestPtr> requests;
  std::vector<std::vector<int32_t>> ids;
  std::vector<int> tokens;  // per request
  for (const RequestPtr& r : batch.requests) {
    if (!r->active() || r->input().kind != RequestInput::Kind::kEmbed) continue;
    const auto& inputs = r->input().inputs;
    if (inputs.size() > max_inputs_) {
      r->complete(Status::Error(StatusCode::kInvalidArgument,
                                "'input' has " + std::to_string(inputs.size()) + " texts; this server embeds at most " +
                                    std::to_string(max_inputs_) + " per request (the embeddings node's max_inputs)")
                      .with_api("invalid_value", "input"),
                  now);
      continue;
    }
    bool refused = false;
    for (size_t i = 0; i < inputs.size() && !refused; ++i) {
      if (inputs[i].size() <= max_input_chars_) continue;
      const std::string at = "input[" + std::to_string(i) + "]";
      r->complete(Status::Error(StatusCode::kInvalidArgument,
                                "'" + at + "' is " + std::to_string(inputs[i].size()) + " bytes; this server embeds at most " +
                                    std::to_string(max_input_chars_) + " per text (the embeddings node's max_input_chars)")
                      .with_api("invalid_value", at),
                  now);
      refused = true;
    }
    if (refused) continue;
    int count = 0;
    for (const std::string& text : inputs) {
      std::vector<int32_t> t = encoder_->model().tokenizer().encode(text);
      count += int(t.size());
      ids.push_back(std::move(t));
    }
    requests.push_back(r);
    tokens.push_back(count);
  }
  if (requests.empty()) return;
  const size_t dim = size_t(encoder_->dimension());
  std::vector<float> vectors(ids.size() * dim);
  for (size_t at = 0; at < ids.size(); at += max_batch_) {
    const size_t n = std::min(max_batch_, ids.size() - at);
    const std::vector<std::vector<int32_t>> group(ids.begin() + long(at), ids.begin() + long(at + n));
    encoder_->embed_ids(group, vectors.data() + at * dim);  // cuts each text to the context length
    if (batch_texts_) batch_texts_->observe(double(n));
  }
  size_t row = 0;
  const Nanos done = clock_ ? clock_->now() : 0;
  // JSON has no NaN or infinity; only a damaged model file gives one, and it must not pass as a vector.
  for (float v : vectors) {
    if (std::isfinite(v)) continue;
    for (const RequestPtr& r : requests)
      r->complete(Status::Error(StatusCode::kInternal, "the sentence encoder produced a non-finite value (is the model file damaged?)"),
                  done);
    return;
  }
  for (size_t i = 0; i < requests.size(); ++i) {
    const size_t n = requests[i]->input().inputs.size();
    auto result = std::make_unique<EmbeddingResult>();
    result->dimension = int(dim);
    result->vectors.assign(vectors.begin() + long(row * dim), vectors.begin() + long((row + n) * dim));
    result->prompt_tokens = tokens[i];
    row += n;
    requests[i]->usage.prompt_tokens = tokens[i];
    // Counted before completing, so a client that reads /metrics after its answer sees its texts.
    if (texts_) texts_->inc(double(n));
    if (tokens_) tokens_->inc(double(tokens[i]));
    requests[i]->emit_owned_event(kEmbeddingEvent, embedding_event_json(*result, requests[i]->input().embeddings_base64));
    requests[i]->complete(Status::Ok(), done);
  }
}

}  // namespace sluice
