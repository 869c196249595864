#include "inference/llama/llama_forward.h"

#include <algorithm>
#include <stdexcept>
#include <string>

namespace sluice::inference {

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
  const ForwardSegment segment{tokens, n, pos0, seq.table(), nullptr};
  run_layers(&segment, 1, n, pool);
  if (!logits) return;
  // Only the rows whose logits are wanted go through the final norm and output matrix.
  const LlamaConfig& c = model_.config();
  const int64_t first = all_logits ? 0 : n - 1;
  const int64_t rows = n - first;
  backend_.rms_norm(x_.data() + first * c.dim, model_.output_norm, rows, c.dim, c.rms_eps, xb_.data());
  backend_.matmul(model_.output, xb_.data(), rows, logits);
}

void LlamaForward::forward_batch(const ForwardSegment* segments, size_t count, KvBlockPool& pool) {
  int64_t total = 0;
  for (size_t i = 0; i < count; ++i) total += segments[i].n;
  if (total > max_batch_)
    throw std::length_error("forward_batch: " + std::to_string(total) + " tokens exceed max_batch " +
                            std::to_string(max_batch_));
  if (total == 0) return;
  run_layers(segments, count, total, pool);
  // Gather the last row of every segment that wants logits, then one output product for all.
  const LlamaConfig& c = model_.config();
  const int64_t dim = c.dim, vocab = c.vocab_size;
  int64_t rows = 0, offset = 0;
  for (size_t i = 0; i < count; ++i) {
    offset += segments[i].n;
    if (segments[i].logits && segments[i].n > 0)
      std::copy_n(x_.data() + (offset - 1) * dim, dim, att_.data() + rows++ * dim);
  }
  if (rows == 0) return;
  backend_.rms_norm(att_.data(), model_.output_norm, rows, dim, c.rms_eps, xb_.data());
  if (batch_logits_.size() < size_t(rows * vocab)) batch_logits_.resize(size_t(rows * vocab));
  backend_.matmul(model_.output, xb_.data(), rows, batch_logits_.data());
  rows = 0;
  for (size_t i = 0; i < count; ++i)
    if (segments[i].logits && segments[i].n > 0)
      std::copy_n(batch_logits_.data() + rows++ * vocab, vocab, segments[i].logits);
}

void LlamaForward::run_layers(const ForwardSegment* segments, size_t count, int64_t n, KvBlockPool& pool) {
  const LlamaConfig& c = model_.config();
  const int64_t dim = c.dim, hid = c.hidden_dim, kv_dim = int64_t(c.n_kv_heads) * c.head_dim;
  kernels::KernelBackend& be = backend_;
  {
    int64_t t = 0;
    for (size_t i = 0; i < count; ++i)
      for (int64_t j = 0; j < segments[i].n; ++j, ++t) be.get_row(model_.token_embd, segments[i].tokens[j], x_.data() + t * dim);
  }
  const kernels::AttentionShape shape{c.n_heads, c.n_kv_heads, c.head_dim};
  for (int l = 0; l < c.n_layers; ++l) {
    const LlamaLayer& L = model_.layers[size_t(l)];
    const kernels::KvLayerView kv = pool.layer(l);
    be.rms_norm(x_.data(), L.attn_norm, n, dim, c.rms_eps, xb_.data());
    {
      const kernels::MatrixView qkv[] = {L.wq, L.wk, L.wv};
      float* const out[] = {q_.data(), k_.data(), v_.data()};
      be.matmul_shared_input(qkv, 3, xb_.data(), n, out);
    }
    // Position-dependent work, per segment: each has its own positions and block table. Every
    // segment's keys and values are stored before any attends (a segment writes only its own
    // blocks), so all segments' attention is one launch.
    attention_segments_.clear();
    int64_t t = 0;
    for (size_t i = 0; i < count; ++i) {
      const ForwardSegment& s = segments[i];
      if (s.n == 0) continue;
      float* q = q_.data() + t * dim;
      float* k = k_.data() + t * kv_dim;
      be.rope(q, s.n, c.n_heads, c.head_dim, c.n_rot, s.pos0, c.rope_base);
      be.rope(k, s.n, c.n_kv_heads, c.head_dim, c.n_rot, s.pos0, c.rope_base);
      be.kv_store(kv, s.block_table, s.pos0, s.n, k, v_.data() + t * kv_dim);
      attention_segments_.push_back({q, s.block_table, s.pos0, s.n, att_.data() + t * dim});
      t += s.n;
    }
    be.attention_batch(kv, attention_segments_.data(), attention_segments_.size(), shape);
    be.matmul(L.wo, att_.data(), n, xb_.data());
    be.add(x_.data(), xb_.data(), n * dim);
    be.rms_norm(x_.data(), L.ffn_norm, n, dim, c.rms_eps, xb_.data());
    {
      const kernels::MatrixView gate_up[] = {L.w_gate, L.w_up};
      float* const out[] = {gate_.data(), up_.data()};
      be.matmul_shared_input(gate_up, 2, xb_.data(), n, out);
    }
    be.swiglu(gate_.data(), up_.data(), n * hid);
    be.matmul(L.w_down, gate_.data(), n, xb_.data());
    be.add(x_.data(), xb_.data(), n * dim);
  }
}

}  // namespace sluice::inference
