// The serving engine's options and its load. A request to it and its result are the
// generation vocabulary every generator shares (inference/generation.h). See serving_engine.h
// for the engine and docs/generation.md for the knobs.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "inference/generation.h"
#include "kernels/backend_factory.h"

namespace sluice::inference {

struct EngineOptions {
  kernels::BackendKind backend = kernels::BackendKind::kCpu;  // which kernels run the model
  int threads = 1;                 // kernel threads (one oneTBB arena)
  int context = 0;                 // positions per sequence; 0 = the model's context_length
  int block_size = 16;             // positions per KV block
  kernels::DType kv_type = kernels::DType::kF16;  // KV elements: kF16 or kF32 (docs/generation.md)
  // KV memory for all sequences together (GenerateConfig.kv_budget's default, 1 GiB: pages are
  // resident only once written); 0 = room for max_running sequences at full context.
  size_t kv_budget_bytes = size_t(1) << 30;
  int max_running = 64;            // sequences in the running batch at once (all classes)
  // Running sequences per priority class, most urgent first; a class beyond the list uses the
  // last entry. Defaults: interactive 16, near-real-time 64, offline 128.
  std::vector<int> class_caps = {16, 64, 128};
  int step_tokens = 512;           // token budget of one step (decode tokens + prefill chunks)
  // Prefill tokens per step while other sequences are decoding (chunked prefill): bounds how
  // much a newly admitted prompt slows the running streams. Without decoders a prompt runs at
  // the full step_tokens.
  int interleaved_prefill = 32;
  // Adaptive chunk: while sequences decode, a step carrying prefill may take at most
  // (1 + prefill_itl_slack) x a decode-only step (both measured as the engine runs), so the
  // running streams' inter-token latency stays within that factor; interleaved_prefill stays
  // the upper bound and min_prefill_chunk the lower (progress). 0 turns adaptation off.
  double prefill_itl_slack = 0.8;
  int min_prefill_chunk = 1;  // 1: measured, the long prompt then costs running streams least (docs/generation.md)
  bool prefix_cache = true;        // share KV of identical prefixes (see kv_block_manager.h)
  size_t max_waiting = 256;        // sequences queued for admission; beyond it submit() refuses
  std::string model_id;            // scopes the prefix cache (with the tenant); default: the path
};

struct EngineLoad {
  double busy_fraction = 0;  // share of recent wall time spent in forward passes
  size_t waiting = 0;        // sequences queued for admission
  size_t running = 0;        // sequences in the running batch
  int free_kv_blocks = 0;    // blocks allocatable now (free plus idle cached)
  int total_kv_blocks = 0;
};

}  // namespace sluice::inference
