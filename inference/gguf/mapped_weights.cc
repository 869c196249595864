#include "inference/gguf/mapped_weights.h"

#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>

#include "kernels/quant_blocks.h"

namespace sluice::inference {
namespace {

// Drops the mapped file pages wholly inside [p, p + bytes) from this process.
void release_file_pages(const void* p, size_t bytes) {
  const uintptr_t page = uintptr_t(sysconf(_SC_PAGESIZE));
  const uintptr_t begin = (uintptr_t(p) + page - 1) / page * page, end = (uintptr_t(p) + bytes) / page * page;
  if (end > begin) madvise(reinterpret_cast<void*>(begin), end - begin, MADV_DONTNEED);
}

}  // namespace

std::unique_ptr<kernels::PreparedWeights> prepare_mapped_weights(kernels::BackendKind backend,
                                                                 const std::vector<kernels::MatrixView*>& views) {
  std::vector<kernels::MatrixView> before;
  for (const kernels::MatrixView* v : views) before.push_back(*v);
  auto prepared = kernels::prepare_matmul_weights(backend, views.data(), views.size());
  if (!prepared) return nullptr;
  for (size_t i = 0; i < views.size(); ++i)
    if (views[i]->data != before[i].data)
      release_file_pages(before[i].data, size_t(kernels::dtype_row_bytes(before[i].type, before[i].cols) * before[i].rows));
  return prepared;
}

}  // namespace sluice::inference
