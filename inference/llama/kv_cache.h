// Paged key/value storage. KvBlockPool owns, per layer, a key pool and a value pool of
// `num_blocks` blocks of `block_size` positions (F32 or F16 elements); KvSequence is one sequence's block table,
// taking blocks from the pool as it grows and returning them when destroyed. The layout is the
// one kernels/backend.h's attention reads (KvLayerView) and the serving engine schedules.
//
// Thread-safety: a pool and its sequences are used by one thread at a time.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "kernels/backend.h"
#include "kernels/backend_buffer.h"

namespace sluice::inference {

// Bytes one KV element takes (F32 4, F16 2); throws std::invalid_argument for other types.
size_t kv_element_bytes(kernels::DType type);
// Bytes of keys and values one block of `block_size` positions holds across all layers.
inline size_t kv_block_bytes(int n_layers, int kv_dim, int block_size, kernels::DType type) {
  return size_t(n_layers) * 2 * size_t(block_size) * size_t(kv_dim) * kv_element_bytes(type);
}

class KvBlockPool {
 public:
  // `memory`: the backend whose operations read the pools; a device-memory backend's pools are
  // its memory (the KV budget in bytes is then device memory). Null or a host-memory backend:
  // host memory.
  KvBlockPool(int n_layers, int kv_dim, int block_size, int num_blocks, kernels::DType type = kernels::DType::kF32,
              kernels::KernelBackend* memory = nullptr);

  int block_size() const { return block_size_; }
  int num_blocks() const { return num_blocks_; }
  int free_blocks() const { return int(free_.size()); }
  kernels::KvLayerView layer(int l);

  int32_t allocate();  // -1 when the pool is exhausted
  void release(int32_t block);
  // Copies every layer's keys and values of block `from` into block `to` (copy-on-write).
  void copy_block(int32_t from, int32_t to);
  // Bytes of keys and values one block holds across all layers.
  size_t block_bytes() const { return kv_block_bytes(n_layers_, kv_dim_, block_size_, type_); }
  kernels::DType type() const { return type_; }

 private:
  int n_layers_, kv_dim_, block_size_, num_blocks_;
  kernels::DType type_;
  // Per layer. Left uninitialised: pages become resident only as positions are written. Not
  // huge pages: with transparent huge pages advised, first touches of a new 2 MiB page (24
  // pools at once) stalled single engine steps to 1.6-2.4x (docs/benchmarks.md).
  std::vector<std::unique_ptr<char[]>> k_, v_;
  kernels::KernelBackend* device_ = nullptr;  // set when the pools are a device backend's
  std::vector<kernels::BackendBuffer> device_k_, device_v_;
  std::vector<int32_t> free_;
};

class KvSequence {
 public:
  explicit KvSequence(KvBlockPool& pool) : pool_(&pool) {}
  ~KvSequence();
  KvSequence(const KvSequence&) = delete;
  KvSequence& operator=(const KvSequence&) = delete;

  // Makes room for positions [0, positions). False (nothing taken) when the pool is short.
  bool reserve(int64_t positions);
  int64_t capacity() const { return int64_t(table_.size()) * pool_->block_size(); }
  const int32_t* table() const { return table_.data(); }
  void clear();  // returns every block

 private:
  KvBlockPool* pool_;
  std::vector<int32_t> table_;
};

}  // namespace sluice::inference
