#include "graph/units.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <limits>

namespace sluice {
namespace {

bool parse_number(std::string_view s, std::size_t* pos, double* out) {
  std::size_t start = *pos;
  while (*pos < s.size() && (std::isdigit(static_cast<unsigned char>(s[*pos])) || s[*pos] == '.')) ++*pos;
  if (*pos == start) return false;
  auto r = std::from_chars(s.data() + start, s.data() + *pos, *out);
  return r.ec == std::errc() && r.ptr == s.data() + *pos;
}

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

}  // namespace

std::optional<std::int64_t> parse_duration(std::string_view text, std::string* error) {
  std::string_view s = trim(text);
  if (s.empty()) {
    *error = "a duration cannot be empty; write e.g. \"250ms\" or \"30s\"";
    return std::nullopt;
  }
  if (s == "0") return 0;
  if (s.front() == '-') {
    *error = "duration \"" + std::string(text) + "\" is negative";
    return std::nullopt;
  }
  double total = 0;
  std::size_t pos = 0;
  while (pos < s.size()) {
    double value = 0;
    if (!parse_number(s, &pos, &value)) {
      *error = "\"" + std::string(text) + "\" is not a duration; write a number with a unit, e.g. \"250ms\", \"1.5s\", \"2m\"";
      return std::nullopt;
    }
    while (pos < s.size() && s[pos] == ' ') ++pos;
    std::size_t unit_start = pos;
    while (pos < s.size() && !std::isdigit(static_cast<unsigned char>(s[pos])) && s[pos] != '.') ++pos;
    std::string_view unit = s.substr(unit_start, pos - unit_start);
    double scale;
    if (unit == "ns") scale = 1;
    else if (unit == "us" || unit == "\xC2\xB5s") scale = 1e3;
    else if (unit == "ms") scale = 1e6;
    else if (unit == "s") scale = 1e9;
    else if (unit == "m") scale = 60e9;
    else if (unit == "h") scale = 3600e9;
    else {
      *error = unit.empty()
                   ? "duration \"" + std::string(text) + "\" needs a unit (ns, us, ms, s, m, h), e.g. \"" + std::string(text) + "ms\""
                   : "\"" + std::string(unit) + "\" in \"" + std::string(text) + "\" is not a duration unit (ns, us, ms, s, m, h)";
      return std::nullopt;
    }
    total += value * scale;
  }
  // 2^63 itself is too long: it is the double nearest INT64_MAX, and llround would overflow.
  if (total >= 9223372036854775808.0) {
    *error = "duration \"" + std::string(text) + "\" is too long";
    return std::nullopt;
  }
  return static_cast<std::int64_t>(std::llround(total));
}

std::optional<std::uint64_t> parse_size(std::string_view text, std::string* error) {
  std::string_view s = trim(text);
  std::size_t pos = 0;
  double value = 0;
  if (s.empty() || s.front() == '-' || !parse_number(s, &pos, &value)) {
    *error = "\"" + std::string(text) + "\" is not a size; write bytes or a number with a unit, e.g. \"64KiB\", \"1MB\"";
    return std::nullopt;
  }
  std::string_view unit = trim(s.substr(pos));
  double scale;
  if (unit.empty() || unit == "B") scale = 1;
  else if (unit == "KB" || unit == "kB") scale = 1e3;
  else if (unit == "MB") scale = 1e6;
  else if (unit == "GB") scale = 1e9;
  else if (unit == "KiB") scale = 1024.0;
  else if (unit == "MiB") scale = 1024.0 * 1024;
  else if (unit == "GiB") scale = 1024.0 * 1024 * 1024;
  else {
    *error = "\"" + std::string(unit) + "\" in \"" + std::string(text) + "\" is not a size unit (B, KB, MB, GB, KiB, MiB, GiB)";
    return std::nullopt;
  }
  double bytes = value * scale;
  if (bytes > 1.8e19) {
    *error = "size \"" + std::string(text) + "\" is too large";
    return std::nullopt;
  }
  if (bytes != std::floor(bytes)) {
    *error = "size \"" + std::string(text) + "\" is not a whole number of bytes";
    return std::nullopt;
  }
  return static_cast<std::uint64_t>(bytes);
}

std::string format_duration(std::int64_t nanos) {
  struct Unit { std::int64_t scale; const char* name; };
  static const Unit units[] = {{3600'000'000'000LL, "h"}, {60'000'000'000LL, "m"}, {1'000'000'000, "s"},
                               {1'000'000, "ms"}, {1'000, "us"}, {1, "ns"}};
  if (nanos == 0) return "0s";
  for (const Unit& u : units) {
    if (nanos % u.scale == 0) return std::to_string(nanos / u.scale) + u.name;
  }
  return std::to_string(nanos) + "ns";
}

std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> prev(b.size() + 1), cur(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) prev[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    cur[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      std::size_t sub = prev[j - 1] + (std::tolower(a[i - 1]) == std::tolower(b[j - 1]) ? 0 : 1);
      cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, sub});
    }
    std::swap(prev, cur);
  }
  return prev[b.size()];
}

std::string did_you_mean(std::string_view word, const std::vector<std::string>& candidates) {
  std::string best;
  std::size_t best_d = std::numeric_limits<std::size_t>::max();
  for (const auto& c : candidates) {
    std::size_t d = edit_distance(word, c);
    if (d < best_d) {
      best_d = d;
      best = c;
    }
  }
  std::size_t limit = std::max<std::size_t>(2, word.size() / 3);
  return best_d <= limit ? best : std::string();
}

bool parse_host_port(std::string_view text, std::string* host, std::uint16_t* port, std::string* error) {
  const std::size_t colon = text.rfind(':');
  if (colon == std::string_view::npos) {
    *error = "address '" + std::string(text) + "' has no ':port'";
    return false;
  }
  std::string_view h = text.substr(0, colon);
  const std::string_view p = text.substr(colon + 1);
  if (h.size() >= 2 && h.front() == '[' && h.back() == ']') h = h.substr(1, h.size() - 2);
  unsigned value = 0;
  const auto parsed = std::from_chars(p.data(), p.data() + p.size(), value);
  if (p.empty() || parsed.ec != std::errc() || parsed.ptr != p.data() + p.size() || value > 65535) {
    *error = "address '" + std::string(text) + "': port '" + std::string(p) + "' is not a number from 0 to 65535";
    return false;
  }
  *host = h.empty() ? "0.0.0.0" : std::string(h);
  *port = static_cast<std::uint16_t>(value);
  return true;
}

}  // namespace sluice
