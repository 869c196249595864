#include "inference/generation.h"

namespace sluice::inference {

const char* finish_reason_name(FinishReason reason) {
  switch (reason) {
    case FinishReason::kStop: return "stop";
    case FinishReason::kLength: return "length";
    case FinishReason::kCancelled: return "cancelled";
    case FinishReason::kShutdown: return "shutdown";
    case FinishReason::kError: return "error";
  }
  return "?";
}

}  // namespace sluice::inference
