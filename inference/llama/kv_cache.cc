#include "inference/llama/kv_cache.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace sluice::inference {

size_t kv_element_bytes(kernels::DType type) {
  switch (type) {
    case kernels::DType::kF32: return 4;
    case kernels::DType::kF16: return 2;
    default: break;
  }
  throw std::invalid_argument("KV cache: element type " + std::to_string(uint32_t(type)) + " is not f32 or f16");
}

KvBlockPool::KvBlockPool(int n_layers, int kv_dim, int block_size, int num_blocks, kernels::DType type,
                         kernels::KernelBackend* memory)
    : n_layers_(n_layers), kv_dim_(kv_dim), block_size_(block_size), num_blocks_(num_blocks), type_(type) {
  const size_t bytes = size_t(num_blocks) * size_t(block_size) * size_t(kv_dim) * kv_element_bytes(type);
  if (memory && !memory->host_memory()) device_ = memory;
  for (int l = 0; l < n_layers; ++l) {
    if (device_) {
      device_k_.emplace_back(*device_, bytes);
      device_v_.emplace_back(*device_, bytes);
    } else {
      k_.emplace_back(new char[bytes]);
      v_.emplace_back(new char[bytes]);
    }
  }
  for (int b = num_blocks - 1; b >= 0; --b) free_.push_back(b);  // hand out 0, 1, 2, ... first
}

kernels::KvLayerView KvBlockPool::layer(int l) {
  if (device_) return {device_k_[size_t(l)].data(), device_v_[size_t(l)].data(), block_size_, kv_dim_, type_};
  return {k_[size_t(l)].get(), v_[size_t(l)].get(), block_size_, kv_dim_, type_};
}

int32_t KvBlockPool::allocate() {
  if (free_.empty()) return -1;
  const int32_t b = free_.back();
  free_.pop_back();
  return b;
}

void KvBlockPool::release(int32_t block) { free_.push_back(block); }

void KvBlockPool::copy_block(int32_t from, int32_t to) {
  const size_t bytes = size_t(block_size_) * size_t(kv_dim_) * kv_element_bytes(type_);
  for (int l = 0; l < n_layers_; ++l) {
    const kernels::KvLayerView view = layer(l);
    for (void* pool : {view.k, view.v}) {
      char* base = static_cast<char*>(pool);
      if (device_)
        device_->copy_within(base + size_t(to) * bytes, base + size_t(from) * bytes, bytes);
      else
        std::copy_n(base + size_t(from) * bytes, bytes, base + size_t(to) * bytes);
    }
  }
}

KvSequence::~KvSequence() { clear(); }

bool KvSequence::reserve(int64_t positions) {
  const int64_t need = (positions + pool_->block_size() - 1) / pool_->block_size() - int64_t(table_.size());
  if (need <= 0) return true;
  if (need > pool_->free_blocks()) return false;
  for (int64_t i = 0; i < need; ++i) table_.push_back(pool_->allocate());
  return true;
}

void KvSequence::clear() {
  for (int32_t b : table_) pool_->release(b);
  table_.clear();
}

}  // namespace sluice::inference
