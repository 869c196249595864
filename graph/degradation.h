// Degradation: what a stage did for a request whose latency budget could not cover the stage
// in full (graph/stage_budget.h decides; the trace records it per stage; the node reads it).
//  - kSkip: the stage did nothing for the request; the stages after it make do.
//  - kShrink: the stage did less for it (e.g. generated fewer tokens).
#pragma once

#include <cstdint>
#include <string_view>

namespace sluice {

enum class Degradation : std::uint8_t { kNone = 0, kSkip = 1, kShrink = 2 };

inline std::string_view degradation_name(Degradation d) {
  switch (d) {
    case Degradation::kSkip: return "skip";
    case Degradation::kShrink: return "shrink";
    case Degradation::kNone: break;
  }
  return "none";
}

}  // namespace sluice
