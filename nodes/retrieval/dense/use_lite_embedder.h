// UseLiteEmbedder: the pretrained sentence encoder (Universal Sentence Encoder Lite,
// inference/encoder/) behind the Embedder interface, so knowledge bases and `sluice eval` can
// use it where they use LSA. Nothing is fitted: the vectors depend on the text alone, which
// makes every ingest incremental. Its tokens are the encoder's unigram pieces; it reads the
// first 128 of a text (the model's context), which is why chunks meant for it stay short.
//
// Thread-safety: embed() from many threads (the encoder serialises its passes).
#pragma once

#include <memory>
#include <string>

#include "inference/encoder/sentence_encoder.h"
#include "nodes/retrieval/dense/embedder.h"

namespace sluice::retrieval {

class UseLiteEmbedder final : public Embedder {
 public:
  explicit UseLiteEmbedder(std::shared_ptr<inference::SentenceEncoder> encoder) : encoder_(std::move(encoder)) {}
  // The shared encoder of the file at `path` (inference/encoder/shared_encoders.h); throws
  // inference::ModelError when it does not load.
  static std::shared_ptr<UseLiteEmbedder> open(const std::string& path, int threads = 0);

  std::size_t dimension() const override { return std::size_t(encoder_->dimension()); }
  std::string name() const override { return "use-lite"; }
  void embed(const std::vector<std::string>& texts, float* out) const override { encoder_->embed(texts, out); }
  using Embedder::embed;
  std::size_t count_tokens(std::string_view text) const override { return encoder_->count_tokens(text); }

 private:
  std::shared_ptr<inference::SentenceEncoder> encoder_;
};

}  // namespace sluice::retrieval
