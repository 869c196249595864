#include "nodes/retrieval/text/analyzer.h"

#include <libstemmer.h>

#include <map>
#include <memory>
#include <stdexcept>

#include "nodes/retrieval/text/utf8.h"

namespace sluice::retrieval {
namespace {

struct StemmerDeleter {
  void operator()(sb_stemmer* s) const { sb_stemmer_delete(s); }
};

// One stemmer per (thread, algorithm): libstemmer keeps per-call state inside the object.
sb_stemmer* thread_stemmer(const std::string& algorithm) {
  thread_local std::map<std::string, std::unique_ptr<sb_stemmer, StemmerDeleter>> stemmers;
  auto it = stemmers.find(algorithm);
  if (it == stemmers.end()) {
    it = stemmers.emplace(algorithm, std::unique_ptr<sb_stemmer, StemmerDeleter>(
                                         sb_stemmer_new(algorithm.c_str(), "UTF_8")))
             .first;
  }
  return it->second.get();
}

}  // namespace

const std::vector<std::string>& lucene_english_stopwords() {
  static const std::vector<std::string> words = {
      "a",     "an",   "and",  "are",   "as",    "at",   "be",   "but",  "by",
      "for",   "if",   "in",   "into",  "is",    "it",   "no",   "not",  "of",
      "on",    "or",   "such", "that",  "the",   "their", "then", "there", "these",
      "they",  "this", "to",   "was",   "will",  "with"};
  return words;
}

Analyzer::Analyzer(AnalyzerOptions options) : options_(std::move(options)) {
  if (!options_.stemmer.empty()) {
    sb_stemmer* probe = sb_stemmer_new(options_.stemmer.c_str(), "UTF_8");
    if (probe == nullptr) {
      throw std::invalid_argument("analyzer.stemmer: unknown libstemmer algorithm '" +
                                  options_.stemmer + "' (try porter, english or empty)");
    }
    sb_stemmer_delete(probe);
  }
  if (options_.stopwords == "lucene33") {
    stopwords_.insert(lucene_english_stopwords().begin(), lucene_english_stopwords().end());
  } else if (options_.stopwords == "custom") {
    stopwords_.insert(options_.custom_stopwords.begin(), options_.custom_stopwords.end());
  } else if (options_.stopwords != "none") {
    throw std::invalid_argument("analyzer.stopwords: unknown set '" + options_.stopwords +
                                "' (lucene33, none or custom)");
  }
  if (options_.max_token_bytes == 0) {
    throw std::invalid_argument("analyzer.max_token_bytes must be > 0");
  }
}

bool Analyzer::is_stopword(std::string_view lowered) const {
  return !stopwords_.empty() && stopwords_.count(std::string(lowered)) > 0;
}

std::string Analyzer::stem(std::string_view lowered) const {
  if (options_.stemmer.empty()) return std::string(lowered);
  sb_stemmer* s = thread_stemmer(options_.stemmer);
  const sb_symbol* out = sb_stemmer_stem(s, reinterpret_cast<const sb_symbol*>(lowered.data()),
                                         static_cast<int>(lowered.size()));
  if (out == nullptr) return std::string(lowered);  // out of memory inside libstemmer
  return std::string(reinterpret_cast<const char*>(out),
                     static_cast<std::size_t>(sb_stemmer_length(s)));
}

template <class Emit>
void Analyzer::scan(std::string_view text, Emit&& emit) const {
  std::string word;
  std::uint32_t begin = 0;
  std::uint32_t position = 0;
  bool in_word = false;
  auto flush = [&](std::size_t end) {
    if (!in_word) return;
    in_word = false;
    const std::uint32_t pos = position++;
    if (is_stopword(word)) return;
    emit(stem(word), begin, static_cast<std::uint32_t>(end), pos);
  };
  std::size_t i = 0;
  while (i < text.size()) {
    std::size_t len = 1;
    const char32_t cp = utf8_decode(text, i, len);
    if (is_word_char(cp)) {
      if (!in_word) {
        in_word = true;
        word.clear();
        begin = static_cast<std::uint32_t>(i);
      }
      if (word.size() < options_.max_token_bytes) utf8_append(word, unicode_lower(cp));
    } else {
      flush(i);
    }
    i += len;
  }
  flush(text.size());
}

std::vector<std::string> Analyzer::terms(std::string_view text) const {
  std::vector<std::string> out;
  scan(text, [&](std::string&& t, std::uint32_t, std::uint32_t, std::uint32_t) {
    out.push_back(std::move(t));
  });
  return out;
}

std::vector<Token> Analyzer::tokens(std::string_view text) const {
  std::vector<Token> out;
  scan(text, [&](std::string&& t, std::uint32_t b, std::uint32_t e, std::uint32_t p) {
    out.push_back(Token{std::move(t), b, e, p});
  });
  return out;
}

}  // namespace sluice::retrieval
