// Weights read from a memory-mapped model file, laid out for a kernel backend: the one way
// both model loaders (LlamaModel, UseLiteModel) do it. kernels::prepare_matmul_weights copies
// the matrices it re-lays (interleaved Q8_0/Q4_0, F32 row panels) and repoints their views; the
// file pages those copies came from are then dropped from the process (they are read back from
// the page cache if ever touched), so the weights are in memory once, not twice.
#pragma once

#include <memory>
#include <vector>

#include "kernels/backend_factory.h"

namespace sluice::inference {

// Returns what holds the copies (null when nothing changed); it must outlive every use of the views.
std::unique_ptr<kernels::PreparedWeights> prepare_mapped_weights(kernels::BackendKind backend,
                                                                 const std::vector<kernels::MatrixView*>& views);

}  // namespace sluice::inference
