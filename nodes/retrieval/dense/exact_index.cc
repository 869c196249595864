#include "nodes/retrieval/dense/exact_index.h"

#include <tbb/blocked_range.h>
#include <tbb/task_arena.h>

#include <algorithm>
#include <stdexcept>

#include "graph/visible_parallel_for.h"
#include "nodes/retrieval/serial.h"

namespace sluice::retrieval {
namespace simd {
void scan_panels_generic(const float*, std::size_t, std::size_t, const float*, std::size_t, float*);
void scan_panels_avx2(const float*, std::size_t, std::size_t, const float*, std::size_t, float*);
void scan_panels_avx512(const float*, std::size_t, std::size_t, const float*, std::size_t, float*);
}  // namespace simd

namespace {

using ScanFn = void (*)(const float*, std::size_t, std::size_t, const float*, std::size_t, float*);

struct Kernel {
  ScanFn fn;
  const char* name;
};

Kernel pick_kernel() {
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f")) return {simd::scan_panels_avx512, "avx512"};
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return {simd::scan_panels_avx2, "avx2"};
  return {simd::scan_panels_generic, "generic"};
}

const Kernel& kernel() {
  static const Kernel k = pick_kernel();
  return k;
}

constexpr std::size_t kPanel = 16;
// 8 panels = 128 vectors: 192 KiB at 384 dimensions, comfortably inside a 512 KiB-1 MiB L2.
constexpr std::size_t kChunkPanels = 8;
constexpr std::size_t kQueryBlock = 8;

}  // namespace

const char* ExactIndex::kernel_name() { return kernel().name; }

void ExactIndex::add(const float* vectors, std::size_t n) {
  const std::size_t new_size = size_ + n;
  panels_.resize(((new_size + kPanel - 1) / kPanel) * dim_ * kPanel, 0.f);
  for (std::size_t i = 0; i < n; ++i) {
    const std::size_t id = size_ + i;
    float* panel = panels_.data() + (id / kPanel) * dim_ * kPanel;
    const std::size_t lane = id % kPanel;
    for (std::size_t j = 0; j < dim_; ++j) panel[j * kPanel + lane] = vectors[i * dim_ + j];
  }
  size_ = new_size;
}

void ExactIndex::vector(std::size_t i, float* out) const {
  const float* panel = panels_.data() + (i / kPanel) * dim_ * kPanel;
  for (std::size_t j = 0; j < dim_; ++j) out[j] = panel[j * kPanel + i % kPanel];
}

void ExactIndex::scan(const float* queries, std::size_t nq, std::size_t begin_panel,
                      std::size_t end_panel, std::vector<TopK>& tops) const {
  std::vector<float> scores(kQueryBlock * kChunkPanels * kPanel);
  for (std::size_t c = begin_panel; c < end_panel; c += kChunkPanels) {
    const std::size_t np = std::min(kChunkPanels, end_panel - c);
    const std::size_t stride = np * kPanel;
    const std::size_t first_id = c * kPanel;
    const std::size_t valid = std::min(stride, size_ - first_id);
    for (std::size_t q = 0; q < nq; q += kQueryBlock) {
      const std::size_t nb = std::min(kQueryBlock, nq - q);
      kernel().fn(queries + q * dim_, nb, dim_, panels_.data() + c * dim_ * kPanel, np, scores.data());
      for (std::size_t b = 0; b < nb; ++b) {
        TopK& top = tops[q + b];
        const float* s = scores.data() + b * stride;
        float threshold = top.threshold();
        for (std::size_t v = 0; v < valid; ++v) {
          if (s[v] >= threshold) {
            top.push(static_cast<DocIndex>(first_id + v), s[v]);
            threshold = top.threshold();
          }
        }
      }
    }
  }
}

std::vector<std::vector<ScoredDoc>> ExactIndex::search(const float* queries, std::size_t nq,
                                                       std::size_t k) const {
  std::vector<std::vector<ScoredDoc>> out(nq);
  if (nq == 0 || size_ == 0 || k == 0) return out;
  const std::size_t panels = (size_ + kPanel - 1) / kPanel;
  const auto workers = static_cast<std::size_t>(tbb::this_task_arena::max_concurrency());
  if (nq >= kQueryBlock * workers || workers == 1) {
    // Split by queries: each worker streams the corpus once for its share.
    const std::size_t grain = std::max(kQueryBlock, (nq / workers + kQueryBlock - 1) / kQueryBlock * kQueryBlock);
    visible_parallel_for(tbb::blocked_range<std::size_t>(0, nq, grain), [&](const tbb::blocked_range<std::size_t>& r) {
      std::vector<TopK> tops(r.size(), TopK(k));
      scan(queries + r.begin() * dim_, r.size(), 0, panels, tops);
      for (std::size_t i = 0; i < r.size(); ++i) out[r.begin() + i] = tops[i].take_sorted();
    });
    return out;
  }
  // Few queries: split the corpus, merge per-range heaps.
  const std::size_t ranges = std::min(workers, panels);
  std::vector<std::vector<TopK>> partial(ranges);
  visible_parallel_for(std::size_t{0}, ranges, [&](std::size_t r) {
    const std::size_t b = panels * r / ranges, e = panels * (r + 1) / ranges;
    partial[r].assign(nq, TopK(k));
    scan(queries, nq, b, e, partial[r]);
  });
  for (std::size_t q = 0; q < nq; ++q) {
    TopK merged(k);
    for (auto& p : partial) {
      for (const auto& h : p[q].take_sorted()) merged.push(h.doc, h.score);
    }
    out[q] = merged.take_sorted();
  }
  return out;
}

void ExactIndex::save(std::ostream& out) const {
  BinaryWriter w(out);
  w.u32(0x45'58'41'43);  // "EXAC"
  w.u64(dim_);
  w.u64(size_);
  w.vec(panels_);
}

std::unique_ptr<ExactIndex> ExactIndex::load(std::istream& in) {
  BinaryReader r(in, "exact index");
  if (r.u32() != 0x45'58'41'43) throw std::runtime_error("exact index: bad magic");
  auto idx = std::make_unique<ExactIndex>(r.u64());
  idx->size_ = r.u64();
  idx->panels_ = r.vec<float>();
  if (idx->panels_.size() != (idx->size_ + kPanel - 1) / kPanel * idx->dim_ * kPanel) {
    throw std::runtime_error("exact index: panel data does not match its size");
  }
  return idx;
}

}  // namespace sluice::retrieval
