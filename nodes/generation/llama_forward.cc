#include "nodes/generation/llama_forward.h"

#include <algorithm>

namespace sluice::generation {

LlamaForward::LlamaForward(const LlamaModel& model, kernels::KernelBackend& backend, int max_batch)
    : model_(model), backend_(backend), max_batch_(std::max(1, max_batch)) {
  const LlamaConfig& c = model.config();
  const size_t b = size_t(max_batch_);
  const size_t kv_dim = size_t(c.n_kv_heads) * size_t(c.head_dim);
  x_.resize(b * size_t(c.dim));
  xb_.resize(b * size_t(c.dim));
  q_.resize(b * size_t(c.dim));
  k_.resize(b * kv_dim);
  v_.resize(b * kv_dim);
  att_.resize(b * size_t(c.dim));
  gate_.resize(b * size_t(c.hidden_dim));
  up_.resize(b * size_t(c.hidden_dim));
}

void LlamaForward::forward(const int32_t* tokens, int64_t n, int64_t pos0, KvBlockPool& pool,
                           const KvSequence& seq, float* logits, bool all_logits) {
  const int64_t vocab = model_.config().vocab_size;
  for (int64_t done = 0; done < n; done += max_batch_) {
    const int64_t m = std::min<int64_t>(max_batch_, n - done);
    const bool last = done + m == n;
    if (!all_logits && !last) {
      forward_chunk(tokens + done, m, pos0 + done, pool, seq, nullptr, false);
    } else {
      forward_chunk(tokens + done, m, pos0 + done, pool, seq, all_logits ? logits + done * vocab : logits, all_logits);
    }
  }
}

void LlamaForward::forward_chunk(const int32_t* tokens, int64_t n, int64_t pos0, KvBlockPool& pool,
                                 const KvSequence& seq, float* logits, bool all_logits) {
  const LlamaConfig& c = model_.config();
  const int64_t dim = c.dim, hid = c.hidden_dim;
  kernels::KernelBackend& be = backend_;
  for (int64_t t = 0; t < n; ++t) be.get_row(model_.token_embd, tokens[t], x_.data() + t * dim);
  const kernels::AttentionShape shape{c.n_heads, c.n_kv_heads, c.head_dim};
  for (int l = 0; l < c.n_layers; ++l) {
    const LlamaLayer& L = model_.layers[size_t(l)];
    const kernels::KvLayerView kv = pool.layer(l);
    be.rms_norm(x_.data(), L.attn_norm, n, dim, c.rms_eps, xb_.data());
    be.matmul(L.wq, xb_.data(), n, q_.data());
    be.matmul(L.wk, xb_.data(), n, k_.data());
    be.matmul(L.wv, xb_.data(), n, v_.data());
    be.rope(q_.data(), n, c.n_heads, c.head_dim, c.n_rot, pos0, c.rope_base);
    be.rope(k_.data(), n, c.n_kv_heads, c.head_dim, c.n_rot, pos0, c.rope_base);
    be.kv_store(kv, seq.table(), pos0, n, k_.data(), v_.data());
    be.attention(q_.data(), kv, seq.table(), pos0, n, shape, att_.data());
    be.matmul(L.wo, att_.data(), n, xb_.data());
    be.add(x_.data(), xb_.data(), n * dim);
    be.rms_norm(x_.data(), L.ffn_norm, n, dim, c.rms_eps, xb_.data());
    be.matmul(L.w_gate, xb_.data(), n, gate_.data());
    be.matmul(L.w_up, xb_.data(), n, up_.data());
    be.swiglu(gate_.data(), up_.data(), n * hid);
    be.matmul(L.w_down, gate_.data(), n, xb_.data());
    be.add(x_.data(), xb_.data(), n * dim);
  }
  if (!logits) return;
  // Only the rows whose logits are wanted go through the final norm and output matrix.
  const int64_t first = all_logits ? 0 : n - 1;
  const int64_t rows = n - first;
  be.rms_norm(x_.data() + first * dim, model_.output_norm, rows, dim, c.rms_eps, xb_.data());
  be.matmul(model_.output, xb_.data(), rows, logits);
}

}  // namespace sluice::generation
