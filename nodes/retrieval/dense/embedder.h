// Embedder: the interface every dense text encoder implements (batch of texts in, vectors out).
// The LSA embedder (lsa_embedder.h) is the default, needing no downloaded weights; a BERT-family
// encoder arrives behind the same interface with the model-engine issue.
//
// Contract: embed() writes texts.size() rows of dimension() floats, row-major, each row L2-unit
// length (or all zeros when the text has nothing the model knows), so inner product = cosine.
// Implementations must make embed() const-callable from many threads at once.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace sluice::retrieval {

class Embedder {
 public:
  virtual ~Embedder() = default;
  virtual std::size_t dimension() const = 0;
  virtual std::string name() const = 0;
  virtual void embed(const std::vector<std::string>& texts, float* out) const = 0;
  // Length of a text in the embedder's own tokens; the chunker packs to this measure.
  virtual std::size_t count_tokens(std::string_view text) const = 0;

  std::vector<float> embed(const std::vector<std::string>& texts) const {
    std::vector<float> out(texts.size() * dimension());
    embed(texts, out.data());
    return out;
  }
};

// Scales each of the n rows of `rows` (dim floats each) to unit L2 length; zero rows stay zero.
void l2_normalize_rows(float* rows, std::size_t n, std::size_t dim);

}  // namespace sluice::retrieval
