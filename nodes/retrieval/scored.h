// ScoredDoc and TopK: the result currency of every retrieval path, and the bounded selection
// that produces it.
//
// Order is total and deterministic: higher score first, then lower document index, so two runs
// (and the exhaustive and MaxScore paths of BM25) return identical lists. TopK keeps at most k
// entries in a min-heap (the worst kept entry on top, so a candidate is tested against it in O(1)).
// Not thread-safe; one TopK per query per thread.
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>
#include <vector>

namespace sluice::retrieval {

using DocIndex = std::uint32_t;  // dense index of a document (or chunk) inside one index

struct ScoredDoc {
  DocIndex doc = 0;
  float score = 0;
};

// True when a ranks before b.
inline bool ranks_before(const ScoredDoc& a, const ScoredDoc& b) {
  return a.score > b.score || (a.score == b.score && a.doc < b.doc);
}

class TopK {
 public:
  explicit TopK(std::size_t k) : k_(k) { heap_.reserve(k); }

  // The score a new candidate must beat to enter (lowest kept score once full).
  float threshold() const {
    return heap_.size() < k_ ? -std::numeric_limits<float>::infinity() : heap_.front().score;
  }
  bool full() const { return heap_.size() >= k_; }

  void push(DocIndex doc, float score) {
    if (k_ == 0) return;
    ScoredDoc c{doc, score};
    if (heap_.size() < k_) {
      heap_.push_back(c);
      std::push_heap(heap_.begin(), heap_.end(), ranks_before);
    } else if (ranks_before(c, heap_.front())) {
      std::pop_heap(heap_.begin(), heap_.end(), ranks_before);
      heap_.back() = c;
      std::push_heap(heap_.begin(), heap_.end(), ranks_before);
    }
  }

  // Best first. Leaves the TopK empty.
  std::vector<ScoredDoc> take_sorted() {
    std::sort(heap_.begin(), heap_.end(), ranks_before);
    std::vector<ScoredDoc> out;
    out.swap(heap_);
    return out;
  }

 private:
  std::size_t k_;
  std::vector<ScoredDoc> heap_;  // heap ordered by ranks_before: front is the worst kept
};

}  // namespace sluice::retrieval
