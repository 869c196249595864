#include "graph/span_context.h"

#include <random>

namespace sluice {
namespace {

std::mt19937_64& generator() {
  thread_local std::mt19937_64 g([] {
    std::random_device device;  // the OS's random source
    return (static_cast<std::uint64_t>(device()) << 32) ^ device();
  }());
  return g;
}

template <std::size_t N>
void fill_random(std::array<std::uint8_t, N>& out) {
  do {
    for (std::size_t i = 0; i < N; i += 8) {
      std::uint64_t v = generator()();
      for (std::size_t j = 0; j < 8 && i + j < N; ++j) out[i + j] = static_cast<std::uint8_t>(v >> (8 * j));
    }
  } while (out == std::array<std::uint8_t, N>{});  // all-zero ids are invalid
}

template <std::size_t N>
std::string hex(const std::array<std::uint8_t, N>& bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out(2 * N, '0');
  for (std::size_t i = 0; i < N; ++i) {
    out[2 * i] = kDigits[bytes[i] >> 4];
    out[2 * i + 1] = kDigits[bytes[i] & 15];
  }
  return out;
}

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

template <std::size_t N>
bool unhex(std::string_view s, std::array<std::uint8_t, N>& out) {
  if (s.size() != 2 * N) return false;
  for (std::size_t i = 0; i < N; ++i) {
    const int hi = hex_digit(s[2 * i]), lo = hex_digit(s[2 * i + 1]);
    if (hi < 0 || lo < 0) return false;
    out[i] = static_cast<std::uint8_t>(hi << 4 | lo);
  }
  return true;
}

}  // namespace

bool SpanContext::valid() const { return trace_id != std::array<std::uint8_t, 16>{}; }
bool SpanContext::has_parent() const { return parent_span_id != std::array<std::uint8_t, 8>{}; }
std::string SpanContext::trace_id_hex() const { return hex(trace_id); }
std::string SpanContext::span_id_hex() const { return hex(span_id); }

std::string SpanContext::traceparent() const {
  return "00-" + hex(trace_id) + "-" + hex(span_id) + (sampled ? "-01" : "-00");
}

SpanContext SpanContext::root(bool sampled) {
  SpanContext c;
  fill_random(c.trace_id);
  fill_random(c.span_id);
  c.sampled = sampled;
  return c;
}

SpanContext SpanContext::child_of(const SpanContext& parent) {
  SpanContext c;
  c.trace_id = parent.trace_id;
  c.parent_span_id = parent.span_id;
  fill_random(c.span_id);
  c.sampled = parent.sampled;
  return c;
}

double random_unit() { return static_cast<double>(generator()() >> 11) * 0x1.0p-53; }

std::optional<SpanContext> parse_traceparent(std::string_view v) {
  if (v.size() != 55 || v[2] != '-' || v[35] != '-' || v[52] != '-') return std::nullopt;
  std::array<std::uint8_t, 1> version{}, flags{};
  SpanContext c;
  if (!unhex(v.substr(0, 2), version) || version[0] == 0xff) return std::nullopt;
  if (!unhex(v.substr(3, 32), c.trace_id) || !unhex(v.substr(36, 16), c.span_id) || !unhex(v.substr(53, 2), flags)) {
    return std::nullopt;
  }
  if (!c.valid() || c.span_id == std::array<std::uint8_t, 8>{}) return std::nullopt;
  c.sampled = flags[0] & 1;
  return c;
}

}  // namespace sluice
