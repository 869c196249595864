#include "graph/pipeline.h"

#include <oneapi/tbb/flow_graph.h>
#include <oneapi/tbb/global_control.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cstdio>
#include <map>
#include <set>
#include <tuple>

#include "graph/admission.h"
#include "graph/spec_validator.h"
#include "graph/tsan_annotations.h"

namespace sluice {

namespace flow = tbb::flow;

namespace {

constexpr std::size_t kStatusCodes = static_cast<std::size_t>(StatusCode::kInternal) + 1;
constexpr std::size_t kAbortCauses = static_cast<std::size_t>(AbortCause::kShutdown) + 1;

// What travels along a tbb edge: the batch and when it became ready for the next stage, so
// each stage's queue wait is known even when parallel branches share the batch.
struct Hop {
  BatchPtr batch;
  Nanos ready_at = 0;
#if defined(__SANITIZE_THREAD__)
  // oneTBB copies, moves and destroys hops inside its task objects, whose hand-off between
  // threads is invisible to TSan (the library is not instrumented), on the receiving thread
  // before any stage code runs. In TSan builds the hop's own bytes are treated as oneTBB's
  // (not checked), every copy acquires the batch and every destruction releases it before
  // the reference is dropped outside the unchecked region (graph/tsan_annotations.h).
  Hop() = default;
  Hop(BatchPtr b, Nanos t) : batch(std::move(b)), ready_at(t) {}
  // The unchecked region opens before the members are built (owned_begin) and closes in the
  // body, so even their default construction is inside it.
  Hop(const Hop& o) : batch(owned_begin(o.batch)), ready_at(o.ready_at) { owned_end(); }
  Hop(Hop&& o) noexcept : batch(owned_begin(std::move(o.batch))), ready_at(o.ready_at) { owned_end(); }
  Hop& operator=(const Hop& o) { return assign(o); }
  Hop& operator=(Hop&& o) noexcept { return assign(std::move(o)); }
  ~Hop() { drop(); }

 private:
  template <class P>
  static P&& owned_begin(P&& p) {
    SLUICE_TBB_OWNED_BEGIN();
    return std::forward<P>(p);
  }
  void owned_end() {
    Batch* p = batch.get();
    SLUICE_TBB_OWNED_END();
    if (p) SLUICE_HANDOFF_ACQUIRE(p);
  }
  template <class Other>
  Hop& assign(Other&& o) {
    drop();
    SLUICE_TBB_OWNED_BEGIN();
    batch = std::forward<Other>(o).batch;
    ready_at = o.ready_at;
    owned_end();
    return *this;
  }
  void drop() {
    SLUICE_TBB_OWNED_BEGIN();
    BatchPtr held = std::move(batch);
    SLUICE_TBB_OWNED_END();
    if (held) SLUICE_HANDOFF_RELEASE(held.get());
  }  // `held` releases its reference here, checked
#endif
};

Nanos duration_nanos(const google::protobuf::Duration& d) {
  return static_cast<Nanos>(d.seconds()) * kNanosPerSecond + d.nanos();
}

}  // namespace

// ------------------------------------------------------------------ per-class accounting

class Pipeline::Lifecycle final : public RequestLifecycle {
 public:
  struct ClassMetrics {
    Histogram* e2e;
    Histogram* ttft;
    Histogram* itl;
    Histogram* tokens_per_second;
    Counter* tokens;
    ShardedCount in_flight;
    ShardedCount in_service;
    std::array<Counter*, kStatusCodes> outcomes{};  // by StatusCode value
  };

  Lifecycle(Pipeline& p) : p_(p) {
    MetricsRegistry& m = *p.metrics_;
    for (const auto& c : p.class_names_) {
      auto cm = std::make_unique<ClassMetrics>();
      Labels l{{"class", c}};
      cm->e2e = &m.histogram("sluice_e2e_request_latency_seconds", "Time from arrival to completion", l);
      cm->ttft = &m.histogram("sluice_time_to_first_token_seconds", "Time from arrival to the first answer token", l);
      cm->itl = &m.histogram("sluice_inter_token_latency_seconds", "Time between consecutive answer tokens", l);
      cm->tokens_per_second = &m.histogram("sluice_request_tokens_per_second", "Answer tokens per second of a request, first to last token", l,
                                           Histogram::exponential(1, 1.5, 30));
      cm->tokens = &m.counter("sluice_generation_tokens_total", "Answer tokens streamed to clients", l);
      for (StatusCode code : {StatusCode::kOk, StatusCode::kInvalidArgument, StatusCode::kNotFound, StatusCode::kOverloaded,
                              StatusCode::kDeadlineExceeded, StatusCode::kCancelled, StatusCode::kUnavailable, StatusCode::kInternal}) {
        cm->outcomes[static_cast<std::size_t>(code)] = &m.counter("sluice_requests_total", "Completed requests by class and outcome",
                                        {{"class", c}, {"outcome", std::string(status_code_name(code))}});
      }
      ClassMetrics* raw = cm.get();
      m.gauge_fn("sluice_requests_in_flight", "Requests admitted and not yet completed", l,
                 [raw] { return static_cast<double>(raw->in_flight.value()); });
      m.gauge_fn("sluice_queue_depth", "Admitted requests of the class waiting between stages (in flight, not in service)", l,
                 [raw] {
                   return static_cast<double>(std::max<std::int64_t>(0, raw->in_flight.value() - raw->in_service.value()));
                 });
      classes_.push_back(std::move(cm));
    }
    for (AbortCause cause : {AbortCause::kClientDisconnect, AbortCause::kTimeout, AbortCause::kShed, AbortCause::kFailure,
                             AbortCause::kShutdown}) {
      aborts_[static_cast<std::size_t>(cause)] = &m.counter("sluice_request_aborts_total", "Requests that did not finish normally, by cause",
                                  {{"cause", std::string(abort_cause_name(cause))}});
    }
  }

  ClassMetrics& of(const Request& r) { return *classes_[std::min<std::size_t>(r.priority, classes_.size() - 1)]; }
  static Counter& outcome(ClassMetrics& cm, StatusCode code) { return *cm.outcomes[static_cast<std::size_t>(code)]; }

  void on_first_token(Request& r) override {
    of(r).ttft->observe(nanos_to_seconds(r.first_token_at - r.arrival));
    of(r).tokens->inc();
  }
  void on_token(Request& r, Nanos since_previous) override {
    ClassMetrics& cm = of(r);
    cm.itl->observe(nanos_to_seconds(since_previous));
    cm.tokens->inc();
  }
  void on_complete(Request& r) override {
    ClassMetrics& cm = of(r);
    cm.e2e->observe(nanos_to_seconds(r.completed_at - r.arrival));
    outcome(cm, r.status().code).inc();
    if (!r.status().ok() && r.status().cause != AbortCause::kNone) aborts_[static_cast<std::size_t>(r.status().cause)]->inc();
    if (r.tokens_emitted > 1 && r.last_token_at > r.first_token_at) {
      cm.tokens_per_second->observe((r.tokens_emitted - 1) / nanos_to_seconds(r.last_token_at - r.first_token_at));
    }
    cm.in_flight.add(-1);
    // Usually none or one; a controller ignores requests it did not admit.
    for (AdmissionController* a : p_.controllers_) a->on_complete(r, r.completed_at);
    p_.on_request_complete(r);
  }

 private:
  Pipeline& p_;
  std::vector<std::unique_ptr<ClassMetrics>> classes_;
  std::array<Counter*, kAbortCauses> aborts_{};  // by AbortCause value; kNone unused
};

// ------------------------------------------------------------------ graph

struct Pipeline::Impl {
  struct Stage {
    std::string name;
    std::uint16_t index = 0;
    std::unique_ptr<Node> node;
    SyncNode* sync = nullptr;     // exactly one of sync and async is set
    AsyncNode* async = nullptr;
    std::size_t concurrency = 0;  // tbb::flow::unlimited when the spec says 0
    bool leaf = false;      // no successors: its batches leave the graph after it
    std::string pipeline;   // the pipeline's name, for errors raised where batches leave
    Histogram* queue_time = nullptr;
    Histogram* service_time = nullptr;
    Counter* failures = nullptr;
  };

  std::unique_ptr<tbb::global_control> threads;
  flow::graph graph;
  std::vector<std::unique_ptr<Stage>> stages;
  std::vector<std::unique_ptr<flow::graph_node>> owned;  // every tbb node, destroyed after the graph drained
  std::map<std::string, flow::sender<Hop>*> out;         // name -> where its output leaves
  std::map<std::string, std::vector<flow::receiver<Hop>*>> in;  // node name -> one receiver per input edge
  std::map<std::string, flow::broadcast_node<Hop>*> entries;    // source name -> entry
  std::map<std::string, AdmissionController*> admission;         // source name -> its controller, if any
  std::map<std::string, int> leaves_below;                       // name -> leaves a batch from it reaches

  ~Impl() { graph.wait_for_all(); }
};

namespace {

using Impl = Pipeline::Impl;
using Stage = Pipeline::Impl::Stage;

// Completes a request that must not get more work: cancelled, or past its deadline. Returns
// whether it did.
bool retire_if_inactive(Request& r, Nanos now, const std::string& stage) {
  if (r.cancelled()) {
    AbortCause cause = r.cancel_cause();
    r.complete(Status::Error(StatusCode::kCancelled, "request cancelled before stage '" + stage + "'",
                             cause == AbortCause::kNone ? AbortCause::kClientDisconnect : cause),
               now);
    return true;
  }
  if (r.expired(now)) {
    r.complete(Status::Error(StatusCode::kDeadlineExceeded, "request deadline passed before stage '" + stage + "'",
                             AbortCause::kTimeout),
               now);
    return true;
  }
  return false;
}

void fail_active(Batch& b, Nanos now, const std::string& stage, const std::string& what) {
  for (auto& r : b.requests) {
    if (r->done()) continue;
    r->complete(Status::Error(StatusCode::kInternal, "node '" + stage + "' failed: " + what, AbortCause::kFailure), now);
  }
}

// The requests a stage works on; inline for small batches so a hop does not allocate.
class Serviced {
 public:
  void push_back(Request* r) {
    if (size_ < kInline) inline_[size_] = r;
    else overflow_.push_back(r);
    ++size_;
  }
  bool empty() const { return size_ == 0; }
  template <class F>
  void for_each(F&& f) const {
    for (std::size_t i = 0; i < size_ && i < kInline; ++i) f(inline_[i]);
    for (Request* r : overflow_) f(r);
  }

 private:
  static constexpr std::size_t kInline = 4;
  std::size_t size_ = 0;
  std::array<Request*, kInline> inline_;
  std::vector<Request*> overflow_;
};

// Runs where a batch leaves the graph (after a leaf stage, on its thread: no extra hop). Once
// the batch has reached all its leaves every request must have been answered; anything else
// is a pipeline that forgot a request, answered here with an error.
void finish_at_leaf(Batch& b, Clock& clock, const std::string& pipeline) {
  if (b.pending_leaves.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
  bool forgotten = false;
  for (const auto& r : b.requests) forgotten |= !r->done();
  if (!forgotten) return;
  Nanos now = clock.now();
  for (auto& r : b.requests) {
    if (r->done() || retire_if_inactive(*r, now, "end")) continue;
    r->complete(Status::Error(StatusCode::kInternal, "pipeline '" + pipeline + "' ended without answering the request",
                              AbortCause::kFailure),
                now);
  }
}

}  // namespace

std::unique_ptr<Pipeline> Pipeline::build(const LoadedSpec& spec, const NodeRegistry& registry, Options options) {
  if (!options.metrics) throw std::invalid_argument("Pipeline::build needs a MetricsRegistry");
  {
    auto errors = validate_spec(spec, registry);
    if (!errors.empty()) throw SpecErrors(std::move(errors));
  }
  const PipelineSpec& p = spec.pipeline;
  std::unique_ptr<Pipeline> self(new Pipeline());
  self->name_ = p.name();
  self->clock_ = options.clock;
  self->metrics_ = options.metrics;
  for (const auto& c : p.runtime().classes()) self->class_names_.push_back(c.name());
  self->default_class_ = self->class_index(p.runtime().default_class());
  self->default_deadline_ = duration_nanos(p.runtime().default_deadline());
  self->drain_timeout_ = duration_nanos(p.runtime().drain_timeout());
  self->max_in_flight_ = p.runtime().max_in_flight();
  self->impl_ = std::make_unique<Impl>();
  self->live_ = std::make_unique<LiveList[]>(metric_slot_count());
  {
    Pipeline* raw = self.get();
    options.metrics->gauge_fn("sluice_live_list_entries",
                              "Request envelopes held by the intake threads' live lists: in flight, or completed and not yet pruned",
                              {{"pipeline", self->name_}}, [raw] { return static_cast<double>(raw->live_list_entries()); });
  }
  self->lifecycle_ = std::make_unique<Lifecycle>(*self);
  Impl& impl = *self->impl_;
  Pipeline* pipeline = self.get();
  Clock* clock = options.clock;
  MetricsRegistry* metrics = options.metrics;
  if (p.runtime().threads() > 0) {
    impl.threads = std::make_unique<tbb::global_control>(tbb::global_control::max_allowed_parallelism, p.runtime().threads());
  }

  // Leaves below each name: how many times a batch from there reaches the final stage.
  std::map<std::string, std::vector<std::string>> successors;
  std::map<std::string, int> fan_in;
  std::map<std::string, std::vector<std::string>> predecessors;
  for (const auto& e : p.edges()) {
    successors[e.from()].push_back(e.to());
    predecessors[e.to()].push_back(e.from());
    fan_in[e.to()]++;
  }
  // Joins: a branch reaching a join counts once per join, not once per branch.
  std::function<int(const std::string&, std::set<std::string>&)> leaves_dedup =
      [&](const std::string& n, std::set<std::string>& seen_joins) -> int {
    if (successors[n].empty()) return 1;
    int total = 0;
    for (const auto& s : successors[n]) {
      if (fan_in[s] > 1) {
        if (!seen_joins.insert(s).second) continue;
      }
      total += leaves_dedup(s, seen_joins);
    }
    return total;
  };
  for (const auto& s : p.sources()) {
    std::set<std::string> seen;
    impl.leaves_below[s.name()] = leaves_dedup(s.name(), seen);
  }
  for (const auto& n : p.nodes()) {
    std::set<std::string> seen;
    impl.leaves_below[n.name()] = leaves_dedup(n.name(), seen);
  }

  // ---- sources
  for (const auto& s : p.sources()) {
    auto* entry = new flow::broadcast_node<Hop>(impl.graph);
    impl.owned.emplace_back(entry);
    impl.entries[s.name()] = entry;
    impl.out[s.name()] = entry;
  }

  // ---- nodes
  std::vector<SpecError> build_errors;
  for (int i = 0; i < p.nodes_size(); ++i) {
    const NodeSpec& ns = p.nodes(i);
    const NodeKind* kind = registry.find(ns.kind());
    auto stage = std::make_unique<Stage>();
    stage->name = ns.name();
    stage->index = static_cast<std::uint16_t>(i);
    stage->leaf = successors[ns.name()].empty();
    stage->pipeline = p.name();
    Labels l{{"stage", ns.name()}};
    stage->queue_time = &metrics->histogram("sluice_request_queue_time_seconds", "Time a request waited before a stage", l);
    stage->service_time = &metrics->histogram("sluice_stage_service_time_seconds", "Time a stage spent on a request's batch", l);
    stage->failures = &metrics->counter("sluice_stage_failures_total", "Batches on which a stage threw", l);
    NodeContext ctx;
    ctx.name = ns.name();
    ctx.pipeline_name = p.name();
    ctx.clock = clock;
    ctx.metrics = metrics;
    ctx.base_dir = spec.base_dir;
    int below = impl.leaves_below[ns.name()];
    ctx.make_batch = [pipeline, below] {
      auto b = std::make_shared<Batch>();
      b->id = pipeline->next_batch_id_.fetch_add(1, std::memory_order_relaxed);
      b->pending_leaves.store(below, std::memory_order_relaxed);
      return b;
    };
    ctx.class_names = self->class_names_;
    ctx.install_admission = [&impl, &predecessors, pipeline, node = ns.name()](AdmissionController* controller) {
      // Every source upstream of the node consults the controller at intake.
      std::set<std::string> seen;
      std::vector<std::string> pending{node};
      while (!pending.empty()) {
        std::string n = pending.back();
        pending.pop_back();
        if (!seen.insert(n).second) continue;
        if (impl.entries.count(n)) {
          AdmissionController*& slot = impl.admission[n];
          if (slot && slot != controller) {
            throw std::invalid_argument("source '" + n +
                                        "' already feeds another admission node; a request may pass one priority_router");
          }
          slot = controller;
        }
        for (const auto& from : predecessors[n]) pending.push_back(from);
      }
      auto& list = pipeline->controllers_;
      if (std::find(list.begin(), list.end(), controller) == list.end()) list.push_back(controller);
    };
    try {
      stage->node = kind->factory(ns, ctx);
      if (!stage->node) throw std::invalid_argument("the factory made no node");
      if (kind->async != (dynamic_cast<AsyncNode*>(stage->node.get()) != nullptr)) {
        throw std::logic_error("kind '" + ns.kind() + "' is registered with the wrong shape (async flag)");
      }
    } catch (const std::exception& e) {
      build_errors.push_back(spec.error_at("nodes[" + std::to_string(i) + "].config", ns.name(), e.what()));
      continue;
    }
    self->stage_names_.push_back(ns.name());
    stage->sync = dynamic_cast<SyncNode*>(stage->node.get());
    stage->async = dynamic_cast<AsyncNode*>(stage->node.get());
    stage->concurrency = ns.concurrency() == 0 ? std::size_t(flow::unlimited) : ns.concurrency();
    impl.stages.push_back(std::move(stage));
  }
  if (!build_errors.empty()) throw SpecErrors(std::move(build_errors));

  // ---- chains. A synchronous stage of unlimited concurrency whose only input is a stage of
  // the same sort with no other output runs in its predecessor's tbb node, right after it:
  // the hand-off between them would cost a task (and a queue) and buy nothing, since neither
  // limits its concurrency. Every stage is still stamped and measured on its own; the queue
  // time inside a chain is zero because there is no queue. runtime.chain_stages: false gives
  // every stage its own tbb node.
  std::map<std::string, Stage*> by_name;
  for (auto& st : impl.stages) by_name[st->name] = st.get();
  auto chainable = [](const Stage* st) { return st->sync && st->concurrency == std::size_t(flow::unlimited); };
  auto continues_chain = [&](const Stage* st) {
    if (!p.runtime().chain_stages() || !chainable(st) || fan_in[st->name] != 1) return false;
    const std::string& from = predecessors[st->name].front();
    auto it = by_name.find(from);
    return it != by_name.end() && chainable(it->second) && successors[from].size() == 1;
  };
  std::vector<std::vector<Stage*>> units;  // each becomes one tbb node: a chain, or one stage
  std::set<std::string> chained;           // members after the first of a chain
  for (auto& st : impl.stages) {
    if (continues_chain(st.get())) continue;  // collected from the head of its chain
    std::vector<Stage*> unit{st.get()};
    for (;;) {
      const auto& next = successors[unit.back()->name];
      if (next.size() != 1) break;
      auto it = by_name.find(next.front());
      if (it == by_name.end() || !continues_chain(it->second)) break;
      unit.push_back(it->second);
      chained.insert(it->second->name);
    }
    units.push_back(std::move(unit));
  }

  // ---- tbb nodes
  Lifecycle* lc = self->lifecycle_.get();
  // Runs before a stage's work, in one pass over the batch: completes requests that must not
  // get more work (cancelled: kCancelled; past deadline: 504), stamps the rest (the finish
  // time follows in `end`) and, when `count` (the first stage of a tbb node), counts them as
  // in service. Returns them; empty means the stage has nothing to do.
  auto begin = [lc](const Stage& st, Batch& b, Nanos ready_at, Nanos start, bool count) {
    Serviced serviced;
    for (auto& r : b.requests) {
      if (r->done() || retire_if_inactive(*r, start, st.name)) continue;
      st.queue_time->observe(nanos_to_seconds(start - ready_at));
      if (count) lc->of(*r).in_service.add(1);
      r->trace().start(st.index, ready_at, start);
      serviced.push_back(r.get());
    }
    return serviced;
  };
  auto end = [](const Stage& st, const Serviced& serviced, Nanos start, Nanos finish) {
    double service = nanos_to_seconds(finish - start);
    serviced.for_each([&](Request* r) {
      r->trace().finish(st.index, finish);
      st.service_time->observe(service);
    });
  };
  // A request is in service from the first stage of a tbb node to the end of its last.
  auto leave_service = [lc](const Serviced& serviced) {
    serviced.for_each([&](Request* r) { lc->of(*r).in_service.add(-1); });
  };

  for (const std::vector<Stage*>& unit : units) {
    Stage* head = unit.front();
    Stage* tail = unit.back();
    flow::receiver<Hop>* input = nullptr;
    flow::sender<Hop>* output = nullptr;
    if (head->sync) {
      auto* fn = new flow::function_node<Hop, Hop>(impl.graph, head->concurrency, [clock, unit, begin, end, leave_service](Hop h) {
        SLUICE_HANDOFF_ACQUIRE(h.batch.get());
        Batch& b = *h.batch;
        Nanos ready_at = h.ready_at;
        Nanos start = clock->now();
        Nanos finish = start;
        Serviced in_service;
        for (Stage* st : unit) {
          bool first = st == unit.front();
          auto serviced = begin(*st, b, ready_at, start, first);
          if (first) in_service = serviced;
          if (!serviced.empty()) {
            try {
              st->sync->process(b);
            } catch (const std::exception& e) {
              st->failures->inc();
              fail_active(b, clock->now(), st->name, e.what());
            }
          }
          finish = clock->now();
          end(*st, serviced, start, finish);
          ready_at = start = finish;  // the next stage of a chain starts at once
        }
        leave_service(in_service);
        Stage* last = unit.back();
        if (last->leaf) {
          finish_at_leaf(b, *clock, last->pipeline);
          return Hop{};  // no successors
        }
        SLUICE_HANDOFF_RELEASE(h.batch.get());
        return Hop{std::move(h.batch), finish};
      });
      impl.owned.emplace_back(fn);
      input = fn;
      output = fn;
    } else {
      Stage* st = head;
      using AsyncFlowNode = flow::async_node<Hop, Hop>;
      auto* an = new AsyncFlowNode(
          impl.graph, st->concurrency, [clock, st, begin, end, leave_service](Hop h, AsyncFlowNode::gateway_type& gw) {
            SLUICE_HANDOFF_ACQUIRE(h.batch.get());
            Batch& b = *h.batch;
            Nanos start = clock->now();
            auto serviced = std::make_shared<Serviced>(begin(*st, b, h.ready_at, start, true));
            gw.reserve_wait();
            auto done = [clock, st, end, leave_service, serviced, start, gw = &gw](BatchPtr out) {
              Nanos finish = clock->now();
              end(*st, *serviced, start, finish);
              leave_service(*serviced);
              if (out && st->leaf) {
                finish_at_leaf(*out, *clock, st->pipeline);
              } else if (out) {
                SLUICE_HANDOFF_RELEASE(out.get());
                gw->try_put(Hop{std::move(out), finish});
              }  // null: absorbed (e.g. merged by a batcher)
              gw->release_wait();
            };
            if (serviced->empty()) {
              done(std::move(h.batch));
              return;
            }
            try {
              st->async->start_batch(h.batch, done);
            } catch (const std::exception& e) {
              st->failures->inc();
              fail_active(b, clock->now(), st->name, e.what());
              done(std::move(h.batch));
            }
          });
      impl.owned.emplace_back(an);
      input = an;
      // Successors attach to the output port: async_node's own sender interface refuses
      // register_successor (silently, in release builds), which would drop every hop.
      output = &flow::output_port<0>(*an);
    }
    impl.out[tail->name] = output;

    // Fan-in: a key-matching join on the batch id in front of the unit.
    int k = fan_in[head->name];
    auto key = [](const Hop& h) -> std::uint64_t { return h.batch->id; };
    auto merge = [](auto&&... hops) { return Hop{std::get<0>(std::forward_as_tuple(hops...)).batch, std::max({hops.ready_at...})}; };
    auto add_join = [&](auto* join) {
      impl.owned.emplace_back(join);
      using JoinOut = typename std::remove_pointer_t<decltype(join)>::output_type;
      auto* unpack = new flow::function_node<JoinOut, Hop, flow::lightweight>(
          impl.graph, flow::unlimited, [merge](const JoinOut& t) { return std::apply(merge, t); });
      impl.owned.emplace_back(unpack);
      flow::make_edge(*join, *unpack);
      flow::make_edge(*unpack, *input);
      return join;
    };
    if (k <= 1) {
      impl.in[head->name] = {input};
    } else if (k == 2) {
      auto* j = add_join(new flow::join_node<std::tuple<Hop, Hop>, flow::key_matching<std::uint64_t>>(impl.graph, key, key));
      impl.in[head->name] = {&flow::input_port<0>(*j), &flow::input_port<1>(*j)};
    } else if (k == 3) {
      auto* j = add_join(new flow::join_node<std::tuple<Hop, Hop, Hop>, flow::key_matching<std::uint64_t>>(impl.graph, key, key, key));
      impl.in[head->name] = {&flow::input_port<0>(*j), &flow::input_port<1>(*j), &flow::input_port<2>(*j)};
    } else {
      auto* j = add_join(new flow::join_node<std::tuple<Hop, Hop, Hop, Hop>, flow::key_matching<std::uint64_t>>(
          impl.graph, key, key, key, key));
      impl.in[head->name] = {&flow::input_port<0>(*j), &flow::input_port<1>(*j), &flow::input_port<2>(*j),
                             &flow::input_port<3>(*j)};
    }
  }

  // ---- edges (leaves finish their batches themselves: finish_at_leaf; edges inside a chain
  // are the chain's own order)
  std::map<std::string, std::size_t> next_port;
  for (const auto& e : p.edges()) {
    if (chained.count(e.to())) continue;
    flow::make_edge(*impl.out.at(e.from()), *impl.in.at(e.to()).at(next_port[e.to()]++));
  }
  return self;
}

Pipeline::~Pipeline() {
  if (impl_ && started_.load() && !draining_.load()) drain(0);
  impl_.reset();
}

void Pipeline::start() {
  for (auto& s : impl_->stages) s->node->start();
  started_.store(true, std::memory_order_release);
}

int Pipeline::class_index(std::string_view name) const {
  for (std::size_t i = 0; i < class_names_.size(); ++i) {
    if (class_names_[i] == name) return static_cast<int>(i);
  }
  return -1;
}

std::string Pipeline::admission_detail() const {
  std::string out = "{";
  for (const auto& [source, controller] : impl_->admission) {
    if (out.size() > 1) out += ",";
    out += "\"" + source + "\":" + controller->readiness_detail();
  }
  return out + "}";
}

AdmissionController* Pipeline::admission(const std::string& source) const {
  auto it = impl_->admission.find(source);
  return it == impl_->admission.end() ? nullptr : it->second;
}

std::vector<std::shared_ptr<DocumentStore>> Pipeline::document_stores() const {
  std::vector<std::shared_ptr<DocumentStore>> out;
  for (const auto& s : impl_->stages) {
    auto store = s->node->document_store();
    if (store && std::find(out.begin(), out.end(), store) == out.end()) out.push_back(std::move(store));
  }
  return out;
}

bool Pipeline::ready() const {
  if (!started_.load(std::memory_order_acquire) || draining()) return false;
  for (const auto& s : impl_->stages) {
    if (!s->node->ready()) return false;
  }
  return true;
}

Status Pipeline::submit(const std::string& source, const RequestPtr& request) {
  Nanos now = clock_->now();
  if (request->arrival == 0) request->arrival = now;
  if (request->deadline == kNoDeadline) request->deadline = request->arrival + default_deadline_;
  if (request->priority >= class_names_.size()) request->priority = static_cast<std::uint8_t>(default_class_);
  auto entry = impl_->entries.find(source);
  Status status;
  if (entry == impl_->entries.end()) {
    status = Status::Error(StatusCode::kInternal, "pipeline '" + name_ + "' has no source '" + source + "'");
  } else if (!started_.load(std::memory_order_acquire) || draining()) {
    status = Status::Error(StatusCode::kUnavailable, "pipeline '" + name_ + "' is " + (draining() ? "draining" : "not started"),
                           AbortCause::kShutdown);
  } else if (in_flight_.fetch_add(1, std::memory_order_acq_rel) >= max_in_flight_) {
    in_flight_.fetch_sub(1, std::memory_order_acq_rel);
    status = Status::Error(StatusCode::kOverloaded,
                           "pipeline '" + name_ + "' has " + std::to_string(max_in_flight_) + " requests in flight (runtime.max_in_flight)",
                           AbortCause::kShed);
    status.retry_after_seconds = 1;
  } else if (!impl_->admission.empty()) {
    // Intake-time admission: decided and its place reserved before any stage runs.
    if (auto a = impl_->admission.find(source); a != impl_->admission.end()) {
      status = a->second->admit(request, source, now);
      if (!status.ok()) in_flight_.fetch_sub(1, std::memory_order_acq_rel);
    }
  }
  if (!status.ok()) {
    // Not admitted: completed here, without the lifecycle (it never counted as in flight).
    request->complete(status, now);
    Lifecycle::outcome(lifecycle_->of(*request), status.code).inc();
    return status;
  }
  request->set_lifecycle(lifecycle_.get());
  lifecycle_->of(*request).in_flight.add(1);
  {
    LiveList& list = live_[metric_slot().index];
    std::lock_guard lock(list.mu);
    prune(list, kPrunePerSubmit);
    list.requests.push_back(request);
  }
  auto batch = std::make_shared<Batch>();
  batch->id = next_batch_id_.fetch_add(1, std::memory_order_relaxed);
  batch->requests.push_back(request);
  batch->pending_leaves.store(impl_->leaves_below[source], std::memory_order_relaxed);
  SLUICE_HANDOFF_RELEASE(batch.get());
  entry->second->try_put(Hop{std::move(batch), now});
  return Status::Ok();
}

void Pipeline::prune(LiveList& list, std::size_t checks) {
  auto& v = list.requests;
  for (std::size_t i = 0; i < checks && !v.empty(); ++i) {
    if (list.cursor >= v.size()) list.cursor = 0;
    if (v[list.cursor]->done()) {
      std::swap(v[list.cursor], v.back());
      v.pop_back();  // the last reference when the graph is done with it too
    } else {
      ++list.cursor;
    }
  }
}

std::size_t Pipeline::live_list_entries() const {
  std::size_t total = 0;
  for (std::size_t i = 0; i < metric_slot_count(); ++i) {
    std::lock_guard lock(live_[i].mu);
    total += live_[i].requests.size();
  }
  return total;
}

void Pipeline::on_request_complete(Request& request) {
  if (in_flight_.fetch_sub(1, std::memory_order_acq_rel) == 1 && draining()) {
    std::lock_guard lock(drain_mu_);
    drained_cv_.notify_all();
  }
}

DrainReport Pipeline::drain() { return drain(drain_timeout_); }

DrainReport Pipeline::drain(Nanos timeout) {
  DrainReport report;
  auto t0 = std::chrono::steady_clock::now();
  std::size_t before = in_flight();
  draining_.store(true, std::memory_order_release);
  {
    std::unique_lock lock(drain_mu_);
    drained_cv_.wait_for(lock, std::chrono::nanoseconds(timeout), [this] { return in_flight() == 0; });
  }
  std::vector<RequestPtr> remaining;
  for (std::size_t i = 0; i < metric_slot_count(); ++i) {
    LiveList& list = live_[i];
    std::lock_guard lock(list.mu);
    for (const auto& r : list.requests) {
      if (!r->done()) remaining.push_back(r);
    }
    list.requests.clear();  // drain is the end: nothing is submitted after it
    list.cursor = 0;
  }
  Nanos now = clock_->now();
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
  for (auto& s : impl_->stages) s->node->stop();
  impl_->graph.wait_for_all();
  report.waited = std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - t0).count();
  return report;
}

}  // namespace sluice
