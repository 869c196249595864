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
// scores must hold pos + 17 floats (whole blocks of 16 are written).
void attention_head(const float* q, const KvLayerView& kv, const int32_t* block_table, int64_t pos,
                    int kv_head, int head_dim, float* scores, float* out);

// n_tokens (1..4) consecutive query tokens of one head at positions pos_first.. (query t at
// q + t*q_stride, output at out + t*out_stride). Needs kv.block_size == 16 and head_dim % 16 == 0
// for n_tokens > 1; scores must hold n_tokens rows of s_stride >= pos_first + n_tokens + 16.
void attention_tile(const float* q, int64_t q_stride, int n_tokens, const KvLayerView& kv,
                    const int32_t* block_table, int64_t pos_first, int kv_head, int head_dim, float* scores,
                    int64_t s_stride, float* out, int64_t out_stride);

}  // namespace sluice::kernels
