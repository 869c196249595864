// Paged attention on the CPU: keys and values are read from fixed-size blocks through a block
// table (see KvLayerView in kernels/backend.h). Pure functions over caller-owned memory.
// attention_tile_avx2 is the fast path; attention_head is the portable one (any block size and
// head size, any x86-64 CPU).
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

// Flash-style tiles (kernels/cpu/attention_avx2.cc): up to kAttentionTileTokens consecutive
// query tokens of one head at positions pos_first.. (query t at q + t*q_stride, output at
// out + t*out_stride), one pass over the key/value blocks with an online softmax. A query's
// output is bit-identical whatever tile it was computed in (decoding alone or prefilled among
// others). Needs attention_tile_supported() and a CPU with AVX2 and FMA.
// kv_store_rows for F16 pools with F16C conversion (the same bits as the portable rounding).
void kv_store_rows_f16c(const KvLayerView& kv, const int32_t* block_table, int64_t pos0, int64_t n, const float* k,
                        const float* v);
constexpr int kAttentionTileTokens = 16;  // 16 queries' q and O (16 KB at head_dim 64) stay in L1
constexpr int kAttentionMaxHeadDim = 256;
bool attention_tile_supported(const KvLayerView& kv, int head_dim);
void attention_tile_avx2(const float* q, int64_t q_stride, int n_tokens, const KvLayerView& kv,
                         const int32_t* block_table, int64_t pos_first, int kv_head, int head_dim, float* out,
                         int64_t out_stride);

}  // namespace sluice::kernels
