#include "nodes/retrieval/dense/hnsw_index.h"

#include <hnswlib/hnswlib.h>
#include <tbb/blocked_range.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <unistd.h>

#include "graph/visible_parallel_for.h"
#include "nodes/retrieval/serial.h"

namespace sluice::retrieval {

struct HnswIndex::Impl {
  explicit Impl(std::size_t dim) : space(dim) {}
  hnswlib::InnerProductSpace space;
  std::unique_ptr<hnswlib::HierarchicalNSW<float>> graph;
};

HnswIndex::HnswIndex(std::size_t dimension, HnswOptions options)
    : dim_(dimension), options_(options), impl_(std::make_unique<Impl>(dimension)) {
  if (options_.m < 2 || options_.ef_construction == 0 || options_.ef_search == 0) {
    throw std::invalid_argument("hnsw: m must be >= 2 and ef_construction, ef_search > 0");
  }
  impl_->graph = std::make_unique<hnswlib::HierarchicalNSW<float>>(
      &impl_->space, 1024, options_.m, options_.ef_construction, options_.seed);
  impl_->graph->setEf(options_.ef_search);
}

HnswIndex::~HnswIndex() = default;

void HnswIndex::set_ef_search(std::size_t ef) {
  if (ef == 0) throw std::invalid_argument("hnsw: ef_search must be > 0");
  options_.ef_search = ef;
  impl_->graph->setEf(ef);
}

std::size_t HnswIndex::size() const { return impl_->graph->cur_element_count; }

void HnswIndex::mark_removed(std::size_t i) { impl_->graph->markDelete(static_cast<hnswlib::labeltype>(i)); }

void HnswIndex::add(const float* vectors, std::size_t n) {
  auto& g = *impl_->graph;
  const std::size_t first = g.cur_element_count;
  if (first + n > g.max_elements_) g.resizeIndex(std::max(first + n, g.max_elements_ * 2));
  // The first point seeds the graph alone, as hnswlib's own parallel insert does.
  std::size_t start = 0;
  if (first == 0 && n > 0) {
    g.addPoint(vectors, static_cast<hnswlib::labeltype>(first));
    start = 1;
  }
  auto insert = [&](std::size_t b, std::size_t e) {
    for (std::size_t i = b; i != e; ++i) g.addPoint(vectors + i * dim_, static_cast<hnswlib::labeltype>(first + i));
  };
  if (!options_.parallel_insert) {
    insert(start, n);
    return;
  }
  visible_parallel_for(tbb::blocked_range<std::size_t>(start, n, 64),
                       [&](const tbb::blocked_range<std::size_t>& r) { insert(r.begin(), r.end()); });
}

std::vector<std::vector<ScoredDoc>> HnswIndex::search(const float* queries, std::size_t nq,
                                                      std::size_t k) const {
  std::vector<std::vector<ScoredDoc>> out(nq);
  if (size() == 0 || k == 0) return out;
  auto one = [&](std::size_t q) {
    auto heap = impl_->graph->searchKnn(queries + q * dim_, std::min(k, size()));
    auto& hits = out[q];
    hits.resize(heap.size());
    for (std::size_t i = heap.size(); i-- > 0;) {  // the heap pops worst first
      hits[i] = ScoredDoc{static_cast<DocIndex>(heap.top().second), 1.f - heap.top().first};
      heap.pop();
    }
    std::sort(hits.begin(), hits.end(), ranks_before);
  };
  if (nq == 1) {
    one(0);
  } else {
    visible_parallel_for(std::size_t{0}, nq, one);
  }
  return out;
}

void HnswIndex::vector(std::size_t i, float* out) const {
  const auto v = impl_->graph->getDataByLabel<float>(static_cast<hnswlib::labeltype>(i));
  std::copy(v.begin(), v.end(), out);
}

// hnswlib persists only to a named file, so the graph goes through a temporary file and is
// embedded in our stream as a length-prefixed blob.
void HnswIndex::save(std::ostream& out) const {
  char path[] = "/tmp/sluice-hnsw-XXXXXX";
  const int fd = mkstemp(path);
  if (fd < 0) throw std::runtime_error("hnsw: cannot create a temporary file");
  close(fd);
  impl_->graph->saveIndex(path);
  std::ifstream in(path, std::ios::binary);
  std::stringstream blob;
  blob << in.rdbuf();
  std::remove(path);
  BinaryWriter w(out);
  w.u32(0x48'4E'53'57);  // "HNSW"
  w.u64(dim_);
  w.u64(options_.m);
  w.u64(options_.ef_construction);
  w.u64(options_.ef_search);
  w.str(blob.str());
}

std::unique_ptr<HnswIndex> HnswIndex::load(std::istream& in) {
  BinaryReader r(in, "hnsw index");
  if (r.u32() != 0x48'4E'53'57) throw std::runtime_error("hnsw index: bad magic");
  const std::size_t dim = r.u64();
  HnswOptions o;
  o.m = r.u64();
  o.ef_construction = r.u64();
  o.ef_search = r.u64();
  const std::string blob = r.str();
  auto idx = std::make_unique<HnswIndex>(dim, o);
  char path[] = "/tmp/sluice-hnsw-XXXXXX";
  const int fd = mkstemp(path);
  if (fd < 0) throw std::runtime_error("hnsw: cannot create a temporary file");
  close(fd);
  {
    std::ofstream tmp(path, std::ios::binary);
    tmp.write(blob.data(), static_cast<std::streamsize>(blob.size()));
  }
  try {
    idx->impl_->graph = std::make_unique<hnswlib::HierarchicalNSW<float>>(&idx->impl_->space, path);
  } catch (...) {
    std::remove(path);
    throw std::runtime_error("hnsw index: graph blob does not load");
  }
  std::remove(path);
  idx->impl_->graph->setEf(o.ef_search);
  return idx;
}

}  // namespace sluice::retrieval
