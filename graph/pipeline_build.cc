// Pipeline::build: a validated spec becomes a running graph in four steps: the runtime settings
// and metrics (Pipeline::State), the plan (graph/pipeline_plan.h: chains, joins, leaves,
// links), the stages (each node made by its kind's factory with its NodeContext; admission
// controllers installed for the sources upstream), then the oneTBB objects and edges
// (graph/pipeline_flow.h). Every factory refusal is collected and thrown together as SpecErrors.
#include <algorithm>
#include <cstdio>
#include <functional>
#include <set>
#include <stdexcept>

#include <google/protobuf/io/coded_stream.h>
#include <nlohmann/json.hpp>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>

#include "graph/admission.h"
#include "graph/fnv1a.h"
#include "graph/pipeline.h"
#include "graph/pipeline_state.h"
#include "graph/proto_duration.h"
#include "graph/spec_validator.h"

namespace sluice {

namespace {

std::string pipeline_fingerprint(const PipelineSpec& p) {
  std::string bytes;
  {
    google::protobuf::io::StringOutputStream raw(&bytes);
    google::protobuf::io::CodedOutputStream out(&raw);
    out.SetSerializationDeterministic(true);
    for (const NodeSpec& n : p.nodes()) n.SerializeToCodedStream(&out);
    for (const EdgeSpec& e : p.edges()) e.SerializeToCodedStream(&out);
  }
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(fnv1a64(bytes)));
  return hex;
}

// What node `ns` (index `index`) gets from the runtime: identity, clock and metrics, batches made
// for its part of the graph, and the admission hook for the sources upstream of it.
NodeContext node_context(Pipeline::State& state, const PipelinePlan& plan, const LoadedSpec& spec, const NodeSpec& ns, int index) {
  NodeContext ctx;
  ctx.name = ns.name();
  ctx.pipeline_name = state.name;
  ctx.stage_index = static_cast<std::uint16_t>(index);
  if (ns.degrade().action() == "shrink") ctx.shrink_factor = ns.degrade().factor();
  ctx.pipeline_fingerprint = pipeline_fingerprint(spec.pipeline);
  ctx.clock = state.clock;
  ctx.metrics = state.metrics;
  ctx.base_dir = spec.base_dir;
  int below = plan.leaves_below.at(ns.name());
  ctx.make_batch = [next_batch_id = &state.next_batch_id, below] {
    auto b = std::make_shared<Batch>();
    b->id = next_batch_id->fetch_add(1, std::memory_order_relaxed);
    b->pending_leaves.store(below, std::memory_order_relaxed);
    return b;
  };
  ctx.class_names = state.class_names;
  // Called from the factory only, while `plan` is alive.
  ctx.install_admission = [&state, &plan, node = ns.name()](AdmissionController* controller) {
    // Every source upstream of the node consults the controller at intake.
    for (const std::string& source : plan.sources_upstream(node)) {
      AdmissionController*& slot = state.sources[source].admission;
      if (slot && slot != controller) {
        throw std::invalid_argument("source '" + source + "' already feeds another admission node; a request may pass one priority_router");
      }
      slot = controller;
    }
    auto& list = state.controllers;
    if (std::find(list.begin(), list.end(), controller) == list.end()) list.push_back(controller);
  };
  return ctx;
}

BudgetAmount own_budget(const NodeSpec& ns) { return {duration_nanos(ns.budget()), ns.budget_share()}; }

// By node index: the budgets the stages after it hold, one total per path to a leaf (pareto
// set, graph/stage_budget.h); {0} for a leaf.
std::vector<std::vector<BudgetAmount>> budgets_after(const PipelineSpec& p) {
  std::map<std::string, int> index;
  for (int i = 0; i < p.nodes_size(); ++i) index[p.nodes(i).name()] = i;
  std::vector<std::vector<int>> successors(static_cast<std::size_t>(p.nodes_size()));
  for (const EdgeSpec& e : p.edges()) {
    auto from = index.find(e.from()), to = index.find(e.to());
    if (from != index.end() && to != index.end()) successors[static_cast<std::size_t>(from->second)].push_back(to->second);
  }
  std::vector<std::vector<BudgetAmount>> after(successors.size());
  std::vector<bool> known(successors.size(), false);
  // The graph is acyclic (validated): a depth-first walk fills each node once.
  std::function<const std::vector<BudgetAmount>&(int)> fill = [&](int i) -> const std::vector<BudgetAmount>& {
    auto& out = after[static_cast<std::size_t>(i)];
    if (known[static_cast<std::size_t>(i)]) return out;
    known[static_cast<std::size_t>(i)] = true;
    for (int next : successors[static_cast<std::size_t>(i)]) {
      const BudgetAmount own = own_budget(p.nodes(next));
      for (const BudgetAmount& rest : fill(next)) add_budget_path(out, {own.fixed + rest.fixed, own.share + rest.share});
    }
    if (out.empty()) out.push_back({});
    return out;
  };
  for (int i = 0; i < p.nodes_size(); ++i) fill(i);
  return after;
}

// Makes every stage; throws SpecErrors naming each node whose factory refused its config.
void make_stages(Pipeline::State& state, const PipelinePlan& plan, const LoadedSpec& spec, const NodeRegistry& registry) {
  const PipelineSpec& p = spec.pipeline;
  MetricsRegistry& metrics = *state.metrics;
  std::vector<SpecError> build_errors;
  const auto after = budgets_after(p);
  for (int i = 0; i < p.nodes_size(); ++i) {
    const NodeSpec& ns = p.nodes(i);
    const NodeKind* kind = registry.find(node_kind(ns));
    auto stage = std::make_unique<Stage>();
    stage->name = ns.name();
    stage->index = static_cast<std::uint16_t>(i);
    stage->leaf = plan.leaf[static_cast<std::size_t>(i)];
    stage->pipeline = p.name();
    stage->progress = nlohmann::json{{"stage", ns.name()}}.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    Labels l{{"stage", ns.name()}};
    stage->queue_time = &metrics.histogram("sluice_request_queue_time_seconds", "Time a request waited before a stage", l);
    stage->service_time = &metrics.histogram("sluice_stage_service_time_seconds", "Time a stage spent on a request's batch", l);
    stage->failures = &metrics.counter("sluice_stage_failures_total", "Batches on which a stage threw", l);
    const std::string& act = ns.degrade().action();  // "", "none", "skip" or "shrink"
    if (ns.has_budget() || ns.budget_share() > 0 || act == "skip" || act == "shrink") {
      const Degradation action = act == "skip"     ? Degradation::kSkip
                                 : act == "shrink" ? Degradation::kShrink
                                                   : Degradation::kNone;
      stage->budget = std::make_unique<StageBudget>(ns.name(), own_budget(ns), action, after[static_cast<std::size_t>(i)],
                                                    state.default_deadline, metrics);
      stage->budget->set_alert_sink(state.alerts.get(), p.name());
    }
    try {
      stage->node = kind->factory(ns, node_context(state, plan, spec, ns, i));
      if (!stage->node) throw std::invalid_argument("the factory made no node");
      stage->sync = dynamic_cast<SyncNode*>(stage->node.get());
      stage->async = dynamic_cast<AsyncNode*>(stage->node.get());
      // The plan chained by the registered shape; the node must have it.
      if (kind->async ? !stage->async : !stage->sync) {
        throw std::logic_error("kind '" + node_kind(ns) + "' is registered with the wrong shape (async flag)");
      }
    } catch (const std::exception& e) {
      build_errors.push_back(spec.error_at("nodes[" + std::to_string(i) + "].config", ns.name(), e.what()));
      continue;
    }
    state.stage_names.push_back(ns.name());
    stage->concurrency = ns.concurrency() == 0 ? std::size_t(tbb::flow::unlimited) : ns.concurrency();
    state.stages.push_back(std::move(stage));
  }
  if (!build_errors.empty()) throw SpecErrors(std::move(build_errors));
}

}  // namespace

std::unique_ptr<Pipeline> Pipeline::build(const LoadedSpec& spec, const NodeRegistry& registry, Options options) {
  if (!options.metrics) throw std::invalid_argument("Pipeline::build needs a MetricsRegistry");
  {
    auto errors = validate_spec(spec, registry);
    if (!errors.empty()) throw SpecErrors(std::move(errors));
  }
  const PipelineSpec& p = spec.pipeline;
  std::unique_ptr<Pipeline> self(new Pipeline(std::make_unique<State>()));
  State& state = *self->state_;
  state.name = p.name();
  state.clock = options.clock;
  state.metrics = options.metrics;
  for (const auto& c : p.runtime().classes()) {
    state.class_names.push_back(c.name());
    state.class_deadlines.push_back(duration_nanos(c.deadline()));
  }
  state.default_class = self->class_index(p.runtime().default_class());
  state.default_deadline = duration_nanos(p.runtime().default_deadline());
  state.drain_timeout = duration_nanos(p.runtime().drain_timeout());
  state.max_in_flight = p.runtime().max_in_flight();
  state.flow = std::make_unique<FlowGraph>(p.runtime().threads());
  LiveLists* live = &state.live;
  options.metrics->gauge_fn("sluice_live_list_entries",
                            "Request envelopes held by the intake threads' live lists: in flight, or completed and not yet pruned",
                            {{"pipeline", state.name}}, [live] { return static_cast<double>(live->entries()); });
  state.lifecycle =
      std::make_unique<PipelineLifecycle>(*options.metrics, state.class_names, state.controllers, state.in_flight, state.live);

  if (!p.alerts().webhook().empty()) {
    const AlertsSpec& a = p.alerts();
    state.alerts = std::make_unique<AlertWebhook>(
        AlertWebhookOptions{a.webhook(), duration_or(a.has_min_interval(), a.min_interval(), 60 * kNanosPerSecond),
                            duration_or(a.has_timeout(), a.timeout(), 5 * kNanosPerSecond)},
        *options.metrics);
  }
  if (!p.tracing().endpoint().empty()) {
    const TracingSpec& t = p.tracing();
    SpanExporterOptions o;
    o.endpoint = t.endpoint();
    o.service_name = t.service_name().empty() ? "sluice" : t.service_name();
    if (t.max_queued_spans() > 0) o.max_queued_spans = t.max_queued_spans();
    if (t.batch_spans() > 0) o.batch_spans = t.batch_spans();
    o.flush_interval = duration_or(t.has_flush_interval(), t.flush_interval(), o.flush_interval);
    o.timeout = duration_or(t.has_timeout(), t.timeout(), o.timeout);
    for (const NodeSpec& n : p.nodes()) state.stage_kinds.push_back(node_kind(n));
    SpanNaming naming{p.name(), &state.class_names, &state.stage_names, &state.stage_kinds};
    state.tracer = std::make_unique<RequestTracer>(
        std::make_unique<SpanExporter>(std::move(o), std::move(naming), *state.clock, *options.metrics), t.sample_ratio());
    state.lifecycle->set_tracer(state.tracer.get());
  }
  const PipelinePlan plan = plan_pipeline(p, registry);
  for (const auto& s : plan.sources) state.sources[s].leaves_below = plan.leaves_below.at(s);
  make_stages(state, plan, spec, registry);
  state.flow->build(plan, state.stages, *state.clock, *state.lifecycle);
  for (auto& [name, source] : state.sources) source.entry = state.flow->entry(name);
  return self;
}

}  // namespace sluice
