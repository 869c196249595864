#include "graph/pipeline_flow.h"

#include <oneapi/tbb/info.h>

#include <exception>

#include "graph/flow_join.h"
#include "graph/tsan_annotations.h"

namespace sluice {

namespace flow = tbb::flow;

FlowGraph::FlowGraph(int threads) {
  const int slots = threads > 0 ? threads : tbb::info::default_concurrency();
  // max_allowed_parallelism counts an external thread plus the workers: `slots` workers.
  threads_ = std::make_unique<tbb::global_control>(tbb::global_control::max_allowed_parallelism,
                                                   static_cast<std::size_t>(slots) + 1);
  arena_ = std::make_unique<tbb::task_arena>(slots, /*reserved_for_masters=*/0);
  arena_->execute([this] { graph_ = std::make_unique<tbb::flow::graph>(); });
}

FlowGraph::~FlowGraph() { wait_for_all(); }

void FlowGraph::build(const PipelinePlan& plan, const std::vector<std::unique_ptr<Stage>>& stages, Clock& clock,
                      PipelineLifecycle& lifecycle) {
  std::map<std::string, Sender*> out;  // source or unit tail name -> where its batches leave
  for (const auto& s : plan.sources) {
    auto* entry = new Entry(*graph_);
    owned_.emplace_back(entry);
    entries_[s] = entry;
    out[s] = entry;
  }
  std::vector<std::vector<Receiver*>> in;  // by unit: one receiver per input edge
  for (const PipelinePlan::Unit& unit : plan.units) {
    std::vector<Stage*> chain;
    for (int i : unit.stages) chain.push_back(stages[static_cast<std::size_t>(i)].get());
    Ends ends = chain.front()->sync ? add_chain(chain, clock, lifecycle) : add_async(*chain.front(), clock, lifecycle);
    out[chain.back()->name] = ends.output;
    in.push_back(unit.fan_in <= 1 ? std::vector<Receiver*>{ends.input} : add_fan_in_join(*graph_, owned_, *ends.input, unit.fan_in));
  }
  for (const PipelinePlan::Link& link : plan.links) {
    flow::make_edge(*out.at(link.from), *in.at(static_cast<std::size_t>(link.unit)).at(static_cast<std::size_t>(link.port)));
  }
}

// A function_node running the chain's synchronous stages one after another on one task. Every
// stage is still stamped and measured on its own; inside a chain the queue time is zero.
FlowGraph::Ends FlowGraph::add_chain(const std::vector<Stage*>& chain, Clock& clock_ref, PipelineLifecycle& lifecycle) {
  Clock* clock = &clock_ref;
  PipelineLifecycle* lc = &lifecycle;
  char* quiescent = &quiescent_;
  auto* fn = new flow::function_node<Hop, Hop>(*graph_, chain.front()->concurrency, [clock, lc, chain, quiescent](Hop h) {
    name_graph_worker();
    SLUICE_HANDOFF_ACQUIRE(h.batch.get());
    Batch& b = *h.batch;
    Nanos ready_at = h.ready_at;
    Nanos start = clock->now();
    Nanos finish = start;
    Serviced in_service;
    for (Stage* st : chain) {
      bool first = st == chain.front();
      auto serviced = begin_stage(*lc, *st, b, ready_at, start, first);
      if (first) in_service = serviced;
      if (!serviced.empty() && !serviced.all_skipped()) {
        try {
          if (serviced.skipped == 0) st->sync->process(b);
          else st->sync->process(*without_skipped(b, st->index));
        } catch (const std::exception& e) {
          st->failures->inc();
          fail_active(b, clock->now(), st->name, e.what());
        }
      }
      finish = clock->now();
      end_stage(*st, serviced, start, finish);
      ready_at = start = finish;  // the next stage of a chain starts at once
    }
    leave_service(*lc, in_service);
    Stage* last = chain.back();
    if (last->leaf) {
      finish_at_leaf(b, *clock, last->pipeline);
      SLUICE_HANDOFF_RELEASE(quiescent);
      return Hop{};  // no successors
    }
    SLUICE_HANDOFF_RELEASE(h.batch.get());
    SLUICE_HANDOFF_RELEASE(quiescent);
    return Hop{std::move(h.batch), finish};
  });
  owned_.emplace_back(fn);
  return {fn, fn};
}

// An async_node handing the batch to the node's engine; the graph counts the work as
// outstanding (reserve_wait) until the engine calls `done`.
FlowGraph::Ends FlowGraph::add_async(Stage& stage, Clock& clock_ref, PipelineLifecycle& lifecycle) {
  Clock* clock = &clock_ref;
  PipelineLifecycle* lc = &lifecycle;
  Stage* st = &stage;
  char* quiescent = &quiescent_;
  using AsyncFlowNode = flow::async_node<Hop, Hop>;
  auto* an = new AsyncFlowNode(*graph_, st->concurrency, [clock, lc, st, quiescent](Hop h, AsyncFlowNode::gateway_type& gw) {
    name_graph_worker();
    SLUICE_HANDOFF_ACQUIRE(h.batch.get());
    Batch& b = *h.batch;
    Nanos start = clock->now();
    auto serviced = std::make_shared<Serviced>(begin_stage(*lc, *st, b, h.ready_at, start, true));
    gw.reserve_wait();
    auto done = [clock, lc, st, serviced, start, quiescent, gw = &gw](BatchPtr out) {
      Nanos finish = clock->now();
      end_stage(*st, *serviced, start, finish);
      leave_service(*lc, *serviced);
      if (out && st->leaf) {
        finish_at_leaf(*out, *clock, st->pipeline);
      } else if (out) {
        SLUICE_HANDOFF_RELEASE(out.get());
        gw->try_put(Hop{std::move(out), finish});
      }  // null: absorbed (e.g. merged by a batcher)
      SLUICE_HANDOFF_RELEASE(quiescent);
      gw->release_wait();
    };
    if (serviced->empty() || serviced->all_skipped()) {
      done(std::move(h.batch));
      return;
    }
    try {
      if (serviced->skipped == 0) {
        st->async->start_batch(h.batch, done);
      } else {
        // The node sees the requests that do not skip it; what it hands on is the whole batch.
        BatchPtr sub = without_skipped(b, st->index);
        Batch* part = sub.get();
        st->async->start_batch(std::move(sub), [done, whole = h.batch, part](BatchPtr out) {
          done(out.get() == part ? whole : std::move(out));
        });
      }
    } catch (const std::exception& e) {
      st->failures->inc();
      fail_active(b, clock->now(), st->name, e.what());
      done(std::move(h.batch));
    }
  });
  owned_.emplace_back(an);
  // Successors attach to the output port: async_node's own sender interface refuses
  // register_successor (silently, in release builds), which would drop every hop.
  return {an, &flow::output_port<0>(*an)};
}

}  // namespace sluice
