#include "graph/request.h"

#include <utility>

namespace sluice {

std::string RequestInput::query() const {
  if (kind != Kind::kChat) return prompt;
  for (auto it = messages.rbegin(); it != messages.rend(); ++it) {
    if (it->role == "user") return it->content;
  }
  return messages.empty() ? std::string() : messages.back().content;
}

Status refuse_structured_output(const RequestInput& input, std::string_view node) {
  if (input.structured.kind == StructuredOutput::Kind::kText) return Status::Ok();
  const bool tool = input.structured.kind == StructuredOutput::Kind::kToolCall;
  return Status::Error(StatusCode::kInvalidArgument,
                       std::string(tool ? "tool calls" : "response_format JSON") + " need a generating model: this pipeline answers with its " +
                           std::string(node) + " node, which writes text (configure generate.model)")
      .with_api("unsupported", tool ? "tools" : "response_format");
}

void Request::emit_token(std::string_view piece, Nanos now) {
  MutexLock lock(mu_);
  if (done_.load(std::memory_order_relaxed)) return;
  Nanos previous = last_token_at;
  if (tokens_emitted == 0) {
    first_token_at = now;
    if (lifecycle_) lifecycle_->on_first_token(*this);
  } else if (lifecycle_) {
    lifecycle_->on_token(*this, now - previous);
  }
  last_token_at = now;
  ++tokens_emitted;
  if (sink_) sink_->on_token(piece);
  for (const auto& tap : taps_) tap->on_token(piece);
}

void Request::emit_event(std::string_view type, std::string_view json) {
  MutexLock lock(mu_);
  if (done_.load(std::memory_order_relaxed)) return;
  if (sink_) sink_->on_event(type, json);
  for (const auto& tap : taps_) tap->on_event(type, json);
}

void Request::emit_owned_event(std::string_view type, std::string json) {
  MutexLock lock(mu_);
  if (done_.load(std::memory_order_relaxed)) return;
  for (const auto& tap : taps_) tap->on_event(type, json);
  if (sink_) sink_->on_owned_event(type, std::move(json));
}

void Request::add_tap(std::shared_ptr<ResponseSink> tap) {
  MutexLock lock(mu_);
  if (done_.load(std::memory_order_relaxed)) return;
  taps_.push_back(std::move(tap));
}

bool Request::complete(Status status, Nanos now) {
  std::vector<std::shared_ptr<ResponseSink>> taps;
  {
    MutexLock lock(mu_);
    if (done_.load(std::memory_order_relaxed)) return false;
    status_ = std::move(status);
    if (!status_.ok() && finish_reason == "stop") {
      finish_reason = status_.code == StatusCode::kCancelled ? "cancelled" : "error";
    }
    completed_at = now;
    done_.store(true, std::memory_order_release);
    if (sink_) sink_->on_complete(*this);
    taps.swap(taps_);
    // The answer is delivered: a completed request no longer holds its client's buffers,
    // however long the envelope itself stays referenced (Pipeline's live lists drop it lazily).
    sink_.reset();
  }
  // Outside the lock (done_ is set, so nothing more reaches them): a tap may read attachments.
  for (const auto& tap : taps) tap->on_complete(*this);
  // Outside the lock: the lifecycle may release capacity that lets another request in.
  if (lifecycle_) lifecycle_->on_complete(*this);
  return true;
}

}  // namespace sluice
