// A pipeline file's durations (google.protobuf.Duration fields of the schema) as Nanos: the one
// conversion every component uses.
#pragma once

#include <google/protobuf/duration.pb.h>

#include "graph/clock.h"

namespace sluice {

inline Nanos duration_nanos(const google::protobuf::Duration& d) {
  return static_cast<Nanos>(d.seconds()) * kNanosPerSecond + d.nanos();
}

// The field's value, or `fallback` when it is not set (a config built in code; files always
// carry the schema's defaults).
inline Nanos duration_or(bool set, const google::protobuf::Duration& d, Nanos fallback) {
  return set ? duration_nanos(d) : fallback;
}

}  // namespace sluice
