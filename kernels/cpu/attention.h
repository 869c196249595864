// Paged attention on the CPU: keys and values are read from fixed-size blocks through a block
// table (see KvLayerView in kernels/backend.h). Pure functions over caller-owned memory.
#pragma once

#include <cstdint>

#include "kernels/backend.h"

namespace sluice::kernels {

// Writes n key/value rows for positions pos0.. into the pool.
void kv_store_rows(const KvLayerView& kv, const int32_t* block_table, int64_t pos0, int64_t n,
                   const float* k, const float* v);

// One query head of one token at position `pos`, attending to positions 0..pos:
// out[head_dim] = softmax(q . K^T / sqrt(head_dim)) V, reading KV head `kv_head`.
// scores must hold pos + 1 floats.
void attention_head(const float* q, const KvLayerView& kv, const int32_t* block_table, int64_t pos,
                    int kv_head, int head_dim, float* scores, float* out);

}  // namespace sluice::kernels
