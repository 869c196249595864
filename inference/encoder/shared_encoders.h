// shared_sentence_encoder: one SentenceEncoder per (model file, threads) in the process, so the
// `embeddings` node, the knowledge bases that embed with the same model and /v1/embeddings
// map the weights once and share one backend (whose passes run one at a time). Entries live
// while anyone holds them.
// Thread-safety: callable from any thread. Throws ModelError when the file does not load.
#pragma once

#include <memory>
#include <string>

#include "inference/encoder/sentence_encoder.h"

namespace sluice::inference {

std::shared_ptr<SentenceEncoder> shared_sentence_encoder(const std::string& path, int threads);

}  // namespace sluice::inference
