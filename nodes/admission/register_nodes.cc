// Registers the admission and batching node kinds: `priority_router`, `dynamic_batcher` and
// the `service_curve` benchmark harness.
#include "graph/node_registry.h"
#include "nodes/admission/dynamic_batcher.h"
#include "nodes/admission/priority_router.h"
#include "nodes/admission/service_curve.h"

namespace sluice {

void register_admission_nodes(NodeRegistry& registry) {
  registry.add(NodeKind{
      .kind = "priority_router",
      .summary = "Intake-time admission (429 with Retry-After), bounded per-class queues, shedding ladder, priority scheduling.",
      .needs = {"request"},
      .adds = {},
      .async = true,
      .factory = [](const NodeSpec& spec, const NodeContext& ctx) {
        return std::make_unique<PriorityRouter>(spec.priority_router(), ctx);
      },
  });
  registry.add(NodeKind{
      .kind = "dynamic_batcher",
      .summary = "Per-class batches for a batch-capable stage: window, size caps, adaptive and deadline-aware flush.",
      .needs = {"request"},
      .adds = {},
      .async = true,
      .factory = [](const NodeSpec& spec, const NodeContext& ctx) {
        return std::make_unique<DynamicBatcher>(spec.dynamic_batcher(), ctx);
      },
  });
  registry.add(NodeKind{
      .kind = "service_curve",
      .summary = "Benchmark harness, not a model: serves a batch in base_time*(1+batch_cost*log2 b) and answers.",
      .needs = {"request"},
      .adds = {"answer"},
      .async = true,
      .factory = [](const NodeSpec& spec, const NodeContext& ctx) {
        return std::make_unique<ServiceCurveHarness>(spec.service_curve(), ctx);
      },
  });
  registry.set_degradations("service_curve", "",
                            "answers after factor times the batch's time (a shorter generation leaving a continuous batch early)");
}

}  // namespace sluice
