#include "graph/kafka_properties.h"

#include <array>
#include <string_view>

namespace sluice {

std::optional<std::string> kafka_property_problem(const std::string& entry) {
  const auto eq = entry.find('=');
  if (eq == std::string::npos || eq == 0) {
    return "'" + entry + "' is not name=value (e.g. security.protocol=SASL_SSL)";
  }
  static constexpr std::array<std::string_view, 6> kSetBySluice = {
      "enable.auto.commit", "enable.auto.offset.store", "enable.idempotence", "acks", "bootstrap.servers", "group.id"};
  const std::string_view name(entry.data(), eq);
  for (std::string_view reserved : kSetBySluice) {
    if (name == reserved) {
      return "'" + std::string(name) + "' is set by Sluice (its guarantees depend on it); see docs/kafka.md";
    }
  }
  return std::nullopt;
}

}  // namespace sluice
