#include "nodes/retrieval/dense/use_lite_embedder.h"

#include "inference/encoder/shared_encoders.h"

namespace sluice::retrieval {

std::shared_ptr<UseLiteEmbedder> UseLiteEmbedder::open(const std::string& path, int threads) {
  return std::make_shared<UseLiteEmbedder>(inference::shared_sentence_encoder(path, threads));
}

}  // namespace sluice::retrieval
