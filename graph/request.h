// Request: the envelope of one client request as it flows through a pipeline.
//
// A Request is shared (RequestPtr) between the connector that made it, the graph nodes that
// work on it and the engines that stream its answer. Identity fields are set before it is
// submitted and never change after. The answer leaves through `emit_token` / `emit_event` into
// the request's ResponseSink, and the request ends through `complete` exactly once: the first
// call wins, later calls are ignored, so a failing node, a timeout, a client disconnect and
// the normal finish may race safely. After completion no more tokens reach the sink.
//
// Thread-safety: emit_*, complete, cancel, attachments and the status getters may be called
// from any thread. The input (`input`) is read-only after submission.
#pragma once

#include <any>
#include <atomic>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "graph/clock.h"
#include "graph/mutex.h"
#include "graph/sampling_params.h"
#include "graph/span_context.h"
#include "graph/status.h"
#include "graph/trace.h"

namespace sluice::constrain {
class JsonGrammar;  // inference/constrain/json_grammar.h; held here, used by the generate node
}

namespace sluice {

class Request;
using RequestPtr = std::shared_ptr<Request>;

struct ChatMessage {
  std::string role;     // "system", "user", "assistant"
  std::string content;
};

// What shape the answer must take (OpenAI's response_format, tools and tool_choice), read by
// connectors/http/structured_request.h. A grammar makes the generate node constrain decoding
// to it (inference/constrain/); nodes that cannot (extractive answers, templates) refuse it.
struct StructuredOutput {
  enum class Kind { kText, kJson, kToolCall };
  Kind kind = Kind::kText;
  std::shared_ptr<const constrain::JsonGrammar> grammar;  // kJson, kToolCall
  // kToolCall: the function called (tool_choice naming one; the answer is its arguments), or
  // empty for tool_choice "required" (the answer is {"name":..,"arguments":{..}}).
  std::string tool_name;
};

// Decoding controls, as OpenAI's request fields map onto them. Unset fields keep the engine's
// defaults; `max_tokens` < 0 means "until the model stops or the context is full".

// What the caller asked for, independent of the connector that received it.
struct RequestInput {
  enum class Kind { kChat, kCompletion, kRetrieve, kEmbed };
  Kind kind = Kind::kChat;
  std::string model;
  std::vector<ChatMessage> messages;  // kChat
  std::string prompt;                 // kCompletion, kRetrieve (the query)
  std::vector<std::string> inputs;    // kEmbed: the texts to embed (POST /v1/embeddings)
  bool embeddings_base64 = false;     // kEmbed: answer with base64 float32 (encoding_format)
  SamplingParams sampling;
  int max_tokens = -1;                // -1: not given (the generating node's limit applies)
  std::vector<std::string> stop;      // stop strings, excluded from the answer
  StructuredOutput structured;
  bool stream = false;
  // The text retrieval and templates work on: the last user message, or the prompt.
  std::string query() const;
};

// For nodes that answer without a model (extractive answers, templates): the 400 "unsupported"
// a request asking for structured output gets there (naming response_format or tools and
// `node`), or Ok. Answering it with text would break the client downstream.
Status refuse_structured_output(const RequestInput& input, std::string_view node);

// Token counts for the OpenAI `usage` object.
struct Usage {
  int prompt_tokens = 0;
  int completion_tokens = 0;
};

// Whether a side event belongs to the connection ("heartbeat", "progress"; see on_event) rather
// than to the answer: what a cache stores or a job result carries leaves them out.
inline bool connection_event(std::string_view type) { return type == "heartbeat" || type == "progress"; }

// Receives a request's answer. Calls for one request never overlap and arrive in order:
// tokens and events first, then on_complete exactly once.
class ResponseSink {
 public:
  virtual ~ResponseSink() = default;
  virtual void on_token(std::string_view piece) = 0;
  // A structured side event (type, JSON object text), e.g. "sources"; two kinds belong to the
  // connection, not to the answer: "heartbeat" (a queued stream is alive) and "progress"
  // ({"stage": name}: a stream passed that stage; the runtime sends it until the answer ends,
  // and a sink shows it only before the first token).
  virtual void on_event(std::string_view type, std::string_view json) {}
  // The same event, its text handed over: a sink that keeps the text (a large answer's
  // vectors or ranked chunks) takes the buffer instead of copying it. Default: on_event.
  virtual void on_owned_event(std::string_view type, std::string&& json) { on_event(type, json); }
  virtual void on_complete(const Request& request) = 0;
};

// The runtime's hook into completion (metrics, in-flight accounting). Set by the pipeline.
class RequestLifecycle {
 public:
  virtual ~RequestLifecycle() = default;
  virtual void on_first_token(Request& request) {}
  virtual void on_token(Request& request, Nanos since_previous) {}
  virtual void on_complete(Request& request) = 0;
};

// Cache-line aligned, so with make_shared the reference counts (which the intake thread
// changes while a worker is already on the request) do not share a line with the fields every
// stage reads.
class alignas(64) Request : public std::enable_shared_from_this<Request> {
 public:
  Request(std::uint64_t id, RequestInput input, std::shared_ptr<ResponseSink> sink)
      : id_(id), input_(std::move(input)), sink_(std::move(sink)) {}
  Request(const Request&) = delete;
  Request& operator=(const Request&) = delete;

 private:
  // Read at every stage boundary: declared first, so they share a cache line with priority,
  // arrival and deadline below (the runtime touches one line per request per stage).
  std::atomic<bool> cancelled_{false};
  std::atomic<bool> done_{false};
  std::atomic<int> cancel_cause_{0};
  RequestLifecycle* lifecycle_ = nullptr;

 public:

  // ---- identity, fixed before submission ----
  std::uint64_t id() const { return id_; }
  const RequestInput& input() const { return input_; }
  static constexpr std::uint8_t kDefaultPriority = 255;
  // Index into the pipeline's classes, 0 = most urgent; kDefaultPriority: the pipeline's default.
  std::uint8_t priority = kDefaultPriority;
  bool want_timings = false;       // client asked for its per-stage timings
  Nanos arrival = 0;               // when the connector received it
  Nanos deadline = kNoDeadline;    // absolute; past it nodes stop spending work
  std::string tenant;              // scopes caches and fairness; empty = default tenant
  std::string external_id;         // e.g. "chatcmpl-..." shown to the client
  std::string traceparent;         // W3C trace context as received (empty: none); passed on when tracing is off
  SpanContext span;                // with tracing on, this request's span (span.traceparent() is what to pass on); else invalid

  // ---- flow ----
  Trace& trace() { return trace_; }
  const Trace& trace() const { return trace_; }

  // Any node may check these before spending work. A cancelled request is completed by the
  // runtime at the next stage boundary, or by the engine at its next step.
  void cancel(AbortCause cause) {
    cancel_cause_.store(static_cast<int>(cause), std::memory_order_relaxed);
    cancelled_.store(true, std::memory_order_release);
  }
  bool cancelled() const { return cancelled_.load(std::memory_order_acquire); }
  AbortCause cancel_cause() const { return static_cast<AbortCause>(cancel_cause_.load(std::memory_order_relaxed)); }
  bool done() const { return done_.load(std::memory_order_acquire); }
  // Neither done nor cancelled: worth spending work on.
  bool active() const { return !done() && !cancelled(); }
  bool expired(Nanos now) const { return now >= deadline; }

  // ---- answer ----
  // Streams a piece of the answer; ignored after completion. `now` stamps TTFT and ITL.
  void emit_token(std::string_view piece, Nanos now);
  void emit_event(std::string_view type, std::string_view json);
  // emit_event for a text the caller gives up: taps see it first, then the sink may keep the
  // buffer (on_owned_event), so a megabyte answer is not copied on its way out.
  void emit_owned_event(std::string_view type, std::string json);
  // Ends the request; returns false if it had already ended. `now` stamps the end time.
  bool complete(Status status, Nanos now);

  // ---- results, readable after completion (and by the sink in on_complete) ----
  const Status& status() const { return status_; }
  Usage usage;                        // set by the engine that produced the answer
  std::string finish_reason = "stop"; // "stop", "length", "cancelled", "error"
  Nanos first_token_at = 0;
  Nanos last_token_at = 0;
  Nanos completed_at = 0;
  std::uint32_t tokens_emitted = 0;

  // ---- attachments: results a node leaves for later nodes (retrieval hits, prompts) ----
  template <class T>
  void attach(const std::string& key, std::shared_ptr<T> value) {
    MutexLock lock(mu_);
    attachments_[key] = std::move(value);
  }
  template <class T>
  std::shared_ptr<T> attachment(const std::string& key) const {
    MutexLock lock(mu_);
    auto it = attachments_.find(key);
    if (it == attachments_.end()) return nullptr;
    auto* p = std::any_cast<std::shared_ptr<T>>(&it->second);
    return p ? *p : nullptr;
  }

  // Set by the pipeline at submission; not for nodes.
  void set_lifecycle(RequestLifecycle* lifecycle) { lifecycle_ = lifecycle; }

  // A tap sees the answer as the sink does (tokens and events under the request's lock, in
  // order, then on_complete once, after the lock is released, so it may read attachments):
  // the answer caches record a missed request's answer through one
  // (nodes/cache/answer_recorder.h). Ignored after completion.
  void add_tap(std::shared_ptr<ResponseSink> tap);

 private:
  const std::uint64_t id_;
  const RequestInput input_;
  // Serialises sink calls so a late token never follows on_complete. It also orders the
  // writes of status_ and the token fields before done_ is set; readers after completion rely
  // on done_ (acquire), not on the lock, so those fields are not marked GUARDED_BY.
  mutable Mutex mu_;
  std::shared_ptr<ResponseSink> sink_ GUARDED_BY(mu_);
  std::vector<std::shared_ptr<ResponseSink>> taps_ GUARDED_BY(mu_);
  Trace trace_;
  Status status_;
  std::unordered_map<std::string, std::any> attachments_ GUARDED_BY(mu_);
};

}  // namespace sluice
