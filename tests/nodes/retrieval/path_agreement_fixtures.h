// Test fixtures for path agreement (kb/path_agreement.h): a corpus whose chunks fall in topics,
// a dense model fitted to it (LSA, which agrees with BM25) and one that knows nothing of it (a
// hash of the text, which does not), and snapshots over either.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "nodes/retrieval/dense/lsa_embedder.h"
#include "nodes/retrieval/kb/kb_snapshot.h"

namespace sluice::retrieval {

// A dense model that knows nothing of the corpus: each text's vector is a hash of its bytes.
class HashEmbedder final : public Embedder {
 public:
  std::size_t dimension() const override { return 16; }
  std::string name() const override { return "hash-16"; }
  std::size_t count_tokens(std::string_view text) const override { return text.size(); }
  void embed(const std::vector<std::string>& texts, float* out) const override {
    for (std::size_t i = 0; i < texts.size(); ++i) {
      std::size_t h = std::hash<std::string>{}(texts[i]);
      for (std::size_t c = 0; c < 16; ++c) {
        h = h * 6364136223846793005ULL + 1442695040888963407ULL;
        out[i * 16 + c] = static_cast<float>(static_cast<double>(h >> 11) / 9007199254740992.0 - 0.5);
      }
    }
    l2_normalize_rows(out, texts.size(), 16);
  }
};

// Texts on the first `topics` of 12 topics (at most 12), 10 a topic; each topic's texts share
// its words, so a corpus-fitted model and BM25 both find a text's topic-mates. Ids d0, d1, ...
struct TopicalText {
  std::string id;
  std::string text;
};
inline std::vector<TopicalText> topical_texts(std::size_t topics = 12) {
  static const std::vector<std::vector<std::string>> kTopics = {
      {"turbine", "blade", "stall", "compressor", "airflow"}, {"boundary", "layer", "viscous", "laminar", "transition"},
      {"compiler", "parser", "grammar", "syntax", "token"},   {"matrix", "sparse", "eigenvalue", "pivot", "solver"},
      {"queue", "scheduler", "priority", "latency", "shed"},  {"cache", "eviction", "hit", "miss", "capacity"},
      {"kafka", "partition", "offset", "consumer", "broker"}, {"embedding", "vector", "cosine", "encoder", "dense"},
      {"shock", "wave", "supersonic", "mach", "nozzle"},      {"heat", "transfer", "convection", "plate", "flux"},
      {"graph", "vertex", "edge", "path", "tree"},            {"sort", "merge", "heap", "quick", "comparison"}};
  std::vector<TopicalText> out;
  for (std::size_t t = 0; t < topics && t < kTopics.size(); ++t) {
    for (std::size_t i = 0; i < 10; ++i) {
      std::string text;
      for (std::size_t w = 0; w < 12; ++w) text += kTopics[t][(i + w * (t + 1)) % 5] + " ";
      text += "note" + std::to_string(t * 10 + i);
      out.push_back({"d" + std::to_string(t * 10 + i), std::move(text)});
    }
  }
  return out;
}

// 120 chunks on 12 topics (topical_texts).
inline std::vector<Chunk> topical_corpus() {
  std::vector<Chunk> chunks;
  for (auto& t : topical_texts()) {
    const auto size = static_cast<std::uint32_t>(t.text.size());
    chunks.push_back(Chunk{t.id, "", std::move(t.text), 0, size, 0});
  }
  return chunks;
}

inline std::shared_ptr<const KbSnapshot> snapshot_with(std::shared_ptr<const Embedder> embedder, std::vector<Chunk> chunks,
                                                       std::uint64_t version = 1) {
  std::vector<std::string> texts;
  for (const auto& c : chunks) texts.push_back(index_text(c));
  const auto vectors = embedder->embed(texts);
  return KbSnapshot::build(std::move(chunks), vectors, std::move(embedder), IndexOptions{}, version);
}

inline std::shared_ptr<const Embedder> lsa_on(const std::vector<Chunk>& chunks) {
  std::vector<std::string> texts;
  for (const auto& c : chunks) texts.push_back(index_text(c));
  LsaOptions o;
  o.dimensions = 24;
  return LsaEmbedder::fit(texts, o);
}

}  // namespace sluice::retrieval
