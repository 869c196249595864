// EmbeddingsNode (`embeddings`): answers RequestInput::Kind::kEmbed requests (POST /v1/embeddings,
// Kafka embedding jobs) with the pretrained sentence encoder; every other request passes on
// untouched, so the node can sit on the path of a pipeline's other work (the default pipeline
// puts it right after the batcher).
//
// Per batch: each embedding request is checked against max_inputs and max_input_chars (a
// violation completes it with 400 invalid_value naming `input` or `input[i]` and the limit);
// the texts of all the batch's requests are embedded together, max_batch texts per encoder
// call; each request gets its rows as one "embeddings" event (graph/embedding_result.h, in
// the encoding it asked for) and usage.prompt_tokens (its texts' tokens), then completes. A request cancelled or past its deadline meanwhile is left
// to the runtime. Metrics: sluice_embeddings_texts_total, sluice_embeddings_tokens_total and
// sluice_embeddings_batch_texts (texts per encoder call) per node.
//
// With `optional` and no model file the node is off: it passes everything on and
// answers_embeddings() is false, so the HTTP source answers 404 itself.
//
// Thread-safety: process() may run on several workers; the encoder serialises its passes.
#pragma once

#include <memory>
#include <string>

#include "graph/metrics.h"
#include "graph/node.h"
#include "graph/schema.h"
#include "inference/encoder/sentence_encoder.h"

namespace sluice {

class EmbeddingsNode final : public SyncNode {
 public:
  // Loads the encoder (shared with other nodes naming the same file and threads). Throws
  // std::invalid_argument naming the file and the problem.
  EmbeddingsNode(const EmbeddingsConfig& config, const NodeContext& ctx);

  void process(Batch& batch) override;
  bool answers_embeddings() const override { return encoder_ != nullptr; }

 private:
  std::shared_ptr<inference::SentenceEncoder> encoder_;
  size_t max_batch_, max_inputs_, max_input_chars_;
  Clock* clock_;
  Counter* texts_ = nullptr;
  Counter* tokens_ = nullptr;
  Histogram* batch_texts_ = nullptr;
};

// The encoder file a config names: `model` relative to base_dir, else default_encoder_path().
std::string encoder_path_from(const std::string& model, const std::string& base_dir);

}  // namespace sluice
