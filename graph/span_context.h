// SpanContext: a request's place in a distributed trace (W3C Trace Context), and the
// traceparent header that carries it ("00-<32 hex trace id>-<16 hex span id>-<2 hex flags>").
//
// Contract:
//  - parse_traceparent() accepts exactly the version-00 form in lower-case hex with a trace id
//    and span id that are not all zero (version ff is invalid), else nullopt;
//  - child_of(parent) keeps the parent's trace id and sampled flag and draws a new span id;
//    with no parent, root() draws a new trace id too;
//  - ids come from a per-thread generator seeded from the OS's random source: unique with
//    overwhelming probability, never zero, not secret (they travel in headers anyway).
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace sluice {

struct SpanContext {
  std::array<std::uint8_t, 16> trace_id{};
  std::array<std::uint8_t, 8> span_id{};
  std::array<std::uint8_t, 8> parent_span_id{};  // zero: a root span (no incoming traceparent)
  bool sampled = false;                           // trace-flags bit 0

  bool valid() const;  // a trace id is set
  bool has_parent() const;
  // "00-<trace id>-<span id>-<flags>": what this span's children are told.
  std::string traceparent() const;
  std::string trace_id_hex() const;
  std::string span_id_hex() const;

  static SpanContext root(bool sampled);
  // A new span under `parent` (parsed from a traceparent: its span id is the parent span).
  static SpanContext child_of(const SpanContext& parent);
};

// The incoming header's context (its span id is the caller's span, the parent of ours).
std::optional<SpanContext> parse_traceparent(std::string_view header);

// A random draw in [0, 1) from the same per-thread generator (head sampling).
double random_unit();

}  // namespace sluice
