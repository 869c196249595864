#include "inference/engine/engine_scheduler.h"

#include <algorithm>
#include <stdexcept>

#include "graph/fnv1a.h"
#include "inference/model_error.h"
#include "kernels/backend_factory.h"

namespace sluice::inference {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_between(Clock::time_point a, Clock::time_point b) { return std::chrono::duration<double>(b - a).count(); }

int resolve_context(const LlamaModel& m, const EngineOptions& o) {
  return o.context > 0 ? std::min(o.context, m.config().context_length) : m.config().context_length;
}

int64_t blocks_for(int64_t positions, int block_size) { return (positions + block_size - 1) / block_size; }

int pool_blocks(const LlamaModel& m, const EngineOptions& o, int context) {
  const int bs = std::max(1, o.block_size);
  const size_t block_bytes =
      kv_block_bytes(m.config().n_layers, m.config().n_kv_heads * m.config().head_dim, bs, o.kv_type);
  const int per_sequence = int(blocks_for(context, bs));
  const size_t blocks = o.kv_budget_bytes > 0 ? o.kv_budget_bytes / block_bytes
                                              : size_t(per_sequence) * size_t(std::max(1, o.max_running));
  if (blocks < size_t(per_sequence))
    throw std::invalid_argument("kv_budget " + std::to_string(o.kv_budget_bytes) + " bytes holds " +
                                std::to_string(blocks) + " blocks; one sequence at full context needs " +
                                std::to_string(per_sequence) + " (" + std::to_string(per_sequence * block_bytes) +
                                " bytes)");
  return int(std::min<size_t>(blocks, size_t(1) << 30));
}

Status invalid(std::string message) { return Status::Error(StatusCode::kInvalidArgument, std::move(message)); }

}  // namespace

EngineScheduler::Sequence::Sequence(GenerationRequest r, const std::vector<std::string>& stop)
    : request(std::move(r)), sampler(request.sampling), stream(stop, request.on_text) {}

EngineScheduler::EngineScheduler(const LlamaModel& model, const EngineOptions& options)
    : EngineScheduler(model, options, kernels::BackendHandle({options.backend, std::max(1, options.threads)})) {}

EngineScheduler::EngineScheduler(const LlamaModel& model, const EngineOptions& options, kernels::KernelBackend& backend)
    : EngineScheduler(model, options, kernels::BackendHandle(backend)) {}

EngineScheduler::EngineScheduler(const LlamaModel& model, const EngineOptions& options, kernels::BackendHandle backend)
    : model_(model),
      options_(options),
      context_(resolve_context(model, options)),
      backend_(std::move(backend)),
      pool_(model.config().n_layers, model.config().n_kv_heads * model.config().head_dim,
            std::max(1, options.block_size), pool_blocks(model, options, context_), options.kv_type, &backend_.get()),
      blocks_(pool_),
      forward_(model, backend_.get(), std::max({options.step_tokens, options.max_running, 1})),
      model_scope_(fnv1a64(options.model_id)) {
  if (options_.class_caps.empty()) options_.class_caps = {16, 64, 128};
  for (int& cap : options_.class_caps) cap = std::max(1, cap);
  options_.max_running = std::max(1, options_.max_running);
  // Every running sequence must be able to decode in one step.
  options_.step_tokens = std::max(options_.step_tokens, options_.max_running);
  options_.interleaved_prefill = std::max(1, options_.interleaved_prefill);
  options_.min_prefill_chunk = std::clamp(options_.min_prefill_chunk, 1, options_.interleaved_prefill);
  running_per_class_.assign(options_.class_caps.size(), 0);
  preemptions_.assign(options_.class_caps.size(), 0);
}

void EngineScheduler::set_chain_hash(KvBlockManager::ChainHash hash) { blocks_.set_chain_hash(std::move(hash)); }

int EngineScheduler::cap_of(int cls) const { return options_.class_caps[size_t(cls)]; }

Status EngineScheduler::prepare(const GenerationRequest& request, std::vector<int32_t>* tokens) const {
  const Tokenizer& tok = model_.tokenizer();
  if (!request.prompt_tokens.empty()) {
    *tokens = request.prompt_tokens;
    for (int32_t t : *tokens)
      if (t < 0 || t >= model_.config().vocab_size)
        return invalid("prompt token id " + std::to_string(t) + " is outside the vocabulary of " +
                       std::to_string(model_.config().vocab_size));
  } else {
    *tokens = tok.encode_prompt(request.prompt, request.add_bos);
  }
  if (tokens->empty()) tokens->push_back(tok.bos());  // nothing to condition on: start a document
  if (request.grammar && int64_t(request.grammar->min_bytes()) > request.max_tokens)
    return invalid("max_tokens " + std::to_string(request.max_tokens) + " cannot hold the shortest answer the schema allows (" +
                   std::to_string(request.grammar->min_bytes()) + " bytes; a constrained answer is guaranteed one byte per token)")
        .with_api("invalid_value", "max_tokens");
  if (int64_t(tokens->size()) > context_)
    return invalid("prompt has " + std::to_string(tokens->size()) + " tokens; the context holds " +
                   std::to_string(context_) + " positions")
        .with_api("context_length_exceeded");
  // The most one sequence can hold must fit the pool, or it could never run even alone.
  const int64_t most = std::min<int64_t>(context_, int64_t(tokens->size()) + std::max(0, request.max_tokens));
  if (blocks_for(most, pool_.block_size()) > pool_.num_blocks())
    return invalid("the KV budget (" + std::to_string(pool_.num_blocks()) + " blocks of " +
                   std::to_string(pool_.block_size()) + " positions) cannot hold this request's " + std::to_string(most) +
                   " positions");
  return Status::Ok();
}

Status EngineScheduler::add(GenerationRequest request, SteadyTime submitted) {
  std::vector<int32_t> tokens;
  Status status = prepare(request, &tokens);
  if (status.ok()) enqueue(std::move(request), std::move(tokens), submitted);
  return status;
}

void EngineScheduler::enqueue(GenerationRequest request, std::vector<int32_t> tokens, SteadyTime submitted) {
  const std::vector<std::string> stop = request.stop;
  auto seq = std::make_unique<Sequence>(std::move(request), stop);
  seq->cls = std::clamp(seq->request.priority, 0, classes() - 1);
  seq->order = next_order_++;
  seq->scope = model_scope_ ^ (fnv1a64(seq->request.tenant) * 0x9e3779b97f4a7c15ULL);
  seq->prompt_tokens = int(tokens.size());
  seq->tokens = std::move(tokens);
  seq->submitted = seq->last_token = submitted;
  seq->result.prompt_tokens = seq->prompt_tokens;
  if (seq->request.grammar) {
    const Tokenizer& tok = model_.tokenizer();
    seq->constraint = std::make_unique<constrain::TokenConstraint>(seq->request.grammar, vocab_trie(),
                                                                    std::vector<int32_t>{tok.eos(), tok.bos()});
  }
  insert_waiting(std::move(seq));
}

const std::shared_ptr<const constrain::VocabTrie>& EngineScheduler::vocab_trie() {
  if (!vocab_trie_) {
    // What each token prints mid-text (not right after BOS, where a leading space is dropped).
    const Tokenizer& tok = model_.tokenizer();
    std::vector<std::string> pieces(size_t(tok.vocab_size()));
    for (int32_t id = 0; id < tok.vocab_size(); ++id) pieces[size_t(id)] = std::string(tok.piece(-1, id));
    vocab_trie_ = std::make_shared<const constrain::VocabTrie>(pieces);
  }
  return vocab_trie_;
}

void EngineScheduler::insert_waiting(SeqPtr seq) {
  auto at = std::upper_bound(waiting_.begin(), waiting_.end(), seq,
                             [](const SeqPtr& a, const SeqPtr& b) { return more_urgent(*a, *b); });
  waiting_.insert(at, std::move(seq));
}

StepReport EngineScheduler::step() {
  StepReport report;
  drop_cancelled();
  report.admitted = admit(report);
  std::vector<Planned> planned;
  plan(planned, report);
  if (!planned.empty()) {
    // Unconstrained sequences sample on the backend (on a GPU only the token id comes back);
    // constrained ones need their logits here for the grammar's mask.
    segments_.clear();
    size_t with_logits = 0;
    for (const Planned& p : planned) with_logits += p.logits && p.seq->constraint;
    const size_t vocab = size_t(model_.config().vocab_size);
    if (logits_.size() < with_logits * vocab) logits_.resize(with_logits * vocab);
    sampling_.assign(planned.size(), kernels::TokenSampling{});
    sampled_.assign(planned.size(), -1);
    size_t row = 0;
    for (size_t i = 0; i < planned.size(); ++i) {
      const Planned& p = planned[i];
      Sequence& s = *p.seq;
      ForwardSegment seg{s.tokens.data() + s.computed, p.n, s.computed, s.table.data(), nullptr};
      if (p.logits && s.constraint) {
        seg.logits = logits_.data() + row++ * vocab;
      } else if (p.logits) {
        sampling_[i] = s.sampler.prepare(s.tokens);
        seg.sampling = &sampling_[i];
        seg.token = &sampled_[i];
      }
      segments_.push_back(seg);
    }
    const auto t0 = Clock::now();
    forward_.forward_batch(segments_.data(), segments_.size(), pool_);
    report.forward_seconds = seconds_between(t0, Clock::now());
    report.sequences = int(planned.size());
    learn_step_costs(report, report.decode_tokens);
    after_forward(planned, report);
  }
  retire_finished();
  return report;
}

template <typename F>
bool EngineScheduler::contained(Sequence& s, const char* what, F&& f) {
  try {
    f();
    return true;
  } catch (const std::exception& e) {
    fail_sequence(s, std::string(what) + " threw: " + e.what());
  } catch (...) {
    fail_sequence(s, std::string(what) + " threw a non-standard exception");
  }
  return false;
}

void EngineScheduler::fail_sequence(Sequence& s, const std::string& error) {
  if (s.computed < 0) return;  // it had finished; its on_finish is what threw (finish() reports that)
  s.result.error = error;
  finish(s, FinishReason::kError);
  if (on_sequence_failure) on_sequence_failure(s.request.request_id, error);
}

void EngineScheduler::drop_cancelled() {
  auto stop = [this](const SeqPtr& s) {
    bool cancelled = false;
    if (s->request.should_stop && !contained(*s, "its should_stop callback", [&] { cancelled = s->request.should_stop(); }))
      return false;  // it threw: already finished with kError
    return cancelled;
  };
  for (auto& s : running_)
    if (stop(s)) finish(*s, FinishReason::kCancelled);
  for (auto& s : waiting_)
    if (stop(s)) finish(*s, FinishReason::kCancelled);
  retire_finished();
}

int EngineScheduler::admit(StepReport& report) {
  int admitted = 0;
  for (size_t i = 0; i < waiting_.size();) {
    Sequence& cand = *waiting_[i];
    if (running_per_class_[size_t(cand.cls)] >= cap_of(cand.cls)) {
      ++i;  // this class is full; a later class may still have room
      continue;
    }
    if (int(running_.size()) >= options_.max_running) {
      Sequence* victim = least_urgent_running(&cand, nullptr);
      if (!victim) break;  // every running sequence is at least as urgent
      preempt(*victim);
      ++report.preempted;
      continue;  // the victim re-entered waiting_ behind cand: indexes before i are unchanged
    }
    if (!admit_one(waiting_[i], report)) break;  // no KV memory even after preempting less urgent work
    running_.push_back(std::move(waiting_[i]));
    waiting_.erase(waiting_.begin() + std::ptrdiff_t(i));
    ++admitted;
  }
  return admitted;
}

bool EngineScheduler::admit_one(SeqPtr& seq, StepReport& report) {
  Sequence& s = *seq;
  // Keys and values already cached for this prefix; the last token is always recomputed, as
  // its logits are needed.
  if (options_.prefix_cache) {
    PrefixMatch m = blocks_.match(s.scope, s.tokens.data(), int64_t(s.tokens.size()), int64_t(s.tokens.size()) - 1);
    s.table = std::move(m.blocks);
    s.computed = m.tokens;
  }
  // Memory for the first chunk plus one block of growth per running sequence (so admitting it
  // does not force a preemption at the next step), else taken from less urgent sequences.
  const int64_t first = std::min<int64_t>(int64_t(s.tokens.size()) - s.computed, options_.step_tokens);
  while (!reserve(s, first) || blocks_.available() < int(running_.size())) {
    Sequence* victim = least_urgent_running(&s, nullptr);
    if (!victim) {
      blocks_.release_all(s.table);
      s.computed = 0;
      return false;
    }
    preempt(*victim);
    ++report.preempted;
  }
  s.result.reused_tokens = int(s.computed);
  if (!s.admitted_once) {
    s.admitted_once = true;
    s.result.queue_seconds = seconds_between(s.submitted, Clock::now());
  }
  ++running_per_class_[size_t(s.cls)];
  return true;
}

bool EngineScheduler::reserve(Sequence& s, int64_t n) {
  const int bs = pool_.block_size();
  const int64_t end = s.computed + n;
  while (int64_t(s.table.size()) < blocks_for(end, bs)) {
    const int32_t b = blocks_.allocate();
    if (b < 0) return false;
    s.table.push_back(b);
  }
  // Blocks about to be written must be this sequence's alone (copy-on-write).
  for (int64_t i = s.computed / bs; i < blocks_for(end, bs); ++i)
    if (!blocks_.make_writable(s.table, size_t(i))) return false;
  return true;
}

EngineScheduler::Sequence* EngineScheduler::least_urgent_running(const Sequence* than,
                                                                 const std::vector<Planned>* exclude) {
  Sequence* worst = nullptr;
  for (auto& r : running_) {
    Sequence* s = r.get();
    if (s == than || s->computed < 0) continue;
    if (than && !more_urgent(*than, *s)) continue;
    if (exclude && std::any_of(exclude->begin(), exclude->end(), [&](const Planned& p) { return p.seq == s; })) continue;
    if (!worst || more_urgent(*worst, *s)) worst = s;
  }
  return worst;
}

void EngineScheduler::preempt(Sequence& s) {
  auto it = std::find_if(running_.begin(), running_.end(), [&](const SeqPtr& p) { return p.get() == &s; });
  SeqPtr seq = std::move(*it);
  running_.erase(it);
  --running_per_class_[size_t(s.cls)];
  ++preemptions_[size_t(s.cls)];
  ++s.result.preemptions;
  // Published blocks stay cached (idle) while memory allows; the rest is recomputed.
  blocks_.release_all(s.table);
  s.computed = 0;
  insert_waiting(std::move(seq));
}

void EngineScheduler::plan(std::vector<Planned>& planned, StepReport& report) {
  std::vector<Sequence*> order;
  int decoders = 0;
  for (auto& r : running_) {
    order.push_back(r.get());
    decoders += int64_t(r->tokens.size()) - r->computed == 1;
  }
  std::sort(order.begin(), order.end(), [](Sequence* a, Sequence* b) { return more_urgent(*a, *b); });
  int prefill_left = prefill_budget(decoders);
  for (Sequence* s : order) {
    if (std::find_if(running_.begin(), running_.end(), [&](const SeqPtr& p) { return p.get() == s; }) == running_.end())
      continue;  // preempted earlier in this loop
    const int64_t pending = int64_t(s->tokens.size()) - s->computed;
    const int64_t n = pending == 1 ? 1 : std::min<int64_t>(pending, prefill_left);
    if (n <= 0) continue;
    bool fits = reserve(*s, n);
    while (!fits) {
      Sequence* victim = least_urgent_running(s, &planned);
      if (!victim) break;
      preempt(*victim);
      ++report.preempted;
      fits = reserve(*s, n);
    }
    if (!fits) {  // it is the least urgent left: it waits for memory
      preempt(*s);
      ++report.preempted;
      continue;
    }
    if (pending > 1) {
      prefill_left -= int(n);
      report.prefill_tokens += int(n);
    } else {
      ++report.decode_tokens;
    }
    planned.push_back(Planned{s, n, n == pending});
  }
}

int EngineScheduler::prefill_budget(int decoders) const {
  if (decoders == 0) return options_.step_tokens;  // nobody's pace to protect: full speed
  int budget = std::min(options_.interleaved_prefill, options_.step_tokens - decoders);
  if (options_.prefill_itl_slack > 0 && decode_step_seconds_ > 0 && prefill_token_seconds_ > 0) {
    // Tokens that fit in the slack of a decode-only step.
    const double fit = options_.prefill_itl_slack * decode_step_seconds_ / prefill_token_seconds_;
    budget = std::min(budget, std::max(options_.min_prefill_chunk, int(fit)));
  }
  return std::max(1, budget);
}

void EngineScheduler::learn_step_costs(const StepReport& r, int decoders) {
  constexpr double kAlpha = 0.2;
  auto ewma = [](double& v, double x) { v = v == 0 ? x : (1 - kAlpha) * v + kAlpha * x; };
  if (r.prefill_tokens == 0) {
    if (decoders > 0) ewma(decode_step_seconds_, r.forward_seconds);
  } else if (decoders == 0) {
    ewma(prefill_token_seconds_, r.forward_seconds / r.prefill_tokens);
  } else if (decode_step_seconds_ > 0) {
    ewma(prefill_token_seconds_, std::max(0.0, r.forward_seconds - decode_step_seconds_) / r.prefill_tokens);
  }
}

void EngineScheduler::after_forward(const std::vector<Planned>& planned, StepReport& report) {
  const size_t vocab = size_t(model_.config().vocab_size);
  size_t row = 0;
  for (size_t i = 0; i < planned.size(); ++i) {
    const Planned& p = planned[i];
    Sequence& s = *p.seq;
    const int64_t old = s.computed;
    s.computed += p.n;
    if (options_.prefix_cache) publish_full_blocks(s, old);
    if (!p.logits) continue;
    bool finished = false;
    const bool constrained = s.constraint != nullptr;
    if (contained(s, "sampling or its on_text callback", [&] {
          finished = constrained ? sample_next(s, logits_.data() + row * vocab) : accept_token(s, sampled_[i]);
        }))
      report.finished += finished;
    row += constrained;
  }
}

void EngineScheduler::publish_full_blocks(Sequence& s, int64_t old_computed) {
  const int bs = pool_.block_size();
  for (int64_t b = old_computed / bs; b < s.computed / bs; ++b)
    blocks_.publish(s.scope, s.table, size_t(b), s.tokens.data() + b * bs);
}

bool EngineScheduler::sample_next(Sequence& s, float* logits) {
  const size_t vocab = size_t(model_.config().vocab_size);
  if (s.constraint) {
    // Tokens still to come: the request's limit, or the context's if that is nearer.
    const int64_t left = std::min<int64_t>(s.request.max_tokens - s.result.completion_tokens,
                                           context_ + 1 - int64_t(s.tokens.size()));
    if (s.constraint->mask(std::span<float>(logits, vocab), int(std::max<int64_t>(left, 0))) == 0) {
      fail_sequence(s, "structured output: no token continues the JSON answer (" + std::to_string(left) + " tokens left)");
      return true;
    }
  }
  // The sampler may modify logits (penalties): they are this step's scratch.
  return accept_token(s, s.sampler.sample(std::span<float>(logits, vocab), s.tokens));
}

bool EngineScheduler::accept_token(Sequence& s, int32_t next) {
  const Tokenizer& tok = model_.tokenizer();
  if (tok.is_end_of_generation(next) && !s.request.ignore_eos) {
    finish(s, FinishReason::kStop);
    return true;
  }
  // A request whose deadline passed (or that was cancelled) during its prefill gets no first
  // token: its client then hears the error as a status, not as a stream that breaks off.
  if (s.result.completion_tokens == 0 && s.request.should_stop && s.request.should_stop()) {
    finish(s, FinishReason::kCancelled);
    return true;
  }
  ++s.result.completion_tokens;
  const int32_t prev = s.tokens.back();
  s.tokens.push_back(next);
  const auto now = Clock::now();
  const bool first = s.result.completion_tokens == 1;
  if (first) s.result.ttft_seconds = seconds_between(s.submitted, now);
  if (on_token_timing) on_token_timing(first, seconds_between(s.last_token, now));
  s.last_token = now;
  const std::string_view piece = tok.piece(prev, next);
  if (s.constraint && !s.constraint->accept(piece)) {
    fail_sequence(s, "structured output: token " + std::to_string(next) + " left the JSON grammar");
    return true;
  }
  if (s.stream.push(piece) || (s.constraint && s.constraint->finished())) {
    finish(s, FinishReason::kStop);
    return true;
  }
  // Same order of checks as Generator: no position left, then the token limit.
  if (int64_t(s.tokens.size()) > context_ || s.result.completion_tokens >= s.request.max_tokens) {
    finish(s, FinishReason::kLength);
    return true;
  }
  return false;
}

void EngineScheduler::finish(Sequence& s, FinishReason how) {
  if (s.computed < 0) return;  // already finished
  blocks_.release_all(s.table);
  if (how != FinishReason::kError) {
    try {
      s.stream.finish();  // flushes held-back text through on_text
    } catch (const std::exception& e) {
      how = FinishReason::kError;
      s.result.error = std::string("its on_text callback threw: ") + e.what();
    } catch (...) {
      how = FinishReason::kError;
      s.result.error = "its on_text callback threw a non-standard exception";
    }
    if (how == FinishReason::kError && on_sequence_failure) on_sequence_failure(s.request.request_id, s.result.error);
  }
  s.result.finish = how;
  s.result.text = s.stream.text();
  s.result.total_seconds = seconds_between(s.submitted, Clock::now());
  auto done = std::move(s.request.on_finish);
  s.request.on_finish = nullptr;
  s.request.should_stop = nullptr;
  s.computed = -1;  // marks it for retire_finished()
  if (!done) return;
  try {
    done(s.result);
  } catch (const std::exception& e) {
    // Nothing is left to tell this request; the others are unaffected.
    if (on_sequence_failure) on_sequence_failure(s.request.request_id, std::string("its on_finish callback threw: ") + e.what());
  } catch (...) {
    if (on_sequence_failure) on_sequence_failure(s.request.request_id, "its on_finish callback threw a non-standard exception");
  }
}

void EngineScheduler::retire_finished() {
  auto finished = [](const SeqPtr& s) { return s->computed < 0; };
  for (auto& s : running_)
    if (finished(s)) --running_per_class_[size_t(s->cls)];
  running_.erase(std::remove_if(running_.begin(), running_.end(), finished), running_.end());
  waiting_.erase(std::remove_if(waiting_.begin(), waiting_.end(), finished), waiting_.end());
}

std::vector<std::string> EngineScheduler::request_ids() const {
  std::vector<std::string> ids;
  for (const auto* list : {&running_, &waiting_}) {
    for (const auto& s : *list) ids.push_back(s->request.request_id.empty() ? "(no id)" : s->request.request_id);
  }
  return ids;
}

void EngineScheduler::abort_all(FinishReason how, const std::string& error) {
  for (auto* list : {&running_, &waiting_}) {
    for (auto& s : *list) {
      if (how == FinishReason::kError) s->result.error = error;
      finish(*s, how);
    }
  }
  retire_finished();
}

}  // namespace sluice::inference
