#include "graph/placeholders.h"

#include <algorithm>
#include <stdexcept>

namespace sluice {

Status fill_placeholders(std::string_view tmpl, std::initializer_list<Placeholder> values, std::string& out) {
  std::size_t pos = 0;
  while (pos < tmpl.size()) {
    const std::size_t open = tmpl.find("{{", pos);
    if (open == std::string_view::npos) break;
    const std::size_t close = tmpl.find("}}", open + 2);
    if (close == std::string_view::npos) {
      return Status::Error(StatusCode::kInvalidArgument, "'{{' at byte " + std::to_string(open) + " is never closed by '}}'");
    }
    const std::string_view name = tmpl.substr(open + 2, close - open - 2);
    const auto it = std::find_if(values.begin(), values.end(), [&](const Placeholder& p) { return p.name == name; });
    if (it == values.end()) {
      std::string known;
      for (const auto& p : values) known += (known.empty() ? "" : ", ") + ("{{" + std::string(p.name) + "}}");
      return Status::Error(StatusCode::kInvalidArgument, "unknown placeholder '{{" + std::string(name) + "}}' (" +
                                                             (known.empty() ? "none are allowed" : "allowed: " + known) + ")");
    }
    out.append(tmpl.substr(pos, open - pos));
    out.append(it->value);
    pos = close + 2;
  }
  out.append(tmpl.substr(pos));
  return Status::Ok();
}

void check_placeholders(std::string_view field, std::string_view tmpl, std::initializer_list<Placeholder> allowed,
                        std::initializer_list<std::string_view> required) {
  std::string scratch;
  if (Status filled = fill_placeholders(tmpl, allowed, scratch); !filled.ok()) {
    throw std::invalid_argument(std::string(field) + ": " + filled.message);
  }
  for (std::string_view name : required) {
    if (tmpl.find("{{" + std::string(name) + "}}") == std::string_view::npos) {
      throw std::invalid_argument(std::string(field) + ": must contain {{" + std::string(name) + "}}");
    }
  }
}

}  // namespace sluice
