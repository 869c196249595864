// Analyzer: text -> index terms. The one place that decides what a "term" is, shared by BM25,
// the LSA embedder and the proximity reranker so all three agree.
//
// Steps: UTF-8 decode; split on non-word characters (text/utf8.h); lowercase; drop stopwords;
// stem with libstemmer (Snowball). Tokens longer than `max_token_bytes` are truncated, so a
// pathological input cannot create unbounded terms.
//
// Thread-safety: an Analyzer is immutable after construction and safe to share. libstemmer
// objects are not thread-safe, so each thread lazily gets its own stemmer (thread_local cache).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

namespace sluice::retrieval {

struct AnalyzerOptions {
  // libstemmer algorithm: "porter" (classic Porter, the anchors' setting), "english"
  // (Snowball Porter2), or "" for no stemming.
  std::string stemmer = "porter";
  // "lucene33" (Lucene's English set, the anchors' setting), "none", or "custom" (use `custom`).
  std::string stopwords = "lucene33";
  std::vector<std::string> custom_stopwords;
  std::size_t max_token_bytes = 64;
};

// A term with where it came from, for proximity scoring and highlighting.
struct Token {
  std::string term;           // analysed (lowercased, stemmed)
  std::uint32_t begin = 0;    // byte offsets of the surface form in the input
  std::uint32_t end = 0;
  std::uint32_t position = 0; // word position, counting stopwords (so phrases keep their gaps)
};

class Analyzer {
 public:
  // Throws std::invalid_argument naming the option when the stemmer or stopword set is unknown.
  explicit Analyzer(AnalyzerOptions options = {});

  std::vector<std::string> terms(std::string_view text) const;
  std::vector<Token> tokens(std::string_view text) const;

  const AnalyzerOptions& options() const { return options_; }
  bool is_stopword(std::string_view lowered) const;
  // Stems one lowercased word (identity when stemming is off).
  std::string stem(std::string_view lowered) const;

 private:
  template <class Emit>
  void scan(std::string_view text, Emit&& emit) const;

  AnalyzerOptions options_;
  std::unordered_set<std::string> stopwords_;
};

// Lucene's 33-word English stopword set.
const std::vector<std::string>& lucene_english_stopwords();

}  // namespace sluice::retrieval
