#include "inference/llama/llama_forward.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string>

namespace sluice::inference {

namespace {
kernels::BackendBuffer floats(kernels::KernelBackend& backend, size_t n) {
  return kernels::BackendBuffer(backend, n * sizeof(float));
}
}  // namespace

LlamaForward::LlamaForward(const LlamaModel& model, kernels::KernelBackend& backend, int max_batch)
    : model_(model), backend_(backend), max_batch_(std::max(1, max_batch)) {
  // Device weights on a host backend would be dereferenced by the CPU. (Host weights on a
  // device backend are the caller's choice to stage: the engine and Generator load the model
  // and make the backend from one kind, so they never mix them.)
  if (!model.weights_in_host_memory() && backend.host_memory())
    throw std::invalid_argument("LlamaForward: the model's weights are in device memory but the backend computes in "
                                "host memory; load the model for the backend's kind");
  const LlamaConfig& c = model.config();
  const size_t b = size_t(max_batch_);
  const size_t kv_dim = size_t(c.n_kv_heads) * size_t(c.head_dim);
  x_ = floats(backend, b * size_t(c.dim));
  xb_ = floats(backend, b * size_t(c.dim));
  q_ = floats(backend, b * size_t(c.dim));
  k_ = floats(backend, b * kv_dim);
  v_ = floats(backend, b * kv_dim);
  att_ = floats(backend, b * size_t(c.dim));
  gate_ = floats(backend, b * size_t(c.hidden_dim));
  up_ = floats(backend, b * size_t(c.hidden_dim));
}

void LlamaForward::forward(const int32_t* tokens, int64_t n, int64_t pos0, KvBlockPool& pool,
                           const KvSequence& seq, float* logits, bool all_logits) {
  if (n == 1 && logits) {  // one decode token: a batch of one, recorded where the backend records
    const ForwardSegment segment{tokens, 1, pos0, seq.table(), logits};
    return forward_batch(&segment, 1, pool);
  }
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
  const int64_t first = all_logits ? 0 : n - 1;
  logits_rows_.clear();
  for (int64_t t = first; t < n; ++t) logits_rows_.push_back(logits + (t - first) * model_.config().vocab_size);
  output_logits(x_.floats() + first * model_.config().dim, n - first, logits_rows_.data());
}

void LlamaForward::forward_batch(const ForwardSegment* segments, size_t count, KvBlockPool& pool) {
  int64_t total = 0;
  for (size_t i = 0; i < count; ++i) total += segments[i].n;
  if (total > max_batch_)
    throw std::length_error("forward_batch: " + std::to_string(total) + " tokens exceed max_batch " +
                            std::to_string(max_batch_));
  if (total == 0) return;
  if (run_recorded_decode(segments, count, pool)) return;
  run_layers(segments, count, total, pool);
  // Gather the last row of every segment that wants a token or logits (sampled rows first), then
  // one output product for all.
  const int64_t dim = model_.config().dim;
  int64_t rows = 0;
  logits_rows_.clear();
  sampling_rows_.clear();
  token_rows_.clear();
  for (const bool sampled : {true, false}) {
    int64_t offset = 0;
    for (size_t i = 0; i < count; ++i) {
      const ForwardSegment& s = segments[i];
      offset += s.n;
      if (s.n == 0 || (sampled ? !s.wants_token() : !s.wants_logits())) continue;
      backend_.copy_within(att_.floats() + rows++ * dim, x_.floats() + (offset - 1) * dim, size_t(dim) * sizeof(float));
      if (sampled) {
        sampling_rows_.push_back(*s.sampling);
        token_rows_.push_back(s.token);
      } else {
        logits_rows_.push_back(s.logits);
      }
    }
  }
  if (rows > 0)
    output_logits(att_.floats(), rows, logits_rows_.data(), int64_t(sampling_rows_.size()), sampling_rows_.data(),
                  token_rows_.data());
}

void LlamaForward::ensure_logits(int64_t rows) {
  const size_t bytes = size_t(rows * model_.config().vocab_size) * sizeof(float);
  if (logits_.bytes() >= bytes) return;
  logits_ = kernels::BackendBuffer(backend_, bytes);
  ++own_epoch_;
}

void LlamaForward::ensure_ids() {
  if (ids_.bytes() > 0) return;  // made once, for max_batch rows
  ids_ = kernels::BackendBuffer(backend_, size_t(max_batch_) * sizeof(int32_t));
  ++own_epoch_;
}

void LlamaForward::output_logits(const float* hidden, int64_t rows, float* const* dst, int64_t sampled,
                                 const kernels::TokenSampling* params, int32_t* const* tokens) {
  const LlamaConfig& c = model_.config();
  const int64_t vocab = c.vocab_size;
  backend_.rms_norm(hidden, model_.output_norm, rows, c.dim, c.rms_eps, xb_.floats());
  bool contiguous = backend_.host_memory() && sampled == 0;  // then the product may write the caller's rows
  for (int64_t i = 1; i < rows && contiguous; ++i) contiguous = dst[i] == dst[0] + i * vocab;
  if (contiguous) return backend_.matmul(model_.output, xb_.floats(), rows, dst[0]);
  ensure_logits(rows);
  backend_.matmul(model_.output, xb_.floats(), rows, logits_.floats());
  if (sampled > 0) {
    bool greedy_only = true;
    for (int64_t i = 0; i < sampled; ++i) greedy_only &= params[i].temperature <= 0;
    backend_.stage_sampling(params, sampled);
    host_ids_.resize(size_t(sampled));
    if (backend_.host_memory()) {
      backend_.sample_staged(logits_.floats(), sampled, vocab, greedy_only, host_ids_.data());
    } else {
      ensure_ids();
      backend_.sample_staged(logits_.floats(), sampled, vocab, greedy_only, static_cast<int32_t*>(ids_.data()));
      backend_.copy_to_host(host_ids_.data(), ids_.data(), size_t(sampled) * sizeof(int32_t));
    }
    for (int64_t i = 0; i < sampled; ++i) *tokens[i] = host_ids_[size_t(i)];
  }
  const int64_t with_logits = rows - sampled;
  if (with_logits == 0) return;
  const float* rows_at = logits_.floats() + sampled * vocab;
  const size_t bytes = size_t(with_logits * vocab) * sizeof(float);
  if (!backend_.host_memory()) {  // one copy back for all rows
    host_logits_.resize(size_t(with_logits * vocab));
    backend_.copy_to_host(host_logits_.data(), rows_at, bytes);
    rows_at = host_logits_.data();
  }
  for (int64_t i = 0; i < with_logits; ++i)
    std::memcpy(dst[i], rows_at + i * vocab, size_t(vocab) * sizeof(float));
}

const ForwardSegment* LlamaForward::stage_tables(const ForwardSegment* segments, size_t count, int block_size) {
  if (backend_.host_memory()) return segments;
  host_tables_.clear();
  std::vector<size_t> offsets;
  offsets.reserve(count);
  for (size_t i = 0; i < count; ++i) {
    const ForwardSegment& s = segments[i];
    offsets.push_back(host_tables_.size());
    const int64_t blocks = s.n > 0 ? (s.pos0 + s.n + block_size - 1) / block_size : 0;
    host_tables_.insert(host_tables_.end(), s.block_table, s.block_table + blocks);
  }
  const size_t bytes = std::max<size_t>(1, host_tables_.size()) * sizeof(int32_t);
  if (tables_.bytes() < bytes) tables_ = kernels::BackendBuffer(backend_, bytes * 2);
  backend_.copy_to_backend(tables_.data(), host_tables_.data(), host_tables_.size() * sizeof(int32_t));
  staged_.assign(segments, segments + count);
  for (size_t i = 0; i < count; ++i) staged_[i].block_table = static_cast<const int32_t*>(tables_.data()) + offsets[i];
  return staged_.data();
}

void LlamaForward::run_layers(const ForwardSegment* caller_segments, size_t count, int64_t n, KvBlockPool& pool,
                              const kernels::TokenPlaces* at, const int32_t* token_ids) {
  const LlamaConfig& c = model_.config();
  const int64_t dim = c.dim, hid = c.hidden_dim, kv_dim = int64_t(c.n_kv_heads) * c.head_dim;
  kernels::KernelBackend& be = backend_;
  const ForwardSegment* segments = at ? nullptr : stage_tables(caller_segments, count, pool.block_size());
  float *x = x_.floats(), *xb = xb_.floats(), *q_all = q_.floats(), *k_all = k_.floats(), *v_all = v_.floats();
  float *att = att_.floats(), *gate = gate_.floats(), *up = up_.floats();
  if (at) {
    be.get_rows_at(model_.token_embd, token_ids, n, x);
  } else {
    int64_t t = 0;
    for (size_t i = 0; i < count; t += segments[i].n, ++i)
      be.get_rows(model_.token_embd, segments[i].tokens, segments[i].n, x + t * dim);
  }
  const kernels::AttentionShape shape{c.n_heads, c.n_kv_heads, c.head_dim};
  for (int l = 0; l < c.n_layers; ++l) {
    const LlamaLayer& L = model_.layers[size_t(l)];
    const kernels::KvLayerView kv = pool.layer(l);
    be.rms_norm(x, L.attn_norm, n, dim, c.rms_eps, xb);
    {
      const kernels::MatrixView qkv[] = {L.wq, L.wk, L.wv};
      float* const out[] = {q_all, k_all, v_all};
      be.matmul_shared_input(qkv, 3, xb, n, out);
    }
    // Position-dependent work, per segment: each has its own positions and block table. Every
    // segment's keys and values are stored before any attends (a segment writes only its own
    // blocks), so all segments' attention is one launch.
    if (at) {
      be.rope_at(q_all, *at, c.n_heads, c.head_dim, c.n_rot, c.rope_base);
      be.rope_at(k_all, *at, c.n_kv_heads, c.head_dim, c.n_rot, c.rope_base);
      be.kv_store_at(kv, *at, k_all, v_all);
      be.attention_at(kv, *at, q_all, shape, att);
    } else {
      attention_segments_.clear();
      int64_t t = 0;
      for (size_t i = 0; i < count; ++i) {
        const ForwardSegment& s = segments[i];
        if (s.n == 0) continue;
        float* q = q_all + t * dim;
        float* k = k_all + t * kv_dim;
        be.rope(q, s.n, c.n_heads, c.head_dim, c.n_rot, s.pos0, c.rope_base);
        be.rope(k, s.n, c.n_kv_heads, c.head_dim, c.n_rot, s.pos0, c.rope_base);
        be.kv_store(kv, s.block_table, s.pos0, s.n, k, v_all + t * kv_dim);
        attention_segments_.push_back({q, s.block_table, s.pos0, s.n, att + t * dim});
        t += s.n;
      }
      be.attention_batch(kv, attention_segments_.data(), attention_segments_.size(), shape);
    }
    be.matmul(L.wo, att, n, xb);
    be.add(x, xb, n * dim);
    be.rms_norm(x, L.ffn_norm, n, dim, c.rms_eps, xb);
    {
      const kernels::MatrixView gate_up[] = {L.w_gate, L.w_up};
      float* const out[] = {gate, up};
      be.matmul_shared_input(gate_up, 2, xb, n, out);
    }
    be.swiglu(gate, up, n * hid);
    be.matmul(L.w_down, gate, n, xb);
    be.add(x, xb, n * dim);
  }
}

}  // namespace sluice::inference
