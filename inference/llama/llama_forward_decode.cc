// LlamaForward's recorded decode step (llama_forward.h): a batch of single-token segments staged
// into backend memory, padded to a power-of-two bucket, and run as one backend recording (a CUDA
// graph) keyed by (bucket, block-table width, output kind).
#include <algorithm>
#include <cstring>

#include "inference/llama/llama_forward.h"

namespace sluice::inference {

namespace {

enum class DecodeOutput : uint64_t { kLogits = 0, kGreedyTokens = 1, kSampledTokens = 2 };

int64_t power_of_two_at_least(int64_t n) {
  int64_t p = 1;
  while (p < n) p *= 2;
  return p;
}

uint64_t decode_key(int64_t bucket, int64_t stride, DecodeOutput output) {
  return uint64_t(bucket) | (uint64_t(stride) << 24) | (uint64_t(output) << 56);
}

}  // namespace

bool LlamaForward::run_recorded_decode(const ForwardSegment* segments, size_t count, KvBlockPool& pool) {
  if (!backend_.can_record() || count == 0) return false;
  // Only whole decode steps of one output kind: one token per segment, every segment wanting
  // logits, or every one a sampled token.
  const bool tokens_out = segments[0].wants_token();
  bool greedy_only = true;
  int64_t blocks = 1;
  const int bs = pool.block_size();
  for (size_t i = 0; i < count; ++i) {
    const ForwardSegment& s = segments[i];
    if (s.n != 1 || s.wants_token() != tokens_out || (!tokens_out && !s.wants_logits())) return false;
    if (tokens_out) greedy_only &= s.sampling->temperature <= 0;
    blocks = std::max<int64_t>(blocks, s.pos0 / bs + 1);
  }
  const int64_t bucket = power_of_two_at_least(int64_t(count));
  if (bucket > max_batch_) return false;
  const int64_t stride = power_of_two_at_least(std::max<int64_t>(blocks, 4));
  const DecodeOutput output =
      !tokens_out ? DecodeOutput::kLogits : greedy_only ? DecodeOutput::kGreedyTokens : DecodeOutput::kSampledTokens;

  // Stage the step: token ids, positions (-1 for padding rows), block tables at a fixed width.
  const int64_t staged = bucket * (2 + stride);
  host_decode_in_.assign(size_t(staged), 0);
  int32_t* ids = host_decode_in_.data();
  int32_t* positions = ids + bucket;
  int32_t* tables = positions + bucket;
  for (int64_t i = 0; i < bucket; ++i) positions[i] = -1;
  for (size_t i = 0; i < count; ++i) {
    const ForwardSegment& s = segments[i];
    ids[i] = s.tokens[0];
    positions[i] = int32_t(s.pos0);
    std::memcpy(tables + int64_t(i) * stride, s.block_table, size_t(s.pos0 / bs + 1) * sizeof(int32_t));
  }
  if (decode_in_.bytes() < size_t(staged) * sizeof(int32_t)) {
    decode_in_ = kernels::BackendBuffer(backend_, size_t(int64_t(max_batch_) * (2 + stride)) * sizeof(int32_t));
    ++own_epoch_;
  }
  backend_.copy_to_backend(decode_in_.data(), host_decode_in_.data(), size_t(staged) * sizeof(int32_t));
  if (tokens_out) {
    sampling_rows_.assign(size_t(bucket), kernels::TokenSampling{});
    for (int64_t i = 0; i < bucket; ++i) sampling_rows_[size_t(i)].temperature = 0;  // padding: greedy
    for (size_t i = 0; i < count; ++i) sampling_rows_[i] = *segments[i].sampling;
    backend_.stage_sampling(sampling_rows_.data(), bucket);
    ensure_ids();
  }
  ensure_logits(bucket);

  const int32_t* staged_in = static_cast<const int32_t*>(decode_in_.data());
  const kernels::TokenPlaces at{staged_in + bucket, staged_in + 2 * bucket, stride, bucket};
  const LlamaConfig& c = model_.config();
  auto step = [&, bucket] {
    run_layers(nullptr, 0, bucket, pool, &at, staged_in);
    backend_.rms_norm(x_.floats(), model_.output_norm, bucket, c.dim, c.rms_eps, xb_.floats());
    backend_.matmul(model_.output, xb_.floats(), bucket, logits_.floats());
    if (output != DecodeOutput::kLogits)
      backend_.sample_staged(logits_.floats(), bucket, c.vocab_size, output == DecodeOutput::kGreedyTokens,
                             static_cast<int32_t*>(ids_.data()));
  };

  const uint64_t key = decode_key(bucket, stride, output);
  auto found = recorded_.find(key);
  if (found != recorded_.end() &&
      (found->second.backend_epoch != backend_.scratch_epoch() || found->second.own_epoch != own_epoch_)) {
    recorded_.erase(found);  // it addresses memory that has since been replaced
    found = recorded_.end();
  }
  if (found != recorded_.end()) {
    found->second.recording->replay();
    ++replayed_steps_;
  } else if (warmed_.insert(key).second) {
    step();  // the first step of a key grows the backend's scratch before anything is recorded
  } else {
    Recorded r;
    r.recording = backend_.record(step);
    if (!r.recording) return false;  // nothing was queued; the caller runs the step unrecorded
    r.backend_epoch = backend_.scratch_epoch();
    r.own_epoch = own_epoch_;
    ++recordings_made_;
    r.recording->replay();
    ++replayed_steps_;
    recorded_[key] = std::move(r);
  }

  const int64_t vocab = c.vocab_size;
  if (tokens_out) {
    host_ids_.resize(count);
    backend_.copy_to_host(host_ids_.data(), ids_.data(), count * sizeof(int32_t));
    for (size_t i = 0; i < count; ++i) *segments[i].token = host_ids_[i];
  } else {
    host_logits_.resize(count * size_t(vocab));
    backend_.copy_to_host(host_logits_.data(), logits_.data(), host_logits_.size() * sizeof(float));
    for (size_t i = 0; i < count; ++i)
      std::memcpy(segments[i].logits, host_logits_.data() + i * size_t(vocab), size_t(vocab) * sizeof(float));
  }
  return true;
}

}  // namespace sluice::inference
