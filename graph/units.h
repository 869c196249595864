// Parsing of the unit-bearing scalars of pipeline files: durations ("250ms", "1.5s"), sizes
// ("64KiB", "1MB", "4096") and listen addresses ("127.0.0.1:8080", "[::1]:0"), plus
// did-you-mean suggestions for misspelt names. The validator and the components that use a
// value parse it with the same function, so `sluice validate` refuses what `sluice run` would.
// Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace sluice {

// Nanoseconds, or nullopt with `error` set to a plain sentence. Units: ns, us (µs), ms, s, m, h;
// combinations like "1m30s" are accepted; "0" alone is zero. Negative durations are refused.
std::optional<std::int64_t> parse_duration(std::string_view text, std::string* error);
// Bytes, or nullopt with `error`. Units: B, KB, MB, GB (powers of 1000), KiB, MiB, GiB (1024).
std::optional<std::uint64_t> parse_size(std::string_view text, std::string* error);
// "host:port" -> host ("0.0.0.0" when empty; an IPv6 literal without its brackets) and port
// (0-65535; 0 picks a free one), or false with `error` set to a plain sentence.
bool parse_host_port(std::string_view text, std::string* host, std::uint16_t* port, std::string* error);
// "250ms", "1.5s": the shortest exact rendering, for docs and `sluice validate` output.
std::string format_duration(std::int64_t nanos);

// The closest candidate within a small edit distance, or empty.
std::string did_you_mean(std::string_view word, const std::vector<std::string>& candidates);
std::size_t edit_distance(std::string_view a, std::string_view b);

}  // namespace sluice
