#include "nodes/retrieval/dense/lsa_embedder.h"

#include <algorithm>
#include <cmath>
#include <stdexcept>

#include "graph/visible_parallel_for.h"
#include "nodes/retrieval/serial.h"
#include "nodes/retrieval/text/utf8.h"

namespace sluice::retrieval {

void l2_normalize_rows(float* rows, std::size_t n, std::size_t dim) {
  for (std::size_t i = 0; i < n; ++i) {
    float* r = rows + i * dim;
    double s = 0;
    for (std::size_t j = 0; j < dim; ++j) s += static_cast<double>(r[j]) * r[j];
    if (s <= 0) continue;
    const auto inv = static_cast<float>(1.0 / std::sqrt(s));
    for (std::size_t j = 0; j < dim; ++j) r[j] *= inv;
  }
}

namespace {

// Term id -> tf for one text, in first-seen order.
std::vector<std::pair<std::uint32_t, std::uint32_t>> count_known(
    const std::vector<std::string>& terms, const std::unordered_map<std::string, std::uint32_t>& vocab) {
  std::vector<std::pair<std::uint32_t, std::uint32_t>> tf;
  std::unordered_map<std::uint32_t, std::size_t> slot;
  for (const auto& t : terms) {
    auto it = vocab.find(t);
    if (it == vocab.end()) continue;
    auto [s, inserted] = slot.try_emplace(it->second, tf.size());
    if (inserted) tf.emplace_back(it->second, 0);
    ++tf[s->second].second;
  }
  return tf;
}

}  // namespace

std::unique_ptr<LsaEmbedder> LsaEmbedder::fit(const std::vector<std::string>& texts,
                                              const LsaOptions& options) {
  if (options.dimensions == 0 || options.dimensions > 4096) {
    throw std::invalid_argument("lsa.dimensions must be in 1..4096");
  }
  std::unique_ptr<LsaEmbedder> e(new LsaEmbedder(options));
  std::vector<std::vector<std::string>> analysed(texts.size());
  visible_parallel_for(std::size_t{0}, texts.size(),
                       [&](std::size_t i) { analysed[i] = e->analyzer_.terms(texts[i]); });
  // Vocabulary in first-seen order, filtered by document frequency.
  std::unordered_map<std::string, std::uint32_t> all;
  std::vector<std::string> names;
  std::vector<std::uint32_t> df;
  for (const auto& terms : analysed) {
    std::unordered_map<std::uint32_t, bool> seen;
    for (const auto& t : terms) {
      auto [it, inserted] = all.try_emplace(t, static_cast<std::uint32_t>(names.size()));
      if (inserted) {
        names.push_back(t);
        df.push_back(0);
      }
      if (seen.emplace(it->second, true).second) ++df[it->second];
    }
  }
  const double n = static_cast<double>(texts.size());
  for (std::uint32_t i = 0; i < names.size(); ++i) {
    if (df[i] < options.min_doc_freq) continue;
    e->vocab_.emplace(names[i], static_cast<std::uint32_t>(e->idf_.size()));
    e->idf_.push_back(static_cast<float>(std::log((1.0 + n) / (1.0 + df[i])) + 1.0));
  }
  SparseRows x;
  x.rows = texts.size();
  x.cols = e->idf_.size();
  for (const auto& terms : analysed) {
    auto tf = count_known(terms, e->vocab_);
    std::sort(tf.begin(), tf.end());
    double norm = 0;
    const std::size_t start = x.val.size();
    for (const auto& [id, count] : tf) {
      const double w = (1.0 + std::log(static_cast<double>(count))) * e->idf_[id];
      x.col.push_back(id);
      x.val.push_back(w);
      norm += w * w;
    }
    if (norm > 0) {
      const double inv = 1.0 / std::sqrt(norm);
      for (std::size_t p = start; p < x.val.size(); ++p) x.val[p] *= inv;
    }
    x.row_ptr.push_back(x.val.size());
  }
  SvdOptions so;
  so.rank = options.dimensions;
  so.oversample = options.oversample;
  so.power_iterations = options.power_iterations;
  so.seed = options.seed;
  const TruncatedSvd svd = randomized_svd(x, so);
  // A corpus smaller than the requested dimension still yields a working (smaller) model; the
  // output keeps the requested width, padding with zeros, so indexes sized from options agree.
  e->dims_ = options.dimensions;
  e->term_vectors_.assign(x.cols * e->dims_, 0.f);
  for (std::size_t j = 0; j < x.cols; ++j) {
    for (std::size_t r = 0; r < svd.rank; ++r) {
      e->term_vectors_[j * e->dims_ + r] = static_cast<float>(svd.right_vectors[j * svd.rank + r]);
    }
  }
  return e;
}

void LsaEmbedder::embed_one(const std::string& text, float* out) const {
  std::fill(out, out + dims_, 0.f);
  const auto tf = count_known(analyzer_.terms(text), vocab_);
  for (const auto& [id, count] : tf) {
    const auto w = static_cast<float>((1.0 + std::log(static_cast<double>(count))) * idf_[id]);
    const float* v = term_vectors_.data() + static_cast<std::size_t>(id) * dims_;
    for (std::size_t c = 0; c < dims_; ++c) out[c] += w * v[c];
  }
  l2_normalize_rows(out, 1, dims_);
}

void LsaEmbedder::embed(const std::vector<std::string>& texts, float* out) const {
  if (texts.size() < 8) {
    for (std::size_t i = 0; i < texts.size(); ++i) embed_one(texts[i], out + i * dims_);
    return;
  }
  visible_parallel_for(std::size_t{0}, texts.size(),
                       [&](std::size_t i) { embed_one(texts[i], out + i * dims_); });
}

std::size_t LsaEmbedder::count_tokens(std::string_view text) const {
  // Every word counts (stopwords too): chunk size is about text length, not index terms.
  return count_words(text);
}

void LsaEmbedder::save(std::ostream& out) const {
  BinaryWriter w(out);
  w.u32(0x4C'53'41'31);  // "LSA1"
  w.u64(dims_);
  w.str(options_.analyzer.stemmer);
  w.str(options_.analyzer.stopwords);
  w.strings(options_.analyzer.custom_stopwords);
  w.u64(options_.analyzer.max_token_bytes);
  std::vector<std::string> names(vocab_.size());
  for (const auto& [name, id] : vocab_) names[id] = name;
  w.strings(names);
  w.vec(idf_);
  w.vec(term_vectors_);
}

std::unique_ptr<LsaEmbedder> LsaEmbedder::load(std::istream& in) {
  BinaryReader r(in, "lsa model");
  if (r.u32() != 0x4C'53'41'31) throw std::runtime_error("lsa model: bad magic");
  LsaOptions o;
  o.dimensions = r.u64();
  o.analyzer.stemmer = r.str();
  o.analyzer.stopwords = r.str();
  o.analyzer.custom_stopwords = r.strings();
  o.analyzer.max_token_bytes = r.u64();
  std::unique_ptr<LsaEmbedder> e(new LsaEmbedder(o));
  e->dims_ = o.dimensions;
  auto names = r.strings();
  for (std::uint32_t i = 0; i < names.size(); ++i) e->vocab_.emplace(std::move(names[i]), i);
  e->idf_ = r.vec<float>();
  e->term_vectors_ = r.vec<float>();
  if (e->idf_.size() != e->vocab_.size() || e->term_vectors_.size() != e->idf_.size() * e->dims_) {
    throw std::runtime_error("lsa model: inconsistent section sizes");
  }
  return e;
}

}  // namespace sluice::retrieval
