// `passthrough`: hands every batch on unchanged. For wiring fan-outs and joins, and for
// measuring the runtime's own per-hop cost (bench/graph). Thread-safe; no state.
#pragma once

#include "graph/node.h"

namespace sluice {

class PassthroughNode final : public SyncNode {
 public:
  void process(Batch&) override {}
};

}  // namespace sluice
