// The runtime half of Pipeline: intake (submit), completion accounting (through
// PipelineLifecycle, graph/pipeline_lifecycle.h), drain and the read-only accessors. The graph
// itself is made by Pipeline::build (graph/pipeline_build.cc).
#include "graph/pipeline.h"

#include <algorithm>
#include <chrono>

#include "graph/admission.h"
#include "graph/pipeline_state.h"
#include "graph/tsan_annotations.h"

namespace sluice {

Pipeline::Pipeline(std::unique_ptr<State> state) : state_(std::move(state)) {}

Pipeline::~Pipeline() {
  if (state_->started.load() && !draining()) drain(0);
  state_.reset();
}

void Pipeline::start() {
  for (auto& s : state_->stages) s->node->start();
  state_->started.store(true, std::memory_order_release);
}

std::optional<SpanContext> Pipeline::start_span(std::string_view incoming_traceparent) const {
  if (!state_->tracer) return std::nullopt;
  return state_->tracer->start_span(incoming_traceparent);
}

Status Pipeline::submit(const std::string& source, const RequestPtr& request) {
  State& s = *state_;
  Nanos now = s.clock->now();
  if (request->arrival == 0) request->arrival = now;
  if (request->priority >= s.class_names.size()) request->priority = static_cast<std::uint8_t>(s.default_class);
  if (request->deadline == kNoDeadline) {
    const Nanos slo = s.class_deadlines[request->priority];
    request->deadline = request->arrival + (slo > 0 ? slo : s.default_deadline);
  }
  // With tracing on, what a node passes on (span.traceparent()) names this request's span.
  if (s.tracer && !request->span.valid()) request->span = s.tracer->start_span(request->traceparent);
  auto entry = s.sources.find(source);
  Status status;
  if (entry == s.sources.end()) {
    status = Status::Error(StatusCode::kInternal, "pipeline '" + s.name + "' has no source '" + source + "'");
  } else if (!s.started.load(std::memory_order_acquire) || draining()) {
    status = Status::Error(StatusCode::kUnavailable, "pipeline '" + s.name + "' is " + (draining() ? "draining" : "not started"),
                           AbortCause::kShutdown);
  } else if (!s.in_flight.try_enter(s.max_in_flight)) {
    status = Status::Error(StatusCode::kOverloaded,
                           "pipeline '" + s.name + "' has " + std::to_string(s.max_in_flight) + " requests in flight (runtime.max_in_flight)",
                           AbortCause::kShed);
    status.retry_after_seconds = 1;
  } else if (AdmissionController* admission = entry->second.admission) {
    // Intake-time admission: decided and its place reserved before any stage runs.
    status = admission->admit(request, source, now);
    if (!status.ok()) s.in_flight.undo_enter();
  }
  if (!status.ok()) {
    // Not admitted: completed here, without the lifecycle (it never counted as in flight).
    request->complete(status, now);
    PipelineLifecycle::outcome(s.lifecycle->of(*request), status.code).inc();
    return status;
  }
  request->set_lifecycle(s.lifecycle.get());
  s.lifecycle->of(*request).in_flight.add(1);
  s.live.add(request);
  auto batch = std::make_shared<Batch>();
  batch->id = s.next_batch_id.fetch_add(1, std::memory_order_relaxed);
  batch->requests.push_back(request);
  batch->pending_leaves.store(entry->second.leaves_below, std::memory_order_relaxed);
  SLUICE_HANDOFF_RELEASE(batch.get());
  entry->second.entry->try_put(Hop{std::move(batch), now});
  return Status::Ok();
}

DrainReport Pipeline::drain() { return drain(state_->drain_timeout); }

DrainReport Pipeline::drain(Nanos timeout) {
  State& s = *state_;
  DrainReport report;
  auto t0 = std::chrono::steady_clock::now();
  std::size_t before = in_flight();
  s.in_flight.start_draining();
  s.in_flight.wait_until_empty(timeout);
  std::vector<RequestPtr> remaining = s.live.take_unfinished();
  Nanos now = s.clock->now();
  for (auto& r : remaining) {
    if (r->complete(Status::Error(StatusCode::kUnavailable,
                                  "abandoned at shutdown: still running after the drain timeout of " +
                                      std::to_string(nanos_to_seconds(timeout)) + "s",
                                  AbortCause::kShutdown),
                    now)) {
      report.abandoned.push_back(r->id());
    }
  }
  report.completed_during_drain = before > report.abandoned.size() ? before - report.abandoned.size() : 0;
  for (auto& st : s.stages) st->node->stop();
  s.flow->wait_for_all();
  report.waited = std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0).count();
  return report;
}

std::uint64_t Pipeline::next_request_id() { return state_->next_id.fetch_add(1, std::memory_order_relaxed); }

int Pipeline::class_index(std::string_view name) const {
  const auto& names = state_->class_names;
  for (std::size_t i = 0; i < names.size(); ++i) {
    if (names[i] == name) return static_cast<int>(i);
  }
  return -1;
}

const std::vector<std::string>& Pipeline::class_names() const { return state_->class_names; }
int Pipeline::default_class() const { return state_->default_class; }
Nanos Pipeline::default_deadline() const { return state_->default_deadline; }
bool Pipeline::draining() const { return state_->in_flight.draining(); }
std::size_t Pipeline::in_flight() const { return state_->in_flight.count(); }
std::size_t Pipeline::live_list_entries() const { return state_->live.entries(); }
const std::string& Pipeline::name() const { return state_->name; }
const std::vector<std::string>& Pipeline::stage_names() const { return state_->stage_names; }
Clock& Pipeline::clock() const { return *state_->clock; }
MetricsRegistry& Pipeline::metrics() const { return *state_->metrics; }

bool Pipeline::ready() const {
  if (!state_->started.load(std::memory_order_acquire) || draining()) return false;
  for (const auto& s : state_->stages) {
    if (!s->node->ready()) return false;
  }
  return true;
}

std::string Pipeline::admission_detail() const {
  std::string out = "{";
  for (const auto& [name, source] : state_->sources) {
    if (!source.admission) continue;
    if (out.size() > 1) out += ",";
    out += "\"" + name + "\":" + source.admission->readiness_detail();
  }
  return out + "}";
}

AdmissionController* Pipeline::admission(const std::string& source) const {
  auto it = state_->sources.find(source);
  return it == state_->sources.end() ? nullptr : it->second.admission;
}

std::vector<std::shared_ptr<DocumentStore>> Pipeline::document_stores() const {
  std::vector<std::shared_ptr<DocumentStore>> out;
  for (const auto& s : state_->stages) {
    auto store = s->node->document_store();
    if (store && std::find(out.begin(), out.end(), store) == out.end()) out.push_back(std::move(store));
  }
  return out;
}

std::vector<CacheTier*> Pipeline::cache_tiers() const {
  std::vector<CacheTier*> out;
  for (const auto& s : state_->stages) {
    if (CacheTier* tier = s->node->cache_tier()) out.push_back(tier);
  }
  return out;
}

bool Pipeline::answers_embeddings() const {
  for (const auto& s : state_->stages)
    if (s->node->answers_embeddings()) return true;
  return false;
}

}  // namespace sluice
