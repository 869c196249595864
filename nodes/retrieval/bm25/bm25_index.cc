#include "nodes/retrieval/bm25/bm25_index.h"

#include <tbb/blocked_range.h>

#include <algorithm>
#include <cmath>
#include <istream>
#include <numeric>
#include <ostream>
#include <stdexcept>

#include "graph/visible_parallel_for.h"
#include "nodes/retrieval/serial.h"

namespace sluice::retrieval {

DocIndex Bm25Index::Builder::add(const std::vector<std::string>& terms) {
  const auto doc = static_cast<DocIndex>(doc_len_.size());
  doc_len_.push_back(static_cast<std::uint32_t>(terms.size()));
  std::unordered_map<std::uint32_t, std::uint32_t> tf;
  for (const auto& t : terms) {
    auto [it, inserted] = vocab_.try_emplace(t, static_cast<std::uint32_t>(postings_.size()));
    if (inserted) postings_.emplace_back();
    ++tf[it->second];
  }
  for (const auto& [term, count] : tf) postings_[term].emplace_back(doc, count);
  return doc;
}

Bm25Index Bm25Index::Builder::build(Bm25Params params) const {
  Bm25Index idx;
  idx.params_ = params;
  idx.vocab_ = vocab_;
  idx.doc_len_ = doc_len_;
  const double n = static_cast<double>(doc_len_.size());
  const double total = std::accumulate(doc_len_.begin(), doc_len_.end(), 0.0);
  const double avg_len = n > 0 && total > 0 ? total / n : 1.0;
  idx.term_offset_.assign(postings_.size() + 1, 0);
  for (std::size_t t = 0; t < postings_.size(); ++t) {
    idx.term_offset_[t + 1] = idx.term_offset_[t] + postings_[t].size();
  }
  idx.posting_doc_.resize(idx.term_offset_.back());
  idx.posting_impact_.resize(idx.term_offset_.back());
  idx.term_max_impact_.assign(postings_.size(), 0.f);
  const double k1 = params.k1, b = params.b;
  for (std::size_t t = 0; t < postings_.size(); ++t) {
    auto list = postings_[t];
    std::sort(list.begin(), list.end());
    const double df = static_cast<double>(list.size());
    const double idf = std::log(1.0 + (n - df + 0.5) / (df + 0.5));
    std::uint64_t o = idx.term_offset_[t];
    float best = 0;
    for (const auto& [doc, tf] : list) {
      const double norm = k1 * (1.0 - b + b * doc_len_[doc] / avg_len);
      const auto impact = static_cast<float>(idf * tf * (k1 + 1.0) / (tf + norm));
      idx.posting_doc_[o] = doc;
      idx.posting_impact_[o] = impact;
      best = std::max(best, impact);
      ++o;
    }
    idx.term_max_impact_[t] = best;
  }
  return idx;
}

std::uint32_t Bm25Index::doc_freq(const std::string& term) const {
  auto it = vocab_.find(term);
  if (it == vocab_.end()) return 0;
  return static_cast<std::uint32_t>(term_offset_[it->second + 1] - term_offset_[it->second]);
}

std::vector<Bm25Index::QueryTerm> Bm25Index::resolve(
    const std::vector<std::string>& query_terms) const {
  std::vector<QueryTerm> q;
  for (const auto& t : query_terms) {
    auto it = vocab_.find(t);
    if (it == vocab_.end()) continue;
    auto same = std::find_if(q.begin(), q.end(), [&](const QueryTerm& x) { return x.id == it->second; });
    if (same != q.end()) {
      same->weight += 1;
    } else {
      q.push_back(QueryTerm{it->second, 1.f, 0.f});
    }
  }
  for (auto& x : q) x.max_impact = x.weight * term_max_impact_[x.id];
  return q;
}

std::vector<ScoredDoc> Bm25Index::search(const std::vector<std::string>& query_terms,
                                         std::size_t k, Strategy strategy) const {
  auto q = resolve(query_terms);
  if (q.empty() || k == 0) return {};
  if (strategy == Strategy::kAuto) {
    strategy = num_docs() >= kMaxScoreMinDocs ? Strategy::kMaxScore : Strategy::kExhaustive;
  }
  return strategy == Strategy::kMaxScore ? search_maxscore(std::move(q), k)
                                         : search_exhaustive(q, k);
}

std::vector<ScoredDoc> Bm25Index::search_exhaustive(const std::vector<QueryTerm>& q,
                                                    std::size_t k) const {
  // Scratch reused across queries on this thread; `touched` lists the non-zero slots so
  // clearing costs what the query touched, not the corpus size.
  thread_local std::vector<float> acc;
  thread_local std::vector<DocIndex> touched;
  if (acc.size() < num_docs()) acc.assign(num_docs(), 0.f);
  touched.clear();
  for (const auto& t : q) {
    const std::uint64_t end = term_offset_[t.id + 1];
    for (std::uint64_t o = term_offset_[t.id]; o < end; ++o) {
      const DocIndex d = posting_doc_[o];
      if (acc[d] == 0.f) touched.push_back(d);
      acc[d] += t.weight * posting_impact_[o];
    }
  }
  TopK top(k);
  for (DocIndex d : touched) {
    // A zero impact (df == N edge cases) would re-enter `touched`; harmless since we clear here.
    if (acc[d] != 0.f) top.push(d, acc[d]);
    acc[d] = 0.f;
  }
  return top.take_sorted();
}

std::vector<ScoredDoc> Bm25Index::search_maxscore(std::vector<QueryTerm> q, std::size_t k) const {
  // Terms in ascending upper bound; prefix[i] = sum of bounds of terms [0, i].
  std::sort(q.begin(), q.end(), [](const QueryTerm& a, const QueryTerm& b) {
    return a.max_impact < b.max_impact;
  });
  const std::size_t n = q.size();
  std::vector<float> prefix(n);
  float run = 0;
  for (std::size_t i = 0; i < n; ++i) prefix[i] = (run += q[i].max_impact);
  std::vector<std::uint64_t> cur(n), end(n);
  for (std::size_t i = 0; i < n; ++i) {
    cur[i] = term_offset_[q[i].id];
    end[i] = term_offset_[q[i].id + 1];
  }
  constexpr DocIndex kDone = UINT32_MAX;
  auto doc_at = [&](std::size_t i) { return cur[i] < end[i] ? posting_doc_[cur[i]] : kDone; };
  TopK top(k);
  std::size_t first_essential = 0;  // terms [0, first_essential) are non-essential
  while (first_essential < n) {
    DocIndex d = kDone;
    for (std::size_t i = first_essential; i < n; ++i) d = std::min(d, doc_at(i));
    if (d == kDone) break;
    float score = 0;
    for (std::size_t i = first_essential; i < n; ++i) {
      if (doc_at(i) == d) {
        score += q[i].weight * posting_impact_[cur[i]];
        ++cur[i];
      }
    }
    // Non-essential terms, largest bound first, only while they could still matter. The
    // comparison mirrors TopK's: equal score with a lower doc index still enters.
    for (std::size_t i = first_essential; i-- > 0;) {
      if (top.full() && score + prefix[i] < top.threshold()) break;
      auto* base = posting_doc_.data();
      auto* p = std::lower_bound(base + cur[i], base + end[i], d);
      cur[i] = static_cast<std::uint64_t>(p - base);
      if (cur[i] < end[i] && *p == d) score += q[i].weight * posting_impact_[cur[i]];
    }
    top.push(d, score);
    if (top.full()) {
      const float theta = top.threshold();
      while (first_essential < n && prefix[first_essential] < theta) ++first_essential;
    }
  }
  return top.take_sorted();
}

std::vector<std::vector<ScoredDoc>> Bm25Index::search_batch(
    const std::vector<std::vector<std::string>>& queries, std::size_t k, Strategy strategy) const {
  std::vector<std::vector<ScoredDoc>> out(queries.size());
  visible_parallel_for(tbb::blocked_range<std::size_t>(0, queries.size(), 16),
                       [&](const tbb::blocked_range<std::size_t>& r) {
                         for (std::size_t i = r.begin(); i != r.end(); ++i) {
                           out[i] = search(queries[i], k, strategy);
                         }
                       });
  return out;
}

void Bm25Index::save(std::ostream& out) const {
  BinaryWriter w(out);
  w.u32(0x42'4D'32'35);  // "BM25"
  w.f32(params_.k1);
  w.f32(params_.b);
  std::vector<std::string> names(vocab_.size());
  for (const auto& [name, id] : vocab_) names[id] = name;
  w.strings(names);
  w.vec(term_offset_);
  w.vec(posting_doc_);
  w.vec(posting_impact_);
  w.vec(term_max_impact_);
  w.vec(doc_len_);
}

Bm25Index Bm25Index::load(std::istream& in) {
  BinaryReader r(in, "bm25 index");
  if (r.u32() != 0x42'4D'32'35) throw std::runtime_error("bm25 index: bad magic");
  Bm25Index idx;
  idx.params_.k1 = r.f32();
  idx.params_.b = r.f32();
  auto names = r.strings();
  for (std::uint32_t i = 0; i < names.size(); ++i) idx.vocab_.emplace(std::move(names[i]), i);
  idx.term_offset_ = r.vec<std::uint64_t>();
  idx.posting_doc_ = r.vec<DocIndex>();
  idx.posting_impact_ = r.vec<float>();
  idx.term_max_impact_ = r.vec<float>();
  idx.doc_len_ = r.vec<std::uint32_t>();
  const std::size_t nt = idx.vocab_.size();
  if (idx.term_offset_.size() != nt + 1 || idx.term_max_impact_.size() != nt ||
      idx.term_offset_.back() != idx.posting_doc_.size() ||
      idx.posting_doc_.size() != idx.posting_impact_.size()) {
    throw std::runtime_error("bm25 index: inconsistent section sizes");
  }
  for (DocIndex d : idx.posting_doc_) {
    if (d >= idx.doc_len_.size()) throw std::runtime_error("bm25 index: posting beyond doc count");
  }
  return idx;
}

}  // namespace sluice::retrieval
